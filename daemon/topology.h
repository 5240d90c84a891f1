/*
 * daemon/topology.h - the node the daemon serves, as the planner's node
 * description (planner/node/node.h, NODE.md §1): its links (a tree from
 * the host down through the PCIe switches), its devices (HBM, reserve,
 * their own link figures and latency), the DDR pool and the flash files.
 *
 * Built once at startup from the settings (daemon/config.h), in this
 * order of precedence (docs/hyperoffloadd.conf.5, "NODE DESCRIPTION"):
 *   config   [link NAME] sections (a device without a parent hangs off
 *            the root link; [device N] overrides its figures);
 *   sysfs    without [link] sections and with [node] discover = auto or
 *            sysfs: the NVIDIA (vendor 0x10de) display / 3D controllers
 *            under <sysfs_root>/bus/pci/devices, in PCI address order,
 *            device i being the i-th; devices below one PCIe switch (one
 *            upstream port above their downstream ports) share a link
 *            named "switch-<upstream BDF>"; figures from each port's
 *            current_link_speed x current_link_width; the root link
 *            "host" has the sum of its children's figures;
 *   default  the emulated node: a root link "host" ([node] host_gbps),
 *            switches sw0, sw1, ... ([node] switch_gbps) with
 *            devices_per_switch devices each ([node] device_gbps,
 *            latency_us), devices in order.
 * Device ids are the daemon's device indices (RegisterRequest.device), so
 * a session's device maps to node device plan_node_device_index(node,
 * device).  HBM and reserve are always [devices] / [device N]'s (sysfs
 * does not tell HBM).  A base module (config.h below it, nothing above):
 * no libuv, no tiers; it reads sysfs with plain stat / readlink.
 *
 * Ownership: srv_topology is a heap object released with
 * srv_topology_free (accepts NULL); the plan_node it returns is its own.
 */
#ifndef HO_DAEMON_TOPOLOGY_H
#define HO_DAEMON_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "planner/node/node.h"

typedef struct srv_topology srv_topology;

/* Where the links came from. */
typedef enum srv_topology_source {
    SRV_TOPO_CONFIG = 0,   /* [link NAME] sections */
    SRV_TOPO_SYSFS,        /* discovered */
    SRV_TOPO_DEFAULT,      /* the emulated switches */
} srv_topology_source;

/* Build the node of config c.  0 and *ret; HO_E_BAD_CONFIG with err
 * naming the section or the sysfs file ("[link sw1]: cycle ...",
 * "sysfs: [node] discover = sysfs but /sys/bus/pci/devices lists 1
 * NVIDIA device, [devices] count is 4"); -ENOMEM.  With [devices] count
 * 0 the topology has no node (srv_topology_node returns NULL). */
int srv_topology_new(const srv_config *c, srv_topology **ret, char *err,
                     size_t errlen);
srv_topology *srv_topology_free(srv_topology *t);

/* The node (finished), NULL when the daemon budgets no device.  Owned by
 * t; valid until srv_topology_free. */
const plan_node *srv_topology_node(const srv_topology *t);

/* The node device of daemon device `device` (a session's
 * RegisterRequest.device): its index in srv_topology_node(t)->devices,
 * or PLAN_NONE when there is none (no device, out of range). */
uint32_t srv_topology_device(const srv_topology *t, int32_t device);

srv_topology_source srv_topology_source_of(const srv_topology *t);
/* "config", "sysfs", "default". */
const char *srv_topology_source_name(srv_topology_source s);
/* Why discovery was not used when it could have been ("sysfs: no NVIDIA
 * device under /sys/bus/pci/devices"), "" otherwise. */
const char *srv_topology_note(const srv_topology *t);

/* Discovery alone, for tests: the NVIDIA devices under
 * <root>/bus/pci/devices as a node of `want` devices (figures from
 * sysfs, HBM and names from c).  0; -ENOENT when fewer than `want` are
 * found (err says how many); HO_E_BAD_CONFIG, -ENOMEM. */
int srv_topology_discover(const srv_config *c, const char *root,
                          uint32_t want, plan_node **ret, char *err,
                          size_t errlen);

#endif
