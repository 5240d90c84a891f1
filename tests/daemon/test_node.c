/* tests/daemon/test_node.c - the daemon's node against the real daemon:
 * NodeRequest returns the node of its [link] / [device N] sections as
 * NODE.md's JSON (and `hoctl node show` prints it), the embedded default
 * is two switches of two devices, and RegisterReply hands out the link
 * region, whose slots a dropped session leaves are freed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "planner/node/node.h"
#include "proto/links.h"
#include "tests/daemon/rawclient.h"
#include "tests/check_main.h"
#include "tests/harness.h"

static const char sections[] =
    "[ddr]\ncapacity = 64M\nlock = no\n[flash]\ncapacity = 16M\n"
    "[devices]\ncount = 3\nhbm_capacity = 512M\n"
    "[link host]\ngbps = 40\n"
    "[link sw0]\nparent = host\nh2d_gbps = 20\nd2h_gbps = 10\nduplex = no\n"
    "[device 0]\nparent = sw0\nlatency_us = 7\n"
    "[device 1]\nparent = sw0\nname = npuB\nhbm_reserve = 64M\n";

static ho_harness *start(const char *text)
{
    char err[2048];
    ho_harness_opts o = {.config_text = text, .no_defaults = 1};
    ho_harness *h = ho_harness_start(&o, err, sizeof(err));
    ck_assert_msg(h != NULL, "daemon: %s", err);
    return h;
}

/* NodeRequest's reply (caller frees). */
static Hyperoffload__Envelope *node_request_w(int fd, bool workload)
{
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__NodeRequest req = HYPEROFFLOAD__NODE_REQUEST__INIT;
    req.workload = workload;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_NODE_REQUEST;
    env.node_request = &req;
    Hyperoffload__Envelope *r = NULL;
    ck_assert_int_eq(rc_call(fd, &env, &r, NULL), 0);
    ck_assert_int_eq(r->body_case, HYPEROFFLOAD__ENVELOPE__BODY_NODE_REPLY);
    return r;
}

static Hyperoffload__Envelope *node_request(int fd)
{
    return node_request_w(fd, false);
}

/* The output of a command (static, NUL-terminated). */
static const char *run_cmd(const char *cmd)
{
    static char out[1 << 16];
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    return out;
}

START_TEST(node_of_the_sections)
{
    ho_harness *h = start(sections);
    int fd = rc_open(ho_harness_socket(h));
    ck_assert_int_ge(fd, 0);
    Hyperoffload__Envelope *r = node_request(fd);
    const Hyperoffload__NodeReply *nr = r->node_reply;
    ck_assert_str_eq(nr->source, "config");
    ck_assert(nr->pacing);
    plan_node *n = NULL;
    char err[512] = "";
    ck_assert_msg(plan_node_parse_json(nr->node_json, strlen(nr->node_json),
                                       &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(n->n_links, 2);
    ck_assert_uint_eq(n->n_devices, 3);
    uint32_t sw = plan_node_link_index(n, "sw0");
    ck_assert_uint_ne(sw, PLAN_NONE);
    ck_assert(n->links[sw].h2d_gbps == 20 && n->links[sw].d2h_gbps == 10);
    ck_assert(!n->links[sw].duplex);
    ck_assert_uint_eq(n->devices[0].parent, sw);
    ck_assert_str_eq(n->devices[1].name, "npuB");
    ck_assert_uint_eq(n->devices[1].reserve_bytes, 64ull << 20);
    ck_assert_str_eq(n->links[n->devices[2].parent].name, "host");
    ck_assert(n->devices[0].latency_us == 7);
    ck_assert_uint_eq(n->ddr_bytes, 64ull << 20);
    ck_assert(n->has_flash && n->flash.bytes == 16ull << 20);

    /* hoctl node show: the same JSON with --json, a tree without */
    char cmd[1024];
    const char *bd = getenv("HO_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    char hoctl[512];
    snprintf(hoctl, sizeof(hoctl), "%s/bin/hoctl", bd);
    snprintf(cmd, sizeof(cmd), "%s --socket %s node show --json", hoctl,
             ho_harness_socket(h));
    ck_assert_str_eq(run_cmd(cmd), nr->node_json);
    snprintf(cmd, sizeof(cmd), "%s --socket %s node show", hoctl,
             ho_harness_socket(h));
    const char *tree = run_cmd(cmd);
    ck_assert_msg(strstr(tree, "node of the daemon (from config; "
                               "host-backend pacing on)\nhost: H2D 40 GB/s"),
                  "%s", tree);
    ck_assert_msg(strstr(tree, "|-- sw0: H2D 20 GB/s, D2H 10 GB/s, one "
                               "capacity for both directions\n"), "%s", tree);
    ck_assert_msg(strstr(tree, "|   `-- npuB (device 1): HBM 512.0 MiB "
                               "(reserve 64.0 MiB)"), "%s", tree);
    ck_assert_msg(strstr(tree, "\n`-- emu2 (device 2): "), "%s", tree);
    plan_node_free(n);
    ho_frame_envelope_free(r);
    close(fd);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

START_TEST(embedded_default_node)
{
    ho_harness *h = start("[ddr]\ncapacity = 64M\nlock = no\n"
                          "[flash]\ncapacity = 16M\n[node]\ndiscover = no\n");
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope *r = node_request(fd);
    ck_assert_str_eq(r->node_reply->source, "default");
    plan_node *n = NULL;
    char err[512] = "";
    ck_assert_int_eq(plan_node_parse_json(r->node_reply->node_json,
                                          strlen(r->node_reply->node_json),
                                          &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n->n_devices, 4);
    ck_assert_uint_eq(n->n_links, 3);
    ck_assert_str_eq(n->links[n->devices[1].parent].name, "sw0");
    ck_assert_str_eq(n->links[n->devices[2].parent].name, "sw1");
    plan_node_free(n);
    ho_frame_envelope_free(r);
    /* no session planned yet: no workload, the node all the same */
    r = node_request_w(fd, true);
    ck_assert_str_eq(r->node_reply->workload_json, "");
    ck_assert_uint_eq(r->node_reply->n_file_names, 0);
    ck_assert_uint_eq(r->node_reply->workload_epoch, 0);
    ck_assert_str_eq(r->node_reply->source, "default");
    ho_frame_envelope_free(r);
    close(fd);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

/* RegisterReply carries the link region as its second descriptor; a
 * slot the session claimed is freed when it goes. */
START_TEST(link_region_at_register)
{
    ho_harness *h = start(sections);
    int fd = rc_open(ho_harness_socket(h));
    Hyperoffload__Envelope env = HYPEROFFLOAD__ENVELOPE__INIT;
    Hyperoffload__RegisterRequest rq = HYPEROFFLOAD__REGISTER_REQUEST__INIT;
    rq.job = "";
    rq.device = 1;
    rq.client_name = "node-test";
    rq.want_links = true;
    env.body_case = HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REQUEST;
    env.register_request = &rq;
    Hyperoffload__Envelope *r = NULL;
    int fds[4];
    int nfds = 0;
    ck_assert_int_eq(rc_call_fds(fd, &env, &r, fds, 4, &nfds), 0);
    ck_assert_int_eq(r->body_case,
                     HYPEROFFLOAD__ENVELOPE__BODY_REGISTER_REPLY);
    const Hyperoffload__LinkRegion *lr = r->register_reply->links;
    ck_assert_ptr_nonnull(lr);
    ck_assert(lr->fd_attached);
    ck_assert_int_eq(nfds, 2);
    ck_assert_uint_eq(lr->device_index, 1);
    ck_assert(lr->weight == 1.0);
    uint64_t sid = r->register_reply->session_id;
    ho_links_header *lh = mmap(NULL, (size_t)lr->map_size,
                               PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
    ck_assert(lh != MAP_FAILED);
    ck_assert_uint_eq(lh->magic, HO_LINKS_MAGIC);
    ck_assert_uint_eq(lh->n_routes, 6);
    /* device 1's H2D route: its own capacity, sw0 (one for both
     * directions), host */
    ho_links_route *rt = &ho_links_routes(lh)[2];
    ck_assert_uint_eq(rt->n_hops, 3);
    ck_assert(rt->alone_rate == 16e3);   /* the [node] device_gbps 16 */
    ck_assert(ho_links_routes(lh)[3].alone_rate == 10e3); /* D2H: sw0 */
    ck_assert_uint_eq(rt->hop[1].cap, ho_links_routes(lh)[3].hop[1].cap);
    ck_assert_uint_ne(rt->hop[2].cap, ho_links_routes(lh)[3].hop[2].cap);
    /* a slot claimed by this session, then the session goes */
    ho_links_slot *sl = &ho_links_slots(lh)[5];
    atomic_store(&sl->owner, sid);
    atomic_store(&sl->state, HO_LINKS_ACTIVE);
    uint64_t seq = atomic_load(&lh->seq);
    close(fd);
    for (int i = 0; i < 500 && atomic_load(&sl->state) != HO_LINKS_FREE; i++)
        usleep(10000);
    ck_assert_uint_eq(atomic_load(&sl->state), HO_LINKS_FREE);
    ck_assert_uint_gt(atomic_load(&lh->seq), seq);
    munmap(lh, (size_t)lr->map_size);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    ho_frame_envelope_free(r);

    /* pace_links = no: no region */
    /* a client that does not ask (an older library) gets no region */
    rq.want_links = false;
    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(rc_call_fds(fd, &env, &r, fds, 4, &nfds), 0);
    ck_assert_ptr_null(r->register_reply->links);
    ck_assert_int_eq(nfds, 1);
    close(fds[0]);
    ho_frame_envelope_free(r);
    close(fd);
    rq.want_links = true;
    ck_assert_int_eq(ho_harness_free(h), 0);
    char text[2048];
    snprintf(text, sizeof(text), "%s[node]\npace_links = no\n", sections);
    h = start(text);
    fd = rc_open(ho_harness_socket(h));
    ck_assert_int_eq(rc_call_fds(fd, &env, &r, fds, 4, &nfds), 0);
    ck_assert_ptr_null(r->register_reply->links);
    ck_assert_int_eq(nfds, 1);
    close(fds[0]);
    ho_frame_envelope_free(r);
    r = node_request(fd);
    ck_assert(!r->node_reply->pacing);
    ho_frame_envelope_free(r);
    close(fd);
    ck_assert_int_eq(ho_harness_free(h), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("daemon_node");
    TCase *t = tcase_create("node");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, node_of_the_sections);
    tcase_add_test(t, embedded_default_node);
    tcase_add_test(t, link_region_at_register);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return ho_check_run(suite(), false);
}
