/* SPDX-License-Identifier: Apache-2.0 */
/* topology/model.h - the cluster model: nodes, interconnect domains, racks, blocks, zones and
 * accelerator capacity. Pure C: no I/O, no JSON, no hwloc. Never includes policy/ or extender/. */
#ifndef TPX_TOPOLOGY_MODEL_H
#define TPX_TOPOLOGY_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "topology/fabric.h"

/* Returned by index lookups that find nothing. */
#define TOPO_NONE ((size_t)-1)

/* Most in-node interconnect domains one node may hold (policy/ keeps them in a 64-bit mask). */
#define TOPO_DOMAINS_PER_NODE_MAX 64

/* Most accelerators one node may hold, one pod may request or one domain label may say: larger
 * counts are refused where they are read, so sums over a cluster stay far from wrapping. */
#define TOPO_ACCEL_MAX 4096u

/*
 * What a node's labels say of its multi-node NVLink fabric (GFD's nvidia.com/gpu.clique, see
 * docs/labels.md). GFD writes the clique only once NVML reports the fabric COMPLETED.
 */
enum topo_nvl {
    TOPO_NVL_NONE = 0,   /* no sign of a multi-node NVLink rack */
    TOPO_NVL_COMPLETED,  /* nvidia.com/gpu.clique present: the fabric is up */
    TOPO_NVL_INCOMPLETE, /* an NVL72 node without a clique: it belongs to no multi-node domain */
};

/*
 * One node as the model sees it. A value type: topo_cluster_add() copies every string, so the
 * caller keeps ownership of what it passes. Strings are NULL when the node has no such label.
 */
struct topo_node_info {
    const char *name;
    const char *rack;     /* rack value, before scoping by block */
    const char *block;    /* block value */
    const char *zone;     /* topology.kubernetes.io/zone */
    const char *domain;   /* multi-node interconnect domain (e.g. an nvidia.com/gpu.clique value);
                             NULL: the node's accelerators form domains of their own */
    const char *resource; /* accelerator resource name, e.g. "nvidia.com/gpu"; NULL: none */
    unsigned accel_alloc; /* allocatable accelerators */
    unsigned accel_used;  /* requested by pods bound here that are not Succeeded/Failed */
    enum topo_fabric fabric;
    unsigned domain_size;      /* accelerators per in-node domain; 0 means all of accel_alloc */
    unsigned domains_per_node; /* in-node domains; 0 means 1 */
    bool unschedulable;        /* cordoned or not Ready: holds capacity but takes no new pods */
    enum topo_nvl nvl;         /* the clique's word on the NVLink fabric */
    bool rack_from_domain;     /* no rack label: the rack is the domain value up to its last '.'
                                  (a clique's ClusterUUID, the NVL72 rack) */
    bool rdma_known;           /* topox.io/rdma-nics was given (false: unknown, never 0) */
    unsigned rdma_nics;        /* RDMA-capable NICs the node says it has; only when rdma_known */
};

/* Do a and b say the same of where pods may go: every field but the name and accel_used (which
 * the ledger keeps)? serve rebuilds its cluster only for nodes where they differ. */
bool topo_node_info_same_place(const struct topo_node_info *a, const struct topo_node_info *b);

/* Opaque: fields live in model.c. Built by _new/_add, frozen by _seal, then read-only and safe to
 * share between threads without locks. */
struct topo_cluster;

/* New empty cluster, or NULL with *err set. Free with topo_cluster_free(). */
struct topo_cluster *topo_cluster_new(struct tpx_err *err);

/* Copy *info in. TPX_EEXIST for a duplicate name, TPX_EINVAL for a missing name, for more than
 * TOPO_DOMAINS_PER_NODE_MAX domains per node, or once sealed. */
enum tpx_code topo_cluster_add(struct topo_cluster *c, const struct topo_node_info *info,
                               struct tpx_err *err);

/* Freeze: build the name index, racks (scoped by block: rack "r1" in block "b1" differs from "r1"
 * in "b2"; rack_from_domain takes the clique's ClusterUUID; other nodes without a rack label each
 * form a rack of one, named after the node), blocks and interconnect domains (one per multi-node
 * domain value; otherwise domains_per_node per node). A node with accelerators but no clique in a
 * rack where another node has one becomes TOPO_NVL_INCOMPLETE, and an incomplete node's domain
 * value is dropped: its fabric is not up, so it is a domain of its own.
 * After sealing only the const getters below may be used. TPX_ENOMEM. */
enum tpx_code topo_cluster_seal(struct topo_cluster *c, struct tpx_err *err);

void topo_cluster_free(struct topo_cluster *c); /* accepts NULL */

/* --- read access; all require a sealed cluster; borrowed pointers live until _free --- */

size_t topo_cluster_node_count(const struct topo_cluster *c);

/* Node i (0 <= i < count), in the order they were added. */
const struct topo_node_info *topo_cluster_node(const struct topo_cluster *c, size_t i);

/* Index of the node called name, or TOPO_NONE. O(1) average. */
size_t topo_cluster_find(const struct topo_cluster *c, const char *name);

size_t topo_cluster_rack_count(const struct topo_cluster *c);
size_t topo_cluster_node_rack(const struct topo_cluster *c, size_t node);
/* Display name of rack r: "b1/r3" when blocks exist, else "r3". */
const char *topo_cluster_rack_name(const struct topo_cluster *c, size_t rack);
/* Nodes of rack r, as indices; *n receives the count. */
const size_t *topo_cluster_rack_nodes(const struct topo_cluster *c, size_t rack, size_t *n);

/* Accelerators allocatable in rack r (sum over its nodes). */
unsigned topo_cluster_rack_capacity(const struct topo_cluster *c, size_t rack);

/* The node's fabric state after sealing (TOPO_NVL_INCOMPLETE also when its rack said so). */
enum topo_nvl topo_cluster_node_nvl(const struct topo_cluster *c, size_t node);

size_t topo_cluster_block_count(const struct topo_cluster *c);
size_t topo_cluster_node_block(const struct topo_cluster *c, size_t node); /* TOPO_NONE: none */
const char *topo_cluster_block_name(const struct topo_cluster *c, size_t block);

size_t topo_cluster_zone_count(const struct topo_cluster *c);
size_t topo_cluster_node_zone(const struct topo_cluster *c, size_t node); /* TOPO_NONE: none */
const char *topo_cluster_zone_name(const struct topo_cluster *c, size_t zone);

/*
 * Interconnect domains. A multi-node domain is one domain whose members are all nodes carrying the
 * same domain value; its size is the sum of their accel_alloc. A node without one holds
 * domains_per_node domains of domain_size accelerators each: the model returns the first of them
 * for topo_cluster_node_domain() and counts them all in topo_cluster_domain_count().
 */
size_t topo_cluster_domain_count(const struct topo_cluster *c);
size_t topo_cluster_node_domain(const struct topo_cluster *c, size_t node);
/* All domains of a node: they are consecutive, [returned index, + *n). TOPO_NONE for a bad node. */
size_t topo_cluster_node_domains(const struct topo_cluster *c, size_t node, size_t *n);
/* Nodes of domain d (one for an in-node domain); *n receives the count. Borrowed. */
const size_t *topo_cluster_domain_nodes(const struct topo_cluster *c, size_t domain, size_t *n);
const char *topo_cluster_domain_name(const struct topo_cluster *c, size_t domain);
unsigned topo_cluster_domain_size(const struct topo_cluster *c, size_t domain);
bool topo_cluster_domain_is_multinode(const struct topo_cluster *c, size_t domain);
enum topo_fabric topo_cluster_domain_fabric(const struct topo_cluster *c, size_t domain);

/* The largest interconnect domain in the cluster (accelerators), and its fabric and whether it
 * spans nodes, for validation messages. 0 on an empty cluster. */
unsigned topo_cluster_largest_domain(const struct topo_cluster *c, enum topo_fabric *fabric,
                                     bool *multinode);

/* Index of that largest domain, TOPO_NONE on an empty cluster. */
size_t topo_cluster_largest_domain_index(const struct topo_cluster *c);

#endif
