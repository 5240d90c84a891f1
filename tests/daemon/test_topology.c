/* tests/daemon/test_topology.c - daemon/topology.c: the node description
 * from [link] / [device N] sections, from sysfs (the fixture
 * tests/daemon/fixtures/sysfs, laid out like /sys/bus/pci/devices), and
 * the emulated default; the config errors of the sections. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/topology.h"
#include "hyperoffload/errors.h"
#include "tests/check_main.h"

static char tmpdir[PATH_MAX];

static void make_tmpdir(void)
{
    const char *b = getenv("HO_BUILD_DIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/hotopo-XXXXXX", b && *b ? b : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *write_conf(const char *text)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/node.conf", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Load text over the defaults and validate; returns the code, err set. */
static int load(srv_config *c, const char *text, char *err, size_t errlen)
{
    ck_assert_int_eq(srv_config_init(c), 0);
    int rc = srv_config_load_file(c, write_conf(text), err, errlen);
    if (rc == 0)
        rc = srv_config_validate(c, err, errlen);
    return rc;
}

static const char *fixture(void)
{
    static char path[PATH_MAX];
    const char *src = getenv("HO_SOURCE_DIR");
    ck_assert_ptr_nonnull(src);
    snprintf(path, sizeof(path), "%s/tests/daemon/fixtures/sysfs", src);
    return path;
}

static const plan_node_link *link_named(const plan_node *n, const char *name)
{
    uint32_t i = plan_node_link_index(n, name);
    ck_assert_msg(i != PLAN_NONE, "no link %s", name);
    return &n->links[i];
}

static void assert_parent(const plan_node *n, uint32_t dev, const char *want)
{
    const plan_node_device *d = &n->devices[dev];
    ck_assert_uint_ne(d->parent, PLAN_NONE);
    ck_assert_str_eq(n->links[d->parent].name, want);
}

/* The embedded default: four devices, two emulated switches of two. */
START_TEST(embedded_default)
{
    srv_config c;
    char err[512] = "";
    ck_assert_int_eq(srv_config_init(&c), 0);
    ck_assert_uint_eq(c.n_devices, 4);
    free(c.node_discover);
    c.node_discover = strdup("no");   /* whatever this host has */
    srv_topology *t = NULL;
    ck_assert_msg(srv_topology_new(&c, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(srv_topology_source_of(t), SRV_TOPO_DEFAULT);
    const plan_node *n = srv_topology_node(t);
    ck_assert_ptr_nonnull(n);
    ck_assert_uint_eq(n->n_links, 3);
    ck_assert_uint_eq(n->n_devices, 4);
    ck_assert_str_eq(n->links[0].name, "host");
    ck_assert(n->links[0].h2d_gbps == 32);
    ck_assert(link_named(n, "sw0")->h2d_gbps == 16);
    ck_assert_str_eq(link_named(n, "sw1")->parent_name, "host");
    assert_parent(n, 0, "sw0");
    assert_parent(n, 1, "sw0");
    assert_parent(n, 2, "sw1");
    assert_parent(n, 3, "sw1");
    ck_assert_str_eq(n->devices[3].name, "emu3");
    ck_assert_uint_eq(n->devices[2].hbm_bytes, 1ull << 30);
    ck_assert(n->devices[1].h2d_gbps == 16 && n->devices[1].latency_us == 10);
    ck_assert_uint_eq(n->ddr_bytes, 1ull << 30);
    ck_assert(n->has_flash);
    ck_assert_uint_eq(n->flash.bytes, 4ull << 30);
    ck_assert(n->flash.read_gbps == 2 && n->flash.write_gbps == 1);
    /* a session's device maps to the node device of the same id */
    ck_assert_uint_eq(srv_topology_device(t, 2), 2);
    ck_assert_uint_eq(srv_topology_device(t, -1), PLAN_NONE);
    ck_assert_uint_eq(srv_topology_device(t, 4), PLAN_NONE);
    srv_topology_free(t);

    /* three devices, no switches */
    c.n_devices = 3;
    c.devices_per_switch = 0;
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)), 0);
    n = srv_topology_node(t);
    ck_assert_uint_eq(n->n_links, 1);
    assert_parent(n, 2, "host");
    srv_topology_free(t);
    /* no devices: no node */
    c.n_devices = 0;
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)), 0);
    ck_assert_ptr_null(srv_topology_node(t));
    srv_topology_free(t);
    srv_config_done(&c);
}
END_TEST

/* [link] and [device N] sections make the tree; JSON round trip. */
START_TEST(sections_make_the_tree)
{
    make_tmpdir();
    srv_config c;
    char err[512] = "";
    int rc = load(&c,
                  "[devices]\ncount = 3\nhbm_capacity = 8G\n"
                  "[link host]\ngbps = 64\n"
                  "[link sw0]\nparent = host\nh2d_gbps = 32\n"
                  "d2h_gbps = 24\nduplex = no\n"
                  "[device 0]\nparent = sw0\nhbm_capacity = 2G\n"
                  "hbm_reserve = 512M\nlatency_us = 5\nname = npu0\n"
                  "[device 1]\nparent = sw0\ngbps = 12.5\nduplex = no\n",
                  err, sizeof(err));
    ck_assert_msg(rc == 0, "%s", err);
    srv_topology *t = NULL;
    ck_assert_msg(srv_topology_new(&c, &t, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(srv_topology_source_of(t), SRV_TOPO_CONFIG);
    const plan_node *n = srv_topology_node(t);
    ck_assert_uint_eq(n->n_links, 2);
    const plan_node_link *sw = link_named(n, "sw0");
    ck_assert(sw->h2d_gbps == 32 && sw->d2h_gbps == 24 && !sw->duplex);
    assert_parent(n, 0, "sw0");
    assert_parent(n, 1, "sw0");
    assert_parent(n, 2, "host");        /* no parent: the root */
    ck_assert_str_eq(n->devices[0].name, "npu0");
    ck_assert_str_eq(n->devices[1].name, "emu1");
    ck_assert_uint_eq(n->devices[0].hbm_bytes, 2ull << 30);
    ck_assert_uint_eq(n->devices[0].reserve_bytes, 512ull << 20);
    ck_assert_uint_eq(n->devices[1].hbm_bytes, 8ull << 30);
    ck_assert(n->devices[0].latency_us == 5);
    ck_assert(n->devices[1].h2d_gbps == 12.5 && n->devices[1].d2h_gbps == 12.5);
    ck_assert(!n->devices[1].duplex && n->devices[0].duplex);
    /* the per-device HBM is the daemon's too */
    ck_assert_uint_eq(srv_config_hbm_capacity(&c, 0), 2ull << 30);
    ck_assert_uint_eq(srv_config_hbm_reserve(&c, 0), 512ull << 20);

    /* its JSON reads back to the same JSON */
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    FILE *m = open_memstream(&a, &la);
    ck_assert_int_eq(plan_node_write_json(n, m), 0);
    fclose(m);
    plan_node *back = NULL;
    ck_assert_msg(plan_node_parse_json(a, la, &back, err, sizeof(err)) == 0,
                  "%s", err);
    m = open_memstream(&b, &lb);
    ck_assert_int_eq(plan_node_write_json(back, m), 0);
    fclose(m);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    plan_node_free(back);

    /* --print-config writes the sections, and they load back */
    char *ini = NULL;
    size_t li = 0;
    m = open_memstream(&ini, &li);
    srv_config_write_ini(&c, false, m);
    fclose(m);
    ck_assert_ptr_nonnull(strstr(ini, "\n[link sw0]\nparent = host\n"
                                      "h2d_gbps = 32\nd2h_gbps = 24\n"
                                      "duplex = no\n"));
    ck_assert_ptr_nonnull(strstr(ini, "\n[device 1]\nparent = sw0\n"
                                      "h2d_gbps = 12.5\n"));
    srv_config d;
    ck_assert_msg(load(&d, ini, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(d.n_links, 2);
    ck_assert(!srv_config_keep_node_sections(&d, &c));
    d.links[1].h2d_gbps = 31;
    ck_assert(srv_config_keep_node_sections(&d, &c));
    ck_assert(d.links[1].h2d_gbps == 32);   /* the running one kept */
    srv_config_done(&d);
    free(ini);
    srv_topology_free(t);
    srv_config_done(&c);
    rm_tmpdir();
}
END_TEST

/* Every error names the section and what is wrong. */
START_TEST(section_errors)
{
    make_tmpdir();
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[link]\n", "[link] needs a name: [link sw0]"},
        {"[link a b]\n", "a link name is 1 to"},
        {"[link sw0]\ngbps = 1\n[link sw0]\n",
         "[link sw0] is given twice (first at line 1)"},
        {"[device 64]\n", "[device 64]: the device number is an integer"},
        {"[device 1]\n[device 1]\n", "[device 1] is given twice"},
        {"[link h]\ngbps = 1\nlatency_us = 3\n",
         "unknown key 'latency_us' in [link h] (known: parent, gbps"},
        {"[link h]\ngbps = 1\nh2d_gbps = 2\n", "[link h] h2d_gbps is set twice"},
        {"[link h]\ngbps = 0\n", "[link h] gbps: '0' is not a number in (0"},
        {"[device 0]\nlatency_us = -1\n", "[device 0] latency_us: '-1'"},
        {"[device 0]\nhbm_capacity = 1K\n", "hbm_capacity '1K' is below"},
        {"[device 0]\nduplex = maybe\n", "[device 0] duplex: 'maybe' is not"},
        {"[gpu 0]\n", "unknown section [gpu 0]"},
        {"[link h]\nh2d_gbps = 4\n", "[link h] (line 1) has no d2h_gbps"},
        {"[link h]\ngbps = 4\n[link g]\ngbps = 4\n",
         "[link g] (line 3) has no parent, and [link h] is already the root"},
        {"[link h]\ngbps = 4\nparent = g\n[link g]\ngbps = 4\nparent = h\n",
         "every [link] has a parent"},
        {"[link h]\ngbps = 4\n[link s]\ngbps = 4\nparent = x\n",
         "[link s] parent 'x' is not a [link] section"},
        {"[devices]\ncount = 2\n[device 2]\n",
         "[device 2] (line 3): [devices] count is 2 (devices 0..1)"},
        {"[device 0]\nparent = sw9\n",
         "[device 0] parent 'sw9' is not a [link] section (there are none)"},
        {"[device 1]\nname = emu0\n", "devices 0 and 1 are both named 'emu0'"},
        {"[node]\ndiscover = maybe\n",
         "[node] discover 'maybe' is not one of auto, sysfs, no"},
        {"[node]\nswitch_gbps = -3\n", "'-3' is not above 0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        srv_config c;
        char err[512] = "";
        int rc = load(&c, cases[i].text, err, sizeof(err));
        ck_assert_msg(rc == HO_E_BAD_CONFIG, "case %zu: rc %d (%s)", i, rc,
                      err);
        ck_assert_msg(strstr(err, cases[i].want), "case %zu: '%s' lacks '%s'",
                      i, err, cases[i].want);
        srv_config_done(&c);
    }
    /* a cycle below the root is found when the tree is built */
    srv_config c;
    char err[512] = "";
    ck_assert_int_eq(load(&c, "[link host]\ngbps = 8\n[link a]\ngbps = 4\n"
                              "parent = b\n[link b]\ngbps = 4\nparent = a\n",
                          err, sizeof(err)), 0);
    srv_topology *t = NULL;
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_msg(strstr(err, "cycle"), "%s", err);
    ck_assert_ptr_null(t);
    srv_config_done(&c);
    rm_tmpdir();
}
END_TEST

/* The fixture: two switches of two NVIDIA GPUs (one uplink at 16 GT/s
 * x16, one at 8 GT/s x16 with GPUs at 16 GT/s x8), a NIC below the
 * first, and a GPU straight below a root port with its audio function. */
START_TEST(sysfs_fixture)
{
    srv_config c;
    char err[512] = "";
    ck_assert_int_eq(srv_config_init(&c), 0);
    c.n_devices = 5;
    plan_node *n = NULL;
    ck_assert_msg(srv_topology_discover(&c, fixture(), 5, &n, err,
                                        sizeof(err)) == 0, "%s", err);
    double x16g4 = 16.0 * 16 * 128 / 130 / 8; /* 31.5 GB/s */
    double x8g4 = 16.0 * 8 * 128 / 130 / 8;
    double x16g3 = 8.0 * 16 * 128 / 130 / 8;
    double x16g5 = 32.0 * 16 * 128 / 130 / 8;
    ck_assert_uint_eq(n->n_links, 3);
    ck_assert_uint_eq(n->n_devices, 5);
    ck_assert_str_eq(n->links[0].name, "host");
    const plan_node_link *s1 = link_named(n, "switch-0000:01:00.0");
    const plan_node_link *s2 = link_named(n, "switch-0000:10:00.0");
    ck_assert(fabs(s1->h2d_gbps - x16g4) < 1e-9);
    ck_assert(fabs(s2->d2h_gbps - x16g3) < 1e-9);
    ck_assert_str_eq(s2->parent_name, "host");
    assert_parent(n, 0, "switch-0000:01:00.0");
    assert_parent(n, 1, "switch-0000:01:00.0");
    assert_parent(n, 2, "switch-0000:10:00.0");
    assert_parent(n, 3, "switch-0000:10:00.0");
    assert_parent(n, 4, "host");           /* below a root port */
    ck_assert(fabs(n->devices[0].h2d_gbps - x16g4) < 1e-9);
    ck_assert(fabs(n->devices[3].h2d_gbps - x8g4) < 1e-9);
    ck_assert(fabs(n->devices[4].d2h_gbps - x16g5) < 1e-9);
    ck_assert(fabs(n->links[0].h2d_gbps - (x16g4 + x16g3 + x16g5)) < 1e-9);
    ck_assert_str_eq(n->devices[4].name, "emu4");
    plan_node_free(n);

    /* fewer wanted: the first in PCI order */
    ck_assert_int_eq(srv_topology_discover(&c, fixture(), 2, &n, err,
                                           sizeof(err)), 0);
    ck_assert_uint_eq(n->n_links, 2);
    assert_parent(n, 1, "switch-0000:01:00.0");
    plan_node_free(n);
    /* more wanted than there are */
    ck_assert_int_eq(srv_topology_discover(&c, fixture(), 6, &n, err,
                                           sizeof(err)), -ENOENT);
    ck_assert_msg(strstr(err, "lists 5 NVIDIA devices, [devices] count is 6"),
                  "%s", err);

    /* srv_topology_new: discover = auto uses sysfs when it has enough... */
    free(c.sysfs_root);
    c.sysfs_root = strdup(fixture());
    c.n_devices = 4;
    srv_topology *t = NULL;
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)), 0);
    ck_assert_int_eq(srv_topology_source_of(t), SRV_TOPO_SYSFS);
    ck_assert_uint_eq(srv_topology_node(t)->n_links, 3);
    srv_topology_free(t);
    /* ... else falls back to the emulated default, saying why */
    c.n_devices = 6;
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)), 0);
    ck_assert_int_eq(srv_topology_source_of(t), SRV_TOPO_DEFAULT);
    ck_assert_ptr_nonnull(strstr(srv_topology_note(t), "lists 5 NVIDIA"));
    assert_parent(srv_topology_node(t), 5, "sw2");
    srv_topology_free(t);
    /* discover = sysfs insists */
    free(c.node_discover);
    c.node_discover = strdup("sysfs");
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_msg(strstr(err, "[node] discover = sysfs: sysfs: "), "%s", err);
    /* a [device N] override wins over sysfs */
    c.n_devices = 2;
    c.device_cfg[1].present = true;
    c.device_cfg[1].given = SRV_NODE_KEY_H2D;
    c.device_cfg[1].h2d_gbps = 3;
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)), 0);
    ck_assert(srv_topology_node(t)->devices[1].h2d_gbps == 3);
    ck_assert(fabs(srv_topology_node(t)->devices[1].d2h_gbps - x16g4) < 1e-9);
    srv_topology_free(t);
    /* no PCI bus at all */
    free(c.sysfs_root);
    c.sysfs_root = strdup("/nonexistent-sysfs");
    ck_assert_int_eq(srv_topology_new(&c, &t, err, sizeof(err)),
                     HO_E_BAD_CONFIG);
    ck_assert_msg(strstr(err, "lists 0 NVIDIA devices"), "%s", err);
    srv_config_done(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_topology");
    TCase *t = tcase_create("topology");
    tcase_add_test(t, embedded_default);
    tcase_add_test(t, sections_make_the_tree);
    tcase_add_test(t, section_errors);
    tcase_add_test(t, sysfs_fixture);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return ho_check_run(suite(), false);
}
