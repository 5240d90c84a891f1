/*
 * examples/c/ddr_roundtrip.c - a small libhyperoffload client.
 *
 * Connects to hyperoffloadd, registers a session, allocates a few DDR
 * extents, writes deterministic content into them, spills them to flash,
 * fills them back, checks every byte and prints "verified".
 *
 *   ho-example-roundtrip [--socket PATH]
 *
 * The socket defaults to $HO_SOCKET, else ./.hyperoffload/hyperoffloadd.sock
 * when it exists, else /run/hyperoffload/hyperoffloadd.sock.
 * Build elsewhere with: cc ddr_roundtrip.c $(pkg-config --cflags --libs hyperoffload)
 */
#include <hyperoffload/client.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NEXTENTS 4

/* Deterministic content: xorshift64 seeded by the extent's index. */
static void pattern(uint8_t *p, uint64_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint64_t i = 0; i < len; i++) {
        if (i % 8 == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        p[i] = (uint8_t)(x >> (8 * (i % 8)));
    }
}

static int check(uint8_t *p, uint64_t len, uint64_t seed, uint8_t *scratch)
{
    pattern(scratch, len, seed);
    return memcmp(p, scratch, len) == 0;
}

static int fail(ho_client *c, const char *what, int rc)
{
    char msg[512] = "";
    if (c)
        ho_last_error(c, msg, sizeof(msg));
    fprintf(stderr, "ho-example-roundtrip: %s: %s (%s)%s%s\n", what,
            ho_strerror(rc), ho_err_name(rc), msg[0] ? ": " : "", msg);
    ho_close(c);
    return 1;
}

int main(int argc, char **argv)
{
    static const uint64_t sizes[NEXTENTS] = {4096, 100000, 1u << 20,
                                             (4u << 20) + 123};
    static uint8_t scratch[(4u << 20) + 123];
    const char *socket = NULL;
    ho_client *c = NULL;
    ho_extent ext[NEXTENTS];
    char a[32], b[32];
    int rc;

    if (argc == 3 && strcmp(argv[1], "--socket") == 0) {
        socket = argv[2];
    } else if (argc != 1) {
        fprintf(stderr, "usage: ho-example-roundtrip [--socket PATH]\n");
        return 2;
    }

    rc = ho_connect(socket, "ho-example-roundtrip", &c);
    if (rc < 0)
        return fail(NULL, "connect", rc);
    printf("connected to hyperoffloadd %s at %s (protocol %u)\n",
           ho_server_version(c), ho_socket(c), ho_protocol_version(c));

    rc = ho_register(c, NULL, -1, 0);
    if (rc < 0)
        return fail(c, "register", rc);
    printf("session %llu, pool of %s mapped at %p\n",
           (unsigned long long)ho_session_id(c),
           ho_size_format(ho_pool_size(c), a, sizeof(a)), ho_pool_base(c));

    for (int i = 0; i < NEXTENTS; i++) {
        rc = ho_extent_alloc(c, sizes[i], &ext[i]);
        if (rc < 0)
            return fail(c, "alloc", rc);
        pattern(ext[i].ptr, sizes[i], (uint64_t)i);
        printf("extent %llu: %s at offset %llu, written\n",
               (unsigned long long)ext[i].id,
               ho_size_format(sizes[i], a, sizeof(a)),
               (unsigned long long)ext[i].offset);
    }

    for (int i = 0; i < NEXTENTS; i++) {
        ho_move_result m;
        rc = ho_extent_spill(c, ext[i].id, &m);
        if (rc < 0)
            return fail(c, "spill", rc);
        printf("extent %llu spilled to %s (%s in %.0f us)\n",
               (unsigned long long)ext[i].id, ho_tier_name(m.residency),
               ho_size_format(m.bytes, a, sizeof(a)), m.duration_us);
    }

    ho_usage u;
    rc = ho_stats(c, NULL, 0, NULL, &u);
    if (rc < 0)
        return fail(c, "stats", rc);
    printf("session usage: DDR %s, flash %s, %llu extents\n",
           ho_size_format(u.ddr_bytes, a, sizeof(a)),
           ho_size_format(u.flash_bytes, b, sizeof(b)),
           (unsigned long long)u.extents);

    for (int i = 0; i < NEXTENTS; i++) {
        ho_move_result m;
        rc = ho_extent_fill(c, ext[i].id, &m);
        if (rc < 0)
            return fail(c, "fill", rc);
        if (!check(ext[i].ptr, sizes[i], (uint64_t)i, scratch)) {
            fprintf(stderr, "ho-example-roundtrip: extent %llu differs "
                            "after the round trip\n",
                    (unsigned long long)ext[i].id);
            ho_close(c);
            return 1;
        }
        printf("extent %llu filled back to %s, %s byte-exact\n",
               (unsigned long long)ext[i].id, ho_tier_name(m.residency),
               ho_size_format(sizes[i], a, sizeof(a)));
    }

    for (int i = 0; i < NEXTENTS; i++) {
        rc = ho_extent_free(c, ext[i].id);
        if (rc < 0)
            return fail(c, "free", rc);
    }
    ho_close(c);
    puts("verified");
    return 0;
}
