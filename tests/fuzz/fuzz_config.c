/*
 * tests/fuzz/fuzz_config.c - libFuzzer target: the config file parser.
 * The input is the text of a config file (in a memfd, read through
 * /proc/self/fd like any path, so the loader's regular-file, size, line
 * and NUL checks all run), loaded into a fresh config and validated.
 * Crashes, leaks and undefined behaviour are the findings.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-config", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 ||
        (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    srv_config c;
    char err[1024];
    if (srv_config_init(&c) != 0)
        abort();
    if (srv_config_load_file(&c, path, err, sizeof(err)) == 0)
        (void)srv_config_validate(&c, err, sizeof(err));
    srv_config_done(&c);
    return 0;
}
