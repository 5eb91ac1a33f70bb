/* SPDX-License-Identifier: Apache-2.0 */
/* topology/labels.h - node labels -> model values, by the precedence table of DESIGN.md, and label
 * hygiene checks over a sealed cluster. Pure string code: no JSON, no I/O. */
#ifndef TPX_TOPOLOGY_LABELS_H
#define TPX_TOPOLOGY_LABELS_H

#include <stddef.h>

#include "common/err.h"
#include "common/kv.h" /* struct topo_kv */
#include "topology/model.h"

/* GPU Feature Discovery's clique label, "<ClusterUUID>.<CliqueID>" (docs/labels.md). */
#define TOPO_LABEL_CLIQUE "nvidia.com/gpu.clique"

/* Prefix of every key topox owns. */
#define TOPO_LABEL_PREFIX "topox.io/"
/* Annotation key of the detailed JSON that `topox label` writes on its Node. */
#define TOPO_ANNOTATION_TOPOLOGY "topox.io/topology"

enum topo_level {
    TOPO_LEVEL_DOMAIN,
    TOPO_LEVEL_RACK,
    TOPO_LEVEL_BLOCK,
    TOPO_LEVEL_ZONE,
    TOPO_LEVEL_COUNT
};

/* Display name of a level: "domain", "rack", "block", "zone". */
const char *topo_level_name(enum topo_level level);

/*
 * Label keys per level, in precedence order (first present wins). The defaults are the table of
 * docs/labels.md; `topox serve --config` may replace a level's list. Levels are read finest first
 * (domain, rack, block, zone) and a key that won one level is skipped by the coarser ones, so a key
 * listed under two levels (AWS network-node-layer-3: the bottom layer of a 3-layer fabric, the
 * layer above the bottom on a 4-layer one) fills the finer one first. Accelerator resource names
 * are tried in order too (nvidia.com/gpu, amd.com/gpu, huawei.com/Ascend910, huawei.com/Ascend910B,
 * ...). Borrowed strings: the config does not own them.
 */
struct topo_label_config {
    const char *const *keys[TOPO_LEVEL_COUNT];
    size_t nkeys[TOPO_LEVEL_COUNT];
    const char *const *resources;
    size_t nresources;
};

/* The built-in defaults. Static storage; never NULL. */
const struct topo_label_config *topo_label_config_default(void);

/* Which label key won for each level of one node (NULL when none was present), and why a level
 * is not what its key alone says (NULL: nothing to add). Static strings. */
struct topo_label_explain {
    const char *key[TOPO_LEVEL_COUNT];
    const char *note[TOPO_LEVEL_COUNT];
};

/*
 * Fill *out from a node's labels and its allocatable resources (key = resource name, value = a
 * Kubernetes quantity such as "8"). out's strings are BORROWED from labels/alloc (copy them, e.g.
 * by topo_cluster_add(), before those go away); out->name is left to the caller. Also reads
 * topox.io/interconnect, topox.io/domain-size, topox.io/domains-per-node (else the fabric is
 * guessed from nvidia.com/gpu.* product labels, or unknown) and topox.io/rdma-nics (a whole count
 * sets rdma_known; absent or not a count: unknown, never 0). GFD's clique sets out->nvl: present,
 * the fabric is COMPLETED and, without a rack label, its ClusterUUID is the rack
 * (out->rack_from_domain); absent on an NVL72 part (nvidia.com/gpu.product GB200 or GB300), the
 * fabric is not COMPLETED and the node gets no multi-node domain, whichever key offers one. Values
 * are opaque: only the clique is ever split. explain may be NULL. TPX_EINVAL with a message naming
 * the label for a malformed value (e.g. a negative domain size).
 */
enum tpx_code topo_labels_decode(const struct topo_label_config *cfg, const struct topo_kv *labels,
                                 size_t nlabels, const struct topo_kv *alloc, size_t nalloc,
                                 struct topo_node_info *out, struct topo_label_explain *explain,
                                 struct tpx_err *err);

/* Parse a Kubernetes quantity of whole accelerators ("8", "8000m" is 8): false when it is not a
 * whole non-negative number. */
bool topo_quantity_whole(const char *s, unsigned *out);

/* What --explain-labels says beside node i's keys (static text, NULL: nothing): that its NVLink
 * fabric is not COMPLETED (topo_cluster_node_nvl(), which also knows the rack), else the first
 * note of ex (e.g. the rack taken from the clique). ex may be NULL. */
const char *topo_labels_explain_note(const struct topo_cluster *c, size_t i,
                                     const struct topo_label_explain *ex);

/* Hygiene warnings over a sealed cluster: a rack seen under two blocks, a multi-node domain
 * spanning two racks, nodes missing a level that others have, a domain size that disagrees with
 * the accelerator count, NVL72 nodes without a clique (their fabric is not COMPLETED). Each warning
 * is one line of text; the caller frees the array and each string with topo_warnings_free().
 * Returns the number of warnings (0 and *out NULL when clean). */
size_t topo_labels_hygiene(const struct topo_cluster *c, char ***out);
void topo_warnings_free(char **w, size_t n);

#endif
