/*
 * client/stub/hoctl_plan_stub.c - stands in for hoctl_plan.c (the offline
 * planning nouns, written with the planner) until that file exists; CMake
 * compiles it only then.  Each noun reports that it is not built.
 */
#include <stdio.h>

#include "hoctl.h"

static int not_built(const char *noun)
{
    fprintf(stderr, "hoctl: '%s' is not available in this build\n", noun);
    return HOCTL_EXIT_FAILED;
}

int hoctl_cmd_trace(const hoctl_globals *g, int argc, char **argv)
{
    (void)g, (void)argc, (void)argv;
    return not_built("trace");
}

int hoctl_cmd_schedule(const hoctl_globals *g, int argc, char **argv)
{
    (void)g, (void)argc, (void)argv;
    return not_built("schedule");
}

int hoctl_cmd_plan(const hoctl_globals *g, int argc, char **argv)
{
    (void)g, (void)argc, (void)argv;
    return not_built("plan");
}
