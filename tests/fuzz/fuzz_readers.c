/*
 * tests/fuzz/fuzz_readers.c - libFuzzer target: the planner's readers.
 * The first byte picks the reader, the rest is its input:
 *   0 trace JSON          (then summarised)
 *   1 schedule JSON       (then bound to a small fixed trace and judged
 *                          by plan_simulate: fuzzed schedules reach the
 *                          execution model)
 *   2 trace protobuf      3 schedule protobuf (bound and judged as 1)
 *   4 node JSON (NODE.md §1)      5 workload JSON (NODE.md §2)
 * Crashes, leaks and undefined behaviour are the findings.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner/io/plan_io.h"
#include "planner/node/node.h"
#include "planner/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_trace[] =
    "{\"format\":\"hyperoffload-trace\",\"version\":1,\"name\":\"f\","
    "\"link\":{\"h2d_gbps\":1,\"d2h_gbps\":1,\"latency_us\":1,"
    "\"duplex\":true},\"storages\":["
    "{\"id\":1,\"bytes\":4096,\"kind\":\"param\",\"initial\":\"device\","
    "\"retained\":true,\"pinned\":false,\"movable\":true},"
    "{\"id\":2,\"bytes\":8192,\"kind\":\"activation\",\"initial\":\"none\","
    "\"retained\":false,\"pinned\":false},"
    "{\"id\":3,\"bytes\":4096,\"kind\":\"optimizer\",\"initial\":\"host\","
    "\"retained\":true,\"pinned\":false}],\"ops\":["
    "{\"name\":\"a\",\"duration_us\":10,\"reads\":[1],\"writes\":[2]},"
    "{\"name\":\"b\",\"duration_us\":5,\"reads\":[2,3],\"writes\":[3]},"
    "{\"name\":\"c\",\"duration_us\":7,\"reads\":[1,2],\"writes\":[]}]}";

static void judge(plan_schedule *s)
{
    static plan_trace *t;
    char err[512];
    if (!t && plan_trace_parse_json(fixed_trace, sizeof(fixed_trace) - 1,
                                    &t, err, sizeof(err)) != 0)
        abort();
    if (plan_schedule_bind(s, t, err, sizeof(err)) == 0) {
        plan_metrics m;
        plan_violation v;
        (void)plan_simulate(t, s, &m, &v, NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned pick = data[0] % 6;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    char err[512];
    plan_trace *t = NULL;
    plan_schedule *s = NULL;
    plan_node *nd = NULL;
    plan_workload *w = NULL;
    switch (pick) {
    case 0:
    case 2:
        if ((pick == 0 ? plan_trace_parse_json((const char *)p, n, &t, err,
                                               sizeof(err))
                       : plan_trace_from_pb(p, n, &t, err, sizeof(err))) ==
            0) {
            plan_trace_summary sum;
            if (plan_trace_finish(t, err, sizeof(err)) == 0)
                (void)plan_trace_summarize(t, &sum);
        }
        plan_trace_free(t);
        break;
    case 1:
    case 3:
        if ((pick == 1 ? plan_schedule_parse_json((const char *)p, n, &s,
                                                  err, sizeof(err))
                       : plan_schedule_from_pb(p, n, &s, err,
                                               sizeof(err))) == 0)
            judge(s);
        plan_schedule_free(s);
        break;
    case 4:
        (void)plan_node_parse_json((const char *)p, n, &nd, err, sizeof(err));
        plan_node_free(nd);
        break;
    default:
        (void)plan_workload_parse_json((const char *)p, n, ".", &w, err,
                                       sizeof(err));
        plan_workload_free(w);
        break;
    }
    return 0;
}
