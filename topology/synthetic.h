/* SPDX-License-Identifier: Apache-2.0 */
/* topology/synthetic.h - clusters built from a one-line spec, for demos, `topox cluster --spec`,
 * `topox plan` without an API server, tests and benchmarks. Pure: no I/O. */
#ifndef TPX_TOPOLOGY_SYNTHETIC_H
#define TPX_TOPOLOGY_SYNTHETIC_H

#include <stddef.h>

#include "common/err.h"
#include "topology/labels.h"
#include "topology/model.h"

/* The spec the word "example" stands for: 4 racks x 4 nodes x 8 GPUs on NVSwitch. */
#define TOPO_SYNTHETIC_EXAMPLE                                                                     \
    "racks=4,nodes-per-rack=4,gpus-per-node=8,interconnect=nvswitch,resource=nvidia.com/gpu"

/*
 * A sealed cluster from a comma-separated spec of key=value pairs (or the word "example"):
 *   racks=N (1)            nodes-per-rack=N (1)      gpus-per-node=N (8)
 *   interconnect=nvswitch|nvlink|hccs|xgmi|pcie (nvswitch)     resource=NAME (nvidia.com/gpu)
 *   domain-nodes=N (1: domains inside the node; N > 1: multi-node domains of N consecutive nodes
 *                   of one rack, as if labelled nvidia.com/gpu.clique "clique-K")
 *   domains-per-node=N (1: e.g. 2 for a 16-NPU host with two 8-NPU HCCS domains)
 *   blocks=N (0: no block level; racks are spread evenly over blocks b1..bN)
 *   zones=N (0: no zone level)     used=N (0: accelerators already in use on every node)
 *   rdma-nics=N (not said: unknown; every node says topox.io/rdma-nics N)
 *   no-rdma-racks=K (0: the nodes of the first K racks say topox.io/rdma-nics 0)
 * Nodes are named "r01-n03" (zero-padded to the width of the largest number), racks "r01", blocks
 * "b1", zones "zone-a". NULL with *err (TPX_EINVAL naming the key) for an unknown key or a bad
 * value. Free with topo_cluster_free().
 */
struct topo_cluster *topo_cluster_synthetic(const char *spec, struct tpx_err *err);

/*
 * The node labels synthetic node i would carry: topox.io/rack, topox.io/block (when blocks),
 * topology.kubernetes.io/zone (when zones), nvidia.com/gpu.clique (multi-node domains),
 * topox.io/interconnect, topox.io/domain-size, topox.io/domains-per-node, topox.io/rdma-nics (when
 * known). Keys are static strings;
 * values are written into storage (one 64-byte slot per label), so out is valid while storage is.
 * Returns the number of labels written (at most max). The allocatable resource is
 * topo_cluster_node(c, i)->resource with accel_alloc. Works on any sealed cluster.
 */
size_t topo_synthetic_node_labels(const struct topo_cluster *c, size_t i, struct topo_kv *out,
                                  char storage[][64], size_t max);

#endif
