/*
 * bench/runtime/gpu_check.c - ho-gpu-check: the "cuda" backend on a real
 * GPU, short.  Checks that prefetches and stores through the pool move the
 * right bytes, then reports H2D / D2H / both-engines GB/s of replays (host
 * copies in a pool registered with cudaHostRegister) next to cudaMemcpy
 * from and to cudaMallocHost'ed memory of the same sizes.
 *
 *   ho-gpu-check [--device N] [--big SIZE] [--count N] [--repeats N]
 *
 * Exits 77 with the reason when the cuda backend cannot run here, 1 on a
 * failure (wrong bytes included), 0 otherwise.  Replays are local (no
 * daemon needed): the pool is a private pre-faulted mapping.
 */
#include <dlfcn.h>

#include "bench/runtime/bench_common.h"

typedef int (*cu_fn_malloc)(void **, size_t);
typedef int (*cu_fn_free)(void *);
typedef int (*cu_fn_memcpy)(void *, const void *, size_t, int);
typedef int (*cu_fn_setdev)(int);
typedef int (*cu_fn_sync)(void);

static struct {
    cu_fn_malloc Malloc, MallocHost;
    cu_fn_free Free, FreeHost;
    cu_fn_memcpy Memcpy;
    cu_fn_setdev SetDevice;
    cu_fn_sync DeviceSynchronize;
} cu;

static int load_cudart(void)
{
    static const char *const names[] = {"libcudart.so", "libcudart.so.13",
                                        "libcudart.so.12", "libcudart.so.11"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -1;
    *(void **)&cu.Malloc = dlsym(lib, "cudaMalloc");
    *(void **)&cu.MallocHost = dlsym(lib, "cudaMallocHost");
    *(void **)&cu.Free = dlsym(lib, "cudaFree");
    *(void **)&cu.FreeHost = dlsym(lib, "cudaFreeHost");
    *(void **)&cu.Memcpy = dlsym(lib, "cudaMemcpy");
    *(void **)&cu.SetDevice = dlsym(lib, "cudaSetDevice");
    *(void **)&cu.DeviceSynchronize = dlsym(lib, "cudaDeviceSynchronize");
    return cu.Malloc && cu.MallocHost && cu.Free && cu.FreeHost &&
                   cu.Memcpy && cu.SetDevice && cu.DeviceSynchronize
               ? 0
               : -1;
}

/* cudaMemcpy of n x big between pinned host memory and the device. */
static void baseline(int dev, unsigned n, uint64_t big, unsigned repeats,
                     double *ret_h2d, double *ret_d2h)
{
    uint8_t *h = NULL, *d = NULL;
    uint64_t len = (uint64_t)n * big;
    if (cu.SetDevice(dev) || cu.MallocHost((void **)&h, len) ||
        cu.Malloc((void **)&d, len))
        bench_die("cudaMallocHost / cudaMalloc of %llu bytes failed",
                  (unsigned long long)len);
    memset(h, 0x42, len);
    double a[BENCH_MAX_REPEATS], b[BENCH_MAX_REPEATS];
    for (unsigned k = 0; k <= repeats; k++) {
        double t0 = bench_now();
        for (unsigned i = 0; i < n; i++)
            if (cu.Memcpy(d + i * big, h + i * big, big, 1))
                bench_die("cudaMemcpy H2D failed");
        cu.DeviceSynchronize();
        double t1 = bench_now();
        for (unsigned i = 0; i < n; i++)
            if (cu.Memcpy(h + i * big, d + i * big, big, 2))
                bench_die("cudaMemcpy D2H failed");
        cu.DeviceSynchronize();
        double t2 = bench_now();
        if (k > 0) {
            a[k - 1] = (double)len / (t1 - t0) / 1e9;
            b[k - 1] = (double)len / (t2 - t1) / 1e9;
        }
    }
    cu.Free(d);
    cu.FreeHost(h);
    *ret_h2d = bench_median(a, repeats);
    *ret_d2h = bench_median(b, repeats);
}

static void fill(uint8_t *p, uint64_t n, uint64_t seed)
{
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = (i + seed) * 0x9e3779b97f4a7c15ull;
        memcpy(p + i, &v, 8);
    }
}

/* Bytes through the pool are right: H2D of host content written with
 * ho_storage_write_host, D2H of device content written with
 * ho_device_write. */
static void correctness(int index, uint64_t big, const char *dir)
{
    unsigned n = 2;
    ho_trace *t = br_bw_trace(BR_BOTH, n, big);
    ho_plan *p = br_local_plan(t, 2 * n * big, "none", dir);
    ho_device *dev = NULL;
    bench_check(NULL, ho_device_open("cuda", index, 2 * n * big, &dev),
                "open cuda");
    ho_replay *r = NULL;
    bench_check(NULL, ho_replay_new(NULL, dev, t, p, NULL, &r), "replay");
    uint8_t *a = malloc(big), *b = malloc(big);
    if (!a || !b)
        bench_die("out of memory");
    for (unsigned i = 0; i < n; i++) {
        fill(a, big, BR_H_ID + i);
        bench_check(NULL, ho_storage_write_host(r, BR_H_ID + i, a, big),
                    "host");
        bench_check(NULL, ho_storage_write_host(r, BR_D_ID + i, a, big),
                    "host");
    }
    bench_check(NULL, ho_step_begin(r), "step");
    bench_check(NULL, ho_op_begin(r, 0), "op 0");
    for (unsigned i = 0; i < n; i++) { /* op 0 "computes" the D set */
        fill(a, big, 77 + i);
        bench_check(NULL, ho_device_write(dev, ho_storage_ptr(r, BR_D_ID + i),
                                          a, big), "device write");
    }
    bench_check(NULL, ho_op_end(r, 0), "op 0 end");
    bench_check(NULL, ho_op_begin(r, 1), "op 1");
    for (unsigned i = 0; i < n; i++) {
        bench_check(NULL,
                    ho_device_read(dev, b, ho_storage_ptr(r, BR_H_ID + i),
                                   big), "device read");
        fill(a, big, BR_H_ID + i);
        if (memcmp(a, b, big))
            bench_die("prefetched storage %u holds wrong bytes", BR_H_ID + i);
    }
    bench_check(NULL, ho_op_end(r, 1), "op 1 end");
    bench_check(NULL, ho_step_end(r, NULL), "step end");
    for (unsigned i = 0; i < n; i++) {
        bench_check(NULL, ho_storage_read(r, BR_D_ID + i, b, big), "read");
        fill(a, big, 77 + i);
        if (memcmp(a, b, big))
            bench_die("stored storage %u holds wrong bytes", BR_D_ID + i);
    }
    free(a);
    free(b);
    ho_replay_free(r);
    ho_device_close(dev);
    ho_plan_free(p);
    ho_trace_free(t);
}

static double replay_bw(int index, int mode, unsigned n, uint64_t big,
                        unsigned repeats, const char *dir)
{
    uint64_t per = (uint64_t)n * big, cap = mode == BR_BOTH ? 2 * per : per;
    ho_trace *t = br_bw_trace(mode, n, big);
    ho_plan *p = br_local_plan(t, cap, "none", dir);
    ho_device *dev = NULL;
    bench_check(NULL, ho_device_open("cuda", index, cap, &dev), "open cuda");
    ho_replay *r = NULL;
    bench_check(NULL, ho_replay_new(NULL, dev, t, p, NULL, &r), "replay");
    void *buf = calloc(1, big);
    if (!buf)
        bench_die("out of memory");
    br_touch(r, mode, n, big, buf);
    free(buf);
    double v[BENCH_MAX_REPEATS];
    for (unsigned k = 0; k <= repeats; k++) {
        double s = br_bw_step(r, mode, n);
        if (k > 0)
            v[k - 1] = (double)cap / s / 1e9;
    }
    ho_replay_free(r);
    ho_device_close(dev);
    ho_plan_free(p);
    ho_trace_free(t);
    return bench_median(v, repeats);
}

int main(int argc, char **argv)
{
    int index = 0;
    uint64_t big = 256ull << 20;
    unsigned count = 4, repeats = 5;
    bench_set_prog("ho-gpu-check");
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device"))
            index = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--big") &&
                 ho_size_parse(argv[i + 1], &big) == 0)
            ;
        else if (!strcmp(argv[i], "--count"))
            count = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats"))
            repeats = (unsigned)atoi(argv[i + 1]);
        else
            bench_die("usage: ho-gpu-check [--device N] [--big SIZE] "
                      "[--count N] [--repeats N]");
    }
    if (argc % 2 == 0 || count < 1 || count > 64 || repeats < 1 ||
        repeats >= BENCH_MAX_REPEATS || big < 4096 || big % 4096)
        bench_die("usage: ho-gpu-check [--device N] [--big SIZE] [--count N] "
                  "[--repeats N]");
    const char *why = ho_device_unavailable_reason("cuda");
    if (why) {
        printf("ho-gpu-check: SKIPPED: the cuda backend cannot run here: "
               "%s\n", why);
        return 77;
    }
    if (load_cudart() < 0)
        bench_die("libcudart lacks the symbols of the baseline");
    char dir[PATH_MAX];
    bench_default_dir(dir, sizeof(dir));

    correctness(index, 8ull << 20, dir);
    printf("ho-gpu-check: device %d, %u x %llu MiB per direction, median of "
           "%u repeats\n", index, count, (unsigned long long)(big >> 20),
           repeats);
    printf("  bytes through the pool: H2D and D2H verified\n");
    double h2d = replay_bw(index, BR_H2D, count, big, repeats, dir);
    double d2h = replay_bw(index, BR_D2H, count, big, repeats, dir);
    double both = replay_bw(index, BR_BOTH, count, big, repeats, dir);
    double bh, bd;
    baseline(index, count, big, repeats, &bh, &bd);
    printf("  %-26s %10s %16s %7s\n", "", "pool GB/s", "pinned cudaMemcpy",
           "ratio");
    printf("  %-26s %10.2f %16.2f %6.0f%%\n", "H2D (prefetch)", h2d, bh,
           100 * h2d / bh);
    printf("  %-26s %10.2f %16.2f %6.0f%%\n", "D2H (store)", d2h, bd,
           100 * d2h / bd);
    printf("  %-26s %10.2f %16.2f %6.0f%%\n", "both engines (aggregate)",
           both, bh + bd, 100 * both / (bh + bd));
    return 0;
}
