/* SPDX-License-Identifier: Apache-2.0 */
/* topology/labels.c - node labels -> model values (DESIGN.md precedence table) and hygiene checks.
 * Pure string code: no JSON, no I/O, no logging (warnings are returned, not printed). */
#include "topology/labels.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The precedence tables: docs/labels.md gives each key's vendor, what it means and where that is
 * written. topox.io keys first; within a level a finer key before a coarser one, so that a coarser
 * group never stands in for a finer level. Values are opaque ids (topograph replaces one longer
 * than 63 characters by an FNV-64a hash), never parsed, except GFD's clique below.
 */
static const char *const domain_keys[] = {
    "topox.io/nvlink-domain",
    TOPO_LABEL_CLIQUE,                            /* GFD: NVL partition <ClusterUUID>.<CliqueID> */
    "accelerator.topograph.run/domain",           /* topograph v1.0.0 */
    "network.topology.nvidia.com/accelerator",    /* topograph, earlier */
    "network.topology.kubernetes.io/accelerator", /* topograph, oldest */
    "ds.coreweave.com/nvlink.domain",             /* CoreWeave GB200 NVLink domain */
    "oci.oraclecloud.com/host.gpu_memory_fabric_id", /* OCI GB200 GPU memory fabric */
    "topology.k8s.aws/ultraserver-id",               /* AWS UltraServer (HyperPod) */
};
static const char *const rack_keys[] = {
    "topox.io/rack",
    "node.coreweave.cloud/rack", /* physical racks first: a leaf may serve several */
    "oci.oraclecloud.com/host.rack_id",
    "topology.kubernetes.io/rack", /* KEP-5732's example key; upstream TAS scheduler_perf nodes */
    "accelerator.topograph.run/sub-domain",   /* topograph v1.0.0: a rack inside the NVL domain */
    "fabric.topograph.run/tier-0",            /* topograph v1.0.0: switch nearest the node */
    "network.topology.nvidia.com/tier-0",     /* topograph, tier-N generation */
    "network.topology.nvidia.com/leaf",       /* topograph, leaf/spine/core generation */
    "network.topology.nvidia.com/block",      /* topograph, block/spine/datacenter: the leaf */
    "network.topology.kubernetes.io/block",   /* topograph, oldest: rack-level switch */
    "topology.kubernetes.io/network-level-1", /* topograph, first labeler: nearest switch */
    "topology.k8s.aws/network-node-layer-4",  /* AWS, 4-layer fabrics: the bottom layer */
    "topology.k8s.aws/network-node-layer-3",  /* AWS, 3-layer fabrics: the bottom layer */
    "cloud.google.com/gce-topology-subblock",
    "oci.oraclecloud.com/rdma.local_block_id",
    "backend.coreweave.cloud/leafgroup",
    "crusoe.ai/pod.id",
    "volcano.sh/tor",
};
static const char *const block_keys[] = {
    "topox.io/block",
    "fabric.topograph.run/tier-1",
    "network.topology.nvidia.com/tier-1",
    "network.topology.nvidia.com/spine",
    "network.topology.kubernetes.io/spine",
    "topology.kubernetes.io/network-level-2",
    "topology.k8s.aws/network-node-layer-3", /* only when layer-4 took the rack */
    "topology.k8s.aws/network-node-layer-2",
    "cloud.google.com/gce-topology-block",
    "oci.oraclecloud.com/host.network_block_id",
    "oci.oraclecloud.com/rdma.network_block_id",
    "backend.coreweave.cloud/superpod",
    "crusoe.ai/ib.partition.id",
};
static const char *const zone_keys[] = {
    "topology.kubernetes.io/zone",
};
static const char *const resource_names[] = {
    "nvidia.com/gpu",        "amd.com/gpu",      "huawei.com/Ascend910", "huawei.com/Ascend910B",
    "huawei.com/Ascend310P", "gpu.intel.com/xe", "gpu.intel.com/i915",   "habana.ai/gaudi",
    "aws.amazon.com/neuron", "google.com/tpu",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *topo_level_name(enum topo_level level)
{
    static const char *const names[] = {"domain", "rack", "block", "zone"};
    return (unsigned)level < TOPO_LEVEL_COUNT ? names[level] : "unknown";
}

const struct topo_label_config *topo_label_config_default(void)
{
    static const struct topo_label_config cfg = {
        {domain_keys, rack_keys, block_keys, zone_keys},
        {NELEM(domain_keys), NELEM(rack_keys), NELEM(block_keys), NELEM(zone_keys)},
        resource_names,
        NELEM(resource_names),
    };
    return &cfg;
}

/* Value of key in kv, or NULL. Empty values count as absent (a label "" says nothing). */
static const char *kv_get(const struct topo_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (kv[i].key && kv[i].value && kv[i].value[0] && strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    }
    return NULL;
}

bool topo_quantity_whole(const char *s, unsigned *out)
{
    uint64_t v = 0;
    const char *p = s;

    if (!s || !*s)
        return false;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        /* checked before the multiply: v * 10 + d never passes UINT32_MAX * 1000 */
        if (v > (UINT32_MAX * UINT64_C(1000) - d) / 10)
            return false;
        v = v * 10 + d;
        p++;
    }
    if (p == s)
        return false;
    if (*p == 'm') {
        /* milli-units: whole only when divisible by 1000 */
        if (p[1] != '\0' || v % 1000 != 0)
            return false;
        v /= 1000;
    } else if (*p == 'k' && p[1] == '\0') {
        if (v > UINT32_MAX / 1000)
            return false;
        v *= 1000;
    } else if (*p != '\0') {
        return false;
    }
    if (v > UINT32_MAX)
        return false;
    *out = (unsigned)v;
    return true;
}

static enum tpx_code read_count(const struct topo_kv *labels, size_t n, const char *key,
                                unsigned *out, struct tpx_err *err)
{
    const char *v = kv_get(labels, n, key);

    if (!v)
        return TPX_OK;
    if (!topo_quantity_whole(v, out) || *out == 0)
        return tpx_err_set(err, TPX_EINVAL, "label '%s': '%s' is not a positive whole number", key,
                           v);
    if (*out > TOPO_ACCEL_MAX)
        return tpx_err_set(err, TPX_EINVAL, "label '%s': %u is more than %u", key, *out,
                           TOPO_ACCEL_MAX);
    return TPX_OK;
}

/* An NVL72 part as GFD names it (nvidia.com/gpu.product is NVML's name, e.g. "NVIDIA-GB200"). */
static bool is_nvl_part(const char *product)
{
    return product && (strcasestr(product, "GB200") || strcasestr(product, "GB300"));
}

/* True when key already won a finer level than lv for this node. */
static bool key_taken(const char *const *won, int lv, const char *key)
{
    for (int f = 0; f < lv; f++) {
        if (won[f] && strcmp(won[f], key) == 0)
            return true;
    }
    return false;
}

/* Guess the fabric from NVIDIA GPU Feature Discovery labels when topox.io/interconnect is absent.
 */
static enum topo_fabric guess_fabric(const struct topo_kv *labels, size_t n, bool multinode,
                                     unsigned accel)
{
    const char *product = kv_get(labels, n, "nvidia.com/gpu.product");

    if (multinode)
        return TOPO_FABRIC_NVLINK;
    if (!product)
        return TOPO_FABRIC_UNKNOWN;
    if (strcasestr(product, "PCIE"))
        return TOPO_FABRIC_PCIE;
    if (strcasestr(product, "SXM") || strcasestr(product, "HBM3") || strcasestr(product, "GB200") ||
        strcasestr(product, "B200") || strcasestr(product, "H200") || strcasestr(product, "DGX"))
        return accel >= 8 ? TOPO_FABRIC_NVSWITCH : TOPO_FABRIC_NVLINK;
    return TOPO_FABRIC_UNKNOWN;
}

enum tpx_code topo_labels_decode(const struct topo_label_config *cfg, const struct topo_kv *labels,
                                 size_t nlabels, const struct topo_kv *alloc, size_t nalloc,
                                 struct topo_node_info *out, struct topo_label_explain *explain,
                                 struct tpx_err *err)
{
    const char *val[TOPO_LEVEL_COUNT] = {NULL};
    const char *won[TOPO_LEVEL_COUNT] = {NULL};
    const char *v;
    const char *name = out->name;
    enum tpx_code rc;

    const char *note[TOPO_LEVEL_COUNT] = {NULL};
    bool rack_from_domain = false;
    enum topo_nvl nvl = TOPO_NVL_NONE;

    if (!cfg)
        cfg = topo_label_config_default();
    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        for (size_t k = 0; k < cfg->nkeys[lv] && !val[lv]; k++) {
            if (key_taken(won, lv, cfg->keys[lv][k]))
                continue;
            val[lv] = kv_get(labels, nlabels, cfg->keys[lv][k]);
            if (val[lv])
                won[lv] = cfg->keys[lv][k];
        }
    }
    /* GFD omits the clique unless every fabric-attached GPU reports GPU_FABRIC_STATE_COMPLETED with
     * a ClusterUUID (k8s-device-plugin internal/lm/imex.go, go-nvlib IsFabricAttached) */
    if (kv_get(labels, nlabels, TOPO_LABEL_CLIQUE)) {
        nvl = TOPO_NVL_COMPLETED;
    } else if (is_nvl_part(kv_get(labels, nlabels, "nvidia.com/gpu.product"))) {
        nvl = TOPO_NVL_INCOMPLETE;
        if (val[TOPO_LEVEL_DOMAIN])
            note[TOPO_LEVEL_DOMAIN] = "domain label ignored: NVL72 node without a clique";
        val[TOPO_LEVEL_DOMAIN] = NULL;
        won[TOPO_LEVEL_DOMAIN] = NULL;
    }
    if (!val[TOPO_LEVEL_RACK] && won[TOPO_LEVEL_DOMAIN] &&
        strcmp(won[TOPO_LEVEL_DOMAIN], TOPO_LABEL_CLIQUE) == 0) {
        rack_from_domain = true;
        won[TOPO_LEVEL_RACK] = TOPO_LABEL_CLIQUE;
        note[TOPO_LEVEL_RACK] = "rack: the clique's ClusterUUID (no rack label)";
    }
    memset(out, 0, sizeof(*out));
    out->name = name;
    out->nvl = nvl;
    out->rack_from_domain = rack_from_domain;
    out->domain = val[TOPO_LEVEL_DOMAIN];
    out->rack = val[TOPO_LEVEL_RACK];
    out->block = val[TOPO_LEVEL_BLOCK];
    out->zone = val[TOPO_LEVEL_ZONE];
    if (explain) {
        for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
            explain->key[lv] = won[lv];
            explain->note[lv] = note[lv];
        }
    }
    /* the first configured resource with a whole positive quantity; else the first present */
    for (size_t k = 0; k < cfg->nresources; k++) {
        unsigned q = 0;
        v = kv_get(alloc, nalloc, cfg->resources[k]);
        if (!v)
            continue;
        if (!topo_quantity_whole(v, &q))
            return tpx_err_set(err, TPX_EINVAL, "allocatable '%s': '%s' is not a whole number",
                               cfg->resources[k], v);
        if (q > TOPO_ACCEL_MAX)
            return tpx_err_set(err, TPX_EINVAL,
                               "allocatable '%s': %u is more than %u accelerators per node",
                               cfg->resources[k], q, TOPO_ACCEL_MAX);
        if (!out->resource || (out->accel_alloc == 0 && q > 0)) {
            out->resource = cfg->resources[k];
            out->accel_alloc = q;
        }
        if (q > 0)
            break;
    }
    rc = read_count(labels, nlabels, "topox.io/domain-size", &out->domain_size, err);
    if (rc == TPX_OK)
        rc = read_count(labels, nlabels, "topox.io/domains-per-node", &out->domains_per_node, err);
    if (rc != TPX_OK)
        return rc;
    /* what `topox label` counted (docs/label.md); a value that is not a count says nothing, so
     * it stays unknown rather than refusing the node */
    v = kv_get(labels, nlabels, "topox.io/rdma-nics");
    if (v && topo_quantity_whole(v, &out->rdma_nics) && out->rdma_nics <= TOPO_ACCEL_MAX)
        out->rdma_known = true;
    else
        out->rdma_nics = 0;
    v = kv_get(labels, nlabels, "topox.io/interconnect");
    if (v) {
        if (!topo_fabric_parse(v, &out->fabric))
            return tpx_err_set(err, TPX_EINVAL,
                               "label 'topox.io/interconnect': unknown value '%s' (nvswitch, "
                               "nvlink, xgmi, hccs or pcie)",
                               v);
    } else {
        out->fabric = guess_fabric(labels, nlabels, out->domain != NULL, out->accel_alloc);
    }
    return TPX_OK;
}

/* --- hygiene -----------------------------------------------------------------------------------
 */

#define HYGIENE_MAX 64

struct warn_list {
    char **w;
    size_t n;
    size_t dropped;
};

__attribute__((format(printf, 2, 3))) static void warn(struct warn_list *wl, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    char **nw;

    if (wl->n >= HYGIENE_MAX) {
        wl->dropped++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    nw = realloc(wl->w, (wl->n + 1) * sizeof(*nw));
    if (!nw)
        return;
    wl->w = nw;
    wl->w[wl->n] = strdup(line);
    if (wl->w[wl->n])
        wl->n++;
}

struct rb {
    const char *rack;
    const char *block;
    const char *node;
};

static int cmp_rb(const void *a, const void *b)
{
    const struct rb *x = a, *y = b;
    int c = strcmp(x->rack, y->rack);

    if (c)
        return c;
    return strcmp(x->block, y->block);
}

static void check_rack_blocks(const struct topo_cluster *c, struct warn_list *wl)
{
    size_t n = topo_cluster_node_count(c), m = 0;
    struct rb *a = calloc(n ? n : 1, sizeof(*a));

    if (!a)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct topo_node_info *in = topo_cluster_node(c, i);
        if (in->rack && in->block)
            a[m++] = (struct rb){in->rack, in->block, in->name};
    }
    qsort(a, m, sizeof(*a), cmp_rb);
    for (size_t i = 1; i < m; i++) {
        if (strcmp(a[i].rack, a[i - 1].rack) != 0 || strcmp(a[i].block, a[i - 1].block) == 0)
            continue;
        warn(wl,
             "rack '%s' is labelled under blocks '%s' (node '%s') and '%s' (node '%s'): they are "
             "treated as two racks",
             a[i].rack, a[i - 1].block, a[i - 1].node, a[i].block, a[i].node);
        while (i + 1 < m && strcmp(a[i + 1].rack, a[i].rack) == 0)
            i++;
    }
    free(a);
}

static void check_domains(const struct topo_cluster *c, struct warn_list *wl)
{
    for (size_t d = 0; d < topo_cluster_domain_count(c); d++) {
        size_t nn;
        const size_t *nodes;

        if (!topo_cluster_domain_is_multinode(c, d))
            continue;
        nodes = topo_cluster_domain_nodes(c, d, &nn);
        for (size_t k = 1; k < nn; k++) {
            size_t r0 = topo_cluster_node_rack(c, nodes[0]),
                   rk = topo_cluster_node_rack(c, nodes[k]);
            if (r0 == rk)
                continue;
            warn(wl, "interconnect domain '%s' spans racks '%s' (node '%s') and '%s' (node '%s')",
                 topo_cluster_domain_name(c, d), topo_cluster_rack_name(c, r0),
                 topo_cluster_node(c, nodes[0])->name, topo_cluster_rack_name(c, rk),
                 topo_cluster_node(c, nodes[k])->name);
            break;
        }
    }
}

static void check_missing(const struct topo_cluster *c, struct warn_list *wl)
{
    size_t n = topo_cluster_node_count(c);
    size_t have[TOPO_LEVEL_COUNT] = {0}, accel_nodes = 0;
    const char *missing_example[TOPO_LEVEL_COUNT] = {NULL};

    for (size_t i = 0; i < n; i++) {
        const struct topo_node_info *in = topo_cluster_node(c, i);
        const char *rack = in->rack || !in->rack_from_domain ? in->rack : in->domain;
        const char *v[TOPO_LEVEL_COUNT] = {in->domain, rack, in->block, in->zone};
        bool accel = in->accel_alloc > 0;

        accel_nodes += accel;
        for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
            if (lv == TOPO_LEVEL_DOMAIN && !accel)
                continue;
            if (v[lv])
                have[lv]++;
            else if (!missing_example[lv])
                missing_example[lv] = in->name;
        }
    }
    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        size_t total = lv == TOPO_LEVEL_DOMAIN ? accel_nodes : n;
        if (have[lv] == 0 || have[lv] == total)
            continue;
        warn(wl, "%s label missing on %zu of %zu nodes (e.g. '%s')",
             topo_level_name((enum topo_level)lv), total - have[lv], total, missing_example[lv]);
    }
}

static void check_sizes(const struct topo_cluster *c, struct warn_list *wl)
{
    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        const struct topo_node_info *in = topo_cluster_node(c, i);
        unsigned dpn = in->domains_per_node ? in->domains_per_node : 1;

        if (in->domain_size == 0 || in->accel_alloc == 0)
            continue;
        if (in->domain_size * dpn == in->accel_alloc)
            continue;
        warn(wl, "node '%s': domain size %u x %u domains = %u accelerators, but %u are allocatable",
             in->name, in->domain_size, dpn, in->domain_size * dpn, in->accel_alloc);
    }
}

static void check_nvl(const struct topo_cluster *c, struct warn_list *wl)
{
    size_t n = 0;
    const char *example = NULL;
    size_t example_i = 0;

    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        if (topo_cluster_node_nvl(c, i) != TOPO_NVL_INCOMPLETE)
            continue;
        if (!example) {
            example = topo_cluster_node(c, i)->name;
            example_i = i;
        }
        n++;
    }
    if (n == 0)
        return;
    warn(wl,
         "%s missing on %zu NVL72 node%s (e.g. '%s' in rack '%s'): the NVLink fabric is not "
         "COMPLETED there, so %s a single-node domain",
         TOPO_LABEL_CLIQUE, n, n == 1 ? "" : "s", example,
         topo_cluster_rack_name(c, topo_cluster_node_rack(c, example_i)),
         n == 1 ? "it is" : "each is");
}

const char *topo_labels_explain_note(const struct topo_cluster *c, size_t i,
                                     const struct topo_label_explain *ex)
{
    if (topo_cluster_node_nvl(c, i) == TOPO_NVL_INCOMPLETE)
        return "no " TOPO_LABEL_CLIQUE
               " on an NVL72 node: fabric not COMPLETED, single-node domain";
    for (int lv = 0; ex && lv < TOPO_LEVEL_COUNT; lv++) {
        if (ex->note[lv])
            return ex->note[lv];
    }
    return NULL;
}

size_t topo_labels_hygiene(const struct topo_cluster *c, char ***out)
{
    struct warn_list wl = {NULL, 0, 0};

    check_nvl(c, &wl);
    check_rack_blocks(c, &wl);
    check_domains(c, &wl);
    check_missing(c, &wl);
    check_sizes(c, &wl);
    if (wl.dropped) {
        size_t d = wl.dropped;
        wl.dropped = 0;
        wl.n--; /* make room for the summary line, counting the dropped one too */
        free(wl.w[wl.n]);
        warn(&wl, "... and %zu more label hygiene warnings", d + 1);
    }
    *out = wl.w;
    return wl.n;
}

void topo_warnings_free(char **w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i]);
    free(w);
}
