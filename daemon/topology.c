/* daemon/topology.c - the node the daemon serves (see topology.h). */
#include "daemon/topology.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hyperoffload/errors.h"
#include "proto/errfmt.h"

struct srv_topology {
    plan_node *node;              /* NULL without devices */
    srv_topology_source source;
    char note[256];
};

/* Bytes read from one sysfs attribute: they are a line each. */
#define SYSFS_ATTR_MAX 64
/* Devices a PCI directory may list: a large host has a few hundred. */
#define SYSFS_MAX_ENTRIES 65536u

const char *srv_topology_source_name(srv_topology_source s)
{
    switch (s) {
    case SRV_TOPO_CONFIG: return "config";
    case SRV_TOPO_SYSFS: return "sysfs";
    case SRV_TOPO_DEFAULT: return "default";
    }
    return "?";
}

/* ------------------------------------------------------------ devices */

/* Device i with the [node] defaults, then its [device N] overrides. */
static void device_of(const srv_config *c, uint32_t i, char *name,
                      size_t namelen, plan_node_device *d)
{
    const srv_device_cfg *o = &c->device_cfg[i];
    srv_config_device_name(c, i, name, namelen);
    memset(d, 0, sizeof(*d));
    d->id = i;
    d->name = name;
    d->hbm_bytes = srv_config_hbm_capacity(c, i);
    d->reserve_bytes = srv_config_hbm_reserve(c, i);
    d->h2d_gbps = d->d2h_gbps = c->device_gbps;
    d->latency_us = c->device_latency_us;
    d->duplex = true;
    if (!o->present)
        return;
    if (o->given & SRV_NODE_KEY_H2D)
        d->h2d_gbps = o->h2d_gbps;
    if (o->given & SRV_NODE_KEY_D2H)
        d->d2h_gbps = o->d2h_gbps;
    if (o->given & SRV_NODE_KEY_LATENCY)
        d->latency_us = o->latency_us;
    if (o->given & SRV_NODE_KEY_DUPLEX)
        d->duplex = o->duplex;
}

static int add_device(plan_node *n, const srv_config *c, uint32_t i,
                      const char *parent, double gbps, char *err,
                      size_t errlen)
{
    char name[SRV_DEVICE_NAME];
    plan_node_device d;
    device_of(c, i, name, sizeof(name), &d);
    const srv_device_cfg *o = &c->device_cfg[i];
    if (gbps > 0) {   /* discovered: sysfs figures unless overridden */
        if (!(o->given & SRV_NODE_KEY_H2D))
            d.h2d_gbps = gbps;
        if (!(o->given & SRV_NODE_KEY_D2H))
            d.d2h_gbps = gbps;
    }
    if (o->present && (o->given & SRV_NODE_KEY_PARENT))
        parent = o->parent;
    d.parent_name = (char *)parent;
    char why[384];
    int rc = plan_node_add_device(n, &d, why, sizeof(why));
    if (rc < 0)
        return ho_errf(err, errlen, rc, "[device %u]: %s", i, why);
    return 0;
}

/* DDR and flash figures, then the tree check. */
static int finish_node(plan_node *n, const srv_config *c, char *err,
                       size_t errlen)
{
    n->ddr_bytes = c->ddr_capacity;
    if (c->n_flash) {
        n->has_flash = true;
        n->flash.bytes = c->flash_capacity * c->n_flash;
        n->flash.read_gbps = c->flash_read_gbps;
        n->flash.write_gbps = c->flash_write_gbps;
    }
    char why[384];
    int rc = plan_node_finish(n, why, sizeof(why));
    if (rc < 0)
        return ho_errf(err, errlen, rc, "the node description: %s", why);
    return 0;
}

/* ------------------------------------------------------------ config */

static int from_config(const srv_config *c, plan_node *n, char *err,
                       size_t errlen)
{
    const char *root = NULL;
    for (uint32_t i = 0; i < c->n_links; i++) {
        const srv_link_cfg *l = &c->links[i];
        char why[384];
        if (!l->parent[0])
            root = l->name;
        int rc = plan_node_add_link(n, l->name, l->parent[0] ? l->parent
                                                            : NULL,
                                    l->h2d_gbps, l->d2h_gbps, l->duplex, why,
                                    sizeof(why));
        if (rc < 0)
            return ho_errf(err, errlen, rc, "[link %s]: %s", l->name, why);
    }
    for (uint32_t i = 0; i < c->n_devices; i++) {
        int rc = add_device(n, c, i, root, 0, err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ default */

static int from_default(const srv_config *c, plan_node *n, char *err,
                        size_t errlen)
{
    char why[384];
    int rc = plan_node_add_link(n, "host", NULL, c->host_gbps, c->host_gbps,
                                true, why, sizeof(why));
    uint32_t per = c->devices_per_switch;
    uint32_t switches = per ? (c->n_devices + per - 1) / per : 0;
    for (uint32_t s = 0; rc == 0 && s < switches; s++) {
        char name[16];
        snprintf(name, sizeof(name), "sw%u", s);
        rc = plan_node_add_link(n, name, "host", c->switch_gbps,
                                c->switch_gbps, true, why, sizeof(why));
    }
    if (rc < 0)
        return ho_errf(err, errlen, rc, "[node]: %s", why);
    for (uint32_t i = 0; i < c->n_devices; i++) {
        char name[16];
        snprintf(name, sizeof(name), "sw%u", per ? i / per : 0);
        rc = add_device(n, c, i, per ? name : "host", 0, err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ sysfs */

/* One attribute's first line, trimmed; false when unreadable. */
static bool read_attr(const char *dir, const char *attr, char *buf,
                      size_t len)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, attr) >= (int)sizeof(path))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] != '\0';
}

/* A PCI address "dddd:bb:dd.f". */
static bool is_bdf(const char *s)
{
    unsigned a, b, c, f;
    int end = 0;
    return strlen(s) == 12 &&
           sscanf(s, "%4x:%2x:%2x.%1x%n", &a, &b, &c, &f, &end) == 4 &&
           end == 12;
}

/* GB/s of a PCIe port's current link (speed x width, less the line
 * code: 8b/10b up to 5 GT/s, 128b/130b from 8 GT/s, FLIT ~242/256 at
 * 64 GT/s); 0 when sysfs does not say. */
static double link_gbps(const char *dir)
{
    char sp[SYSFS_ATTR_MAX], wd[SYSFS_ATTR_MAX];
    if (!read_attr(dir, "current_link_speed", sp, sizeof(sp)) ||
        !read_attr(dir, "current_link_width", wd, sizeof(wd)))
        return 0;
    char *end = NULL;
    double gts = strtod(sp, &end);
    long width = strtol(wd, NULL, 10);
    if (end == sp || !(gts > 0) || gts > 1000 || width <= 0 || width > 64)
        return 0;
    double code = gts <= 5.0 ? 0.8 : gts < 64.0 ? 128.0 / 130.0
                                                : 242.0 / 256.0;
    return gts * (double)width * code / 8.0;
}

/* An NVIDIA display or 3D controller (class 0x03xxxx, vendor 0x10de);
 * audio and bridge functions of the same card are not devices. */
static bool is_nvidia_gpu(const char *dir)
{
    char v[SYSFS_ATTR_MAX], cl[SYSFS_ATTR_MAX];
    if (!read_attr(dir, "vendor", v, sizeof(v)) ||
        !read_attr(dir, "class", cl, sizeof(cl)))
        return false;
    unsigned long vendor = strtoul(v, NULL, 16);
    unsigned long cls = strtoul(cl, NULL, 16);
    return vendor == 0x10de && (cls >> 16) == 0x03;
}

/* One discovered device: its resolved directory, and the upstream port
 * of its switch ("" when it sits directly below a root port). */
typedef struct found_dev {
    char path[PATH_MAX];
    char sw[PATH_MAX];
} found_dev;

/* The last path component of p (p is not modified). */
static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* p without its last component, into out. */
static void parent_of(const char *p, char *out, size_t len)
{
    const char *s = strrchr(p, '/');
    size_t n = s ? (size_t)(s - p) : 0;
    if (n >= len)
        n = len - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static int scan_sysfs(const char *root, found_dev *found, uint32_t max,
                      uint32_t *ret_n, char *dir, size_t dirlen, char *err,
                      size_t errlen)
{
    if (snprintf(dir, dirlen, "%s/bus/pci/devices", root) >= (int)dirlen)
        return ho_errf(err, errlen, HO_E_BAD_CONFIG, "[node] sysfs_root '%s' "
                       "is too long", root);
    struct dirent **ents = NULL;
    int ne = scandir(dir, &ents, NULL, alphasort);
    if (ne < 0) {
        *ret_n = 0;
        return 0;   /* no PCI bus there: nothing discovered */
    }
    uint32_t n = 0;
    for (int i = 0; i < ne; i++) {
        const char *e = ents[i]->d_name;
        char link[PATH_MAX], real[PATH_MAX];
        if (e[0] != '.' && (uint32_t)i < SYSFS_MAX_ENTRIES && n < max &&
            snprintf(link, sizeof(link), "%s/%s", dir, e) <
                (int)sizeof(link) &&
            is_nvidia_gpu(link) && realpath(link, real)) {
            found_dev *f = &found[n++];
            char up[PATH_MAX], upup[PATH_MAX];
            snprintf(f->path, sizeof(f->path), "%s", real);
            parent_of(real, up, sizeof(up));
            parent_of(up, upup, sizeof(upup));
            /* GPU <- downstream port <- upstream port: a switch; GPU <-
             * root port <- pciDDDD:BB: none. */
            if (is_bdf(base_of(up)) && is_bdf(base_of(upup)))
                snprintf(f->sw, sizeof(f->sw), "%s", upup);
            else
                f->sw[0] = '\0';
        }
        free(ents[i]);
    }
    free(ents);
    *ret_n = n;
    return 0;
}

int srv_topology_discover(const srv_config *c, const char *root,
                          uint32_t want, plan_node **ret, char *err,
                          size_t errlen)
{
    if (want == 0 || want > SRV_MAX_DEVICES)
        return ho_errf(err, errlen, -EINVAL, "discovery of %u devices", want);
    found_dev *found = calloc(want, sizeof(*found));
    plan_node *n = plan_node_new();
    char dir[PATH_MAX];
    uint32_t nf = 0;
    int rc = found && n ? 0 : -ENOMEM;
    if (rc == 0)
        rc = scan_sysfs(root, found, want, &nf, dir, sizeof(dir), err,
                        errlen);
    if (rc == 0 && nf < want)
        rc = ho_errf(err, errlen, -ENOENT, "sysfs: %s lists %u NVIDIA "
                     "device%s, [devices] count is %u", dir, nf,
                     nf == 1 ? "" : "s", want);
    /* links: the root, then one per switch in order of first device */
    double host = 0;
    char why[384];
    if (rc == 0)
        rc = plan_node_add_link(n, "host", NULL, 1, 1, true, why,
                                sizeof(why));
    for (uint32_t i = 0; rc == 0 && i < nf; i++) {
        double own = link_gbps(found[i].path);
        if (!(own > 0))
            own = c->device_gbps;
        char name[SRV_LINK_NAME] = "host";
        if (found[i].sw[0]) {
            snprintf(name, sizeof(name), "switch-%s", base_of(found[i].sw));
            if (plan_node_link_index(n, name) == PLAN_NONE) {
                double g = link_gbps(found[i].sw);
                if (!(g > 0))
                    g = c->switch_gbps;
                host += g;
                rc = plan_node_add_link(n, name, "host", g, g, true, why,
                                        sizeof(why));
                if (rc < 0) {
                    ho_errf(err, errlen, rc, "sysfs: %s: %s", name, why);
                    break;
                }
            }
        } else {
            host += own;
        }
        rc = add_device(n, c, i, name, own, err, errlen);
    }
    if (rc == 0) {
        /* The root carries what its children can: it never binds. */
        n->links[0].h2d_gbps = n->links[0].d2h_gbps = host;
        rc = finish_node(n, c, err, errlen);
    }
    free(found);
    if (rc < 0) {
        plan_node_free(n);
        return rc;
    }
    *ret = n;
    return 0;
}

/* ------------------------------------------------------------ topology */

int srv_topology_new(const srv_config *c, srv_topology **ret, char *err,
                     size_t errlen)
{
    srv_topology *t = calloc(1, sizeof(*t));
    if (!t)
        return ho_errf(err, errlen, -ENOMEM, "out of memory");
    int rc = 0;
    if (c->n_devices == 0) {
        t->source = c->n_links ? SRV_TOPO_CONFIG : SRV_TOPO_DEFAULT;
        *ret = t;
        return 0;
    }
    if (c->n_links) {
        t->source = SRV_TOPO_CONFIG;
        t->node = plan_node_new();
        rc = t->node ? from_config(c, t->node, err, errlen) : -ENOMEM;
        if (rc == 0)
            rc = finish_node(t->node, c, err, errlen);
    } else {
        bool sysfs = strcmp(c->node_discover, "no") != 0;
        if (sysfs) {
            char why[sizeof(t->note)] = "";
            rc = srv_topology_discover(c, c->sysfs_root, c->n_devices,
                                       &t->node, why, sizeof(why));
            if (rc == 0) {
                t->source = SRV_TOPO_SYSFS;
            } else if (rc == -ENOENT &&
                       strcmp(c->node_discover, "auto") == 0) {
                snprintf(t->note, sizeof(t->note), "%s", why);
                rc = 0;
                sysfs = false;
            } else {
                ho_errf(err, errlen, rc == -ENOENT ? HO_E_BAD_CONFIG : rc,
                        "%s%s", rc == -ENOENT ? "[node] discover = sysfs: "
                                              : "", why);
                rc = rc == -ENOENT ? HO_E_BAD_CONFIG : rc;
            }
        }
        if (rc == 0 && !sysfs) {
            t->source = SRV_TOPO_DEFAULT;
            t->node = plan_node_new();
            rc = t->node ? from_default(c, t->node, err, errlen) : -ENOMEM;
            if (rc == 0)
                rc = finish_node(t->node, c, err, errlen);
        }
    }
    if (rc == -ENOMEM)
        ho_errf(err, errlen, rc, "out of memory");
    if (rc < 0) {
        srv_topology_free(t);
        return rc;
    }
    *ret = t;
    return 0;
}

srv_topology *srv_topology_free(srv_topology *t)
{
    if (t) {
        plan_node_free(t->node);
        free(t);
    }
    return NULL;
}

const plan_node *srv_topology_node(const srv_topology *t)
{
    return t ? t->node : NULL;
}

uint32_t srv_topology_device(const srv_topology *t, int32_t device)
{
    if (!t || !t->node || device < 0)
        return PLAN_NONE;
    return plan_node_device_index(t->node, (uint32_t)device);
}

srv_topology_source srv_topology_source_of(const srv_topology *t)
{
    return t->source;
}

const char *srv_topology_note(const srv_topology *t)
{
    return t->note;
}
