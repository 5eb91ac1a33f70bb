/* SPDX-License-Identifier: Apache-2.0 */
/* objects/cluster_load.c - Node lists -> sealed topo_cluster; Pod lists -> ledger usage. */
#include "objects/cluster_load.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "objects/dra.h"
#include "objects/podfacts.h"
#include "objects/schedfacts.h"
#include "objects/yamljson.h"

struct loader {
    const struct topo_label_config *cfg;
    struct topo_cluster *c;
    struct topo_label_explain *explain;
    size_t nexplain;
    size_t aexplain;
    struct obj_node_meta *meta; /* nexplain: what kube-scheduler's filters read of each node */
    size_t ameta;
    char **warn;
    size_t nwarn;
    size_t nodes;
    const struct obj_yaml_docs *pos; /* the file being read, for "FILE:LINE:"; NULL: none */
    const struct obj_dra *dra;       /* a snapshot's ResourceSlices; NULL: none */
};

/* Prefix err with "name:LINE" where v starts in pos (just "name" without a position). */
static void prefix_at(const struct obj_yaml_docs *pos, const json_t *v, const char *name,
                      struct tpx_err *err)
{
    unsigned line;

    if (pos && obj_yaml_pos(pos, v, &line, NULL))
        tpx_err_prefix(err, "%s:%u", name, line);
    else
        tpx_err_prefix(err, "%s", name);
}

__attribute__((format(printf, 2, 3))) static void note(struct loader *ld, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    char **nw;

    if (ld->nwarn >= 64)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    nw = realloc(ld->warn, (ld->nwarn + 1) * sizeof(*nw));
    if (!nw)
        return;
    ld->warn = nw;
    ld->warn[ld->nwarn] = strdup(line);
    if (ld->warn[ld->nwarn])
        ld->nwarn++;
}

static enum tpx_code add_node(struct loader *ld, const json_t *node, const char *name,
                              struct tpx_err *err)
{
    struct topo_node_info info;
    struct topo_label_explain ex;

    memset(&info, 0, sizeof(info));
    if (obj_node_from_json(node, ld->cfg, &info, &ex, err) != TPX_OK)
        goto fail;
    if (ld->dra) {
        unsigned total, taken;
        /* DRA devices stand for the GPUs: allocatable need not list them (docs/dra.md) */
        obj_dra_node_count(ld->dra, info.name, &total, &taken);
        if (total) {
            info.accel_alloc = total;
            if (!info.resource)
                info.resource = obj_dra_resource(ld->dra);
        }
    }
    if (topo_cluster_add(ld->c, &info, err) != TPX_OK)
        goto fail;
    if (!TPX_GROW(ld->explain, ld->aexplain, ld->nexplain + 1) ||
        !TPX_GROW(ld->meta, ld->ameta, ld->nexplain + 1))
        return tpx_err_set(err, TPX_ENOMEM, "%s: out of memory", name);
    if (obj_node_meta_from_json(node, &ld->meta[ld->nexplain], err) != TPX_OK)
        return err->code;
    ld->explain[ld->nexplain++] = ex;
    ld->nodes++;
    return TPX_OK;
fail:
    prefix_at(ld->pos, node, name, err);
    return err->code;
}

static enum tpx_code add_doc(struct loader *ld, const json_t *doc, const char *name, unsigned depth,
                             struct tpx_err *err)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const json_t *items = json_object_get(doc, "items");

    if (!json_is_object(doc)) {
        note(ld, "%s: skipped a document that is not an object", name);
        return TPX_OK;
    }
    if (json_is_array(items) && depth == 0) {
        size_t i;
        const json_t *it;
        json_array_foreach(items, i, it)
        {
            if (add_doc(ld, it, name, depth + 1, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (obj_is_kind(doc, "", "Node"))
        return add_node(ld, doc, name, err);
    if (!kind && json_is_object(json_object_get(doc, "metadata")) &&
        json_is_object(json_object_get(doc, "status")))
        return add_node(ld, doc, name, err); /* items of a NodeList may omit kind */
    if (ld->dra && (obj_dra_is_object(doc) || obj_is_kind(doc, "", "Pod") ||
                    obj_is_kind(doc, "scheduling.k8s.io", "PodGroup")))
        return TPX_OK; /* the rest of a snapshot */
    note(ld, "%s: skipped %s '%s' (not a Node)", name, kind ? kind : "an object",
         json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"))
             ? json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"))
             : "?");
    return TPX_OK;
}

static enum tpx_code finish(struct loader *ld, const char *what,
                            struct obj_cluster_load_result *out, struct tpx_err *err)
{
    char **hyg = NULL;
    size_t nh;

    if (ld->nodes == 0)
        return tpx_err_set(err, TPX_EINVAL, "%s: no Node objects found", what);
    if (topo_cluster_seal(ld->c, err) != TPX_OK)
        return err->code;
    nh = topo_labels_hygiene(ld->c, &hyg);
    if (nh) {
        char **nw = realloc(ld->warn, (ld->nwarn + nh) * sizeof(*nw));
        if (!nw) {
            topo_warnings_free(hyg, nh);
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        }
        ld->warn = nw;
        memcpy(ld->warn + ld->nwarn, hyg, nh * sizeof(*hyg));
        ld->nwarn += nh;
        free(hyg);
    }
    out->cluster = ld->c;
    out->explain = ld->explain;
    out->meta = ld->meta;
    out->nmeta = ld->nexplain;
    out->warnings = ld->warn;
    out->nwarnings = ld->nwarn;
    memset(ld, 0, sizeof(*ld));
    return TPX_OK;
}

static void metas_free(struct obj_node_meta *meta, size_t n)
{
    for (size_t i = 0; meta && i < n; i++)
        obj_node_meta_release(&meta[i]);
    free(meta);
}

static void loader_release(struct loader *ld)
{
    metas_free(ld->meta, ld->nexplain);
    topo_cluster_free(ld->c);
    free(ld->explain);
    topo_warnings_free(ld->warn, ld->nwarn);
    memset(ld, 0, sizeof(*ld));
}

static enum tpx_code loader_init(struct loader *ld, const struct topo_label_config *cfg,
                                 struct obj_cluster_load_result *out, struct tpx_err *err)
{
    memset(ld, 0, sizeof(*ld));
    memset(out, 0, sizeof(*out));
    ld->cfg = cfg;
    ld->c = topo_cluster_new(err);
    return ld->c ? TPX_OK : err->code;
}

enum tpx_code obj_cluster_load_snapshot(json_t *const *docs, size_t ndocs, const char *name,
                                        const struct topo_label_config *cfg,
                                        const struct obj_dra *dra,
                                        struct obj_cluster_load_result *out, struct tpx_err *err)
{
    struct loader ld;

    if (loader_init(&ld, cfg, out, err) != TPX_OK)
        return err->code;
    ld.dra = dra;
    for (size_t i = 0; i < ndocs; i++) {
        if (add_doc(&ld, docs[i], name, 0, err) != TPX_OK)
            goto fail;
    }
    if (finish(&ld, name, out, err) != TPX_OK)
        goto fail;
    return TPX_OK;
fail:
    loader_release(&ld);
    return err->code;
}

enum tpx_code obj_cluster_load_docs(json_t *const *docs, size_t ndocs, const char *name,
                                    const struct topo_label_config *cfg,
                                    struct obj_cluster_load_result *out, struct tpx_err *err)
{
    return obj_cluster_load_snapshot(docs, ndocs, name, cfg, NULL, out, err);
}

enum tpx_code obj_cluster_load(const char *const *paths, size_t npaths,
                               const struct topo_label_config *cfg,
                               struct obj_cluster_load_result *out, struct tpx_err *err)
{
    struct loader ld;

    if (loader_init(&ld, cfg, out, err) != TPX_OK)
        return err->code;
    for (size_t p = 0; p < npaths; p++) {
        struct obj_yaml_docs d = {0};
        const char *name = strcmp(paths[p], "-") == 0 ? "<stdin>" : paths[p];

        if (obj_yaml_load_file(paths[p], OBJ_CLUSTER_MAX_FILE, &d, err) != TPX_OK)
            goto fail;
        ld.pos = &d;
        for (size_t i = 0; i < d.n; i++) {
            if (add_doc(&ld, d.docs[i], name, 0, err) != TPX_OK) {
                obj_yaml_docs_release(&d);
                goto fail;
            }
        }
        ld.pos = NULL;
        /* the cluster copied every string it keeps, so the documents can go now */
        obj_yaml_docs_release(&d);
    }
    if (finish(&ld, npaths == 1 ? paths[0] : "nodes", out, err) != TPX_OK)
        goto fail;
    return TPX_OK;
fail:
    loader_release(&ld);
    return err->code;
}

void obj_cluster_load_release(struct obj_cluster_load_result *r)
{
    if (!r)
        return;
    metas_free(r->meta, r->nmeta);
    topo_cluster_free(r->cluster);
    free(r->explain);
    topo_warnings_free(r->warnings, r->nwarnings);
    memset(r, 0, sizeof(*r));
}

/* --- pods --------------------------------------------------------------------------------------
 */

struct pods_in {
    const char *name;
    const struct obj_yaml_docs *pos;
    const struct topo_label_config *cfg;
    const struct obj_dra *dra;
};

/* A bound pod whose extended resource an allocated claim of the snapshot serves (KEP-5004): the
 * claim's devices are counted already. */
static bool served_by_claim(const struct obj_dra *dra, const json_t *pod)
{
    const char *claim = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "status"), "extendedResourceClaimStatus"),
        "resourceClaimName"));
    const char *ns =
        json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));

    return dra && claim && obj_dra_claim_allocated(dra, ns, claim);
}

static enum tpx_code apply_pod(struct pol_ledger *l, const json_t *pod, const struct pods_in *in,
                               size_t *applied, struct tpx_err *err)
{
    const char *name = in->name;
    const struct obj_yaml_docs *pos = in->pos;
    const struct topo_label_config *cfg = in->cfg;
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    unsigned accel = 0;
    size_t idx;

    if (!node || !*node)
        return TPX_OK;
    if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
        return TPX_OK;
    if (served_by_claim(in->dra, pod))
        return TPX_OK;
    if (obj_pod_accel(pod, cfg, &accel, NULL, err) != TPX_OK) {
        const char *pn =
            json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        tpx_err_prefix(err, "pod '%s'", pn ? pn : "?");
        prefix_at(pos, pod, name, err);
        return err->code;
    }
    if (accel == 0)
        return TPX_OK;
    idx = topo_cluster_find(pol_ledger_cluster(l), node);
    if (idx == TOPO_NONE)
        return TPX_OK;
    if (pol_ledger_use(l, idx, (int64_t)accel, err) != TPX_OK) {
        prefix_at(pos, pod, name, err);
        return err->code;
    }
    (*applied)++;
    return TPX_OK;
}

static enum tpx_code apply_doc(struct pol_ledger *l, const json_t *doc, const struct pods_in *in,
                               size_t *applied, struct tpx_err *err)
{
    const json_t *items = json_object_get(doc, "items");

    if (json_is_array(items)) {
        size_t i;
        const json_t *it;
        json_array_foreach(items, i, it)
        {
            /* items of a PodList may omit kind */
            bool pod = !json_object_get(it, "kind") || obj_is_kind(it, "", "Pod");
            if (pod && apply_pod(l, it, in, applied, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (obj_is_kind(doc, "", "Pod"))
        return apply_pod(l, doc, in, applied, err);
    return TPX_OK;
}

static enum tpx_code apply_docs(struct pol_ledger *l, json_t *const *docs, size_t ndocs,
                                const struct pods_in *in, size_t *applied, struct tpx_err *err)
{
    size_t count = 0;

    for (size_t i = 0; i < ndocs; i++) {
        if (apply_doc(l, docs[i], in, &count, err) != TPX_OK)
            return err->code;
    }
    if (applied)
        *applied = count;
    return TPX_OK;
}

enum tpx_code obj_cluster_apply_pods_docs(struct pol_ledger *l, json_t *const *docs, size_t ndocs,
                                          const char *name, const struct topo_label_config *cfg,
                                          size_t *applied, struct tpx_err *err)
{
    struct pods_in in = {name, NULL, cfg, NULL};

    return apply_docs(l, docs, ndocs, &in, applied, err);
}

enum tpx_code obj_cluster_apply_snapshot(struct pol_ledger *l, json_t *const *docs, size_t ndocs,
                                         const char *name, const struct topo_label_config *cfg,
                                         const struct obj_dra *dra, size_t *applied,
                                         struct tpx_err *err)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    struct pods_in in = {name, NULL, cfg, dra};

    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        unsigned total, taken;
        obj_dra_node_count(dra, topo_cluster_node(c, i)->name, &total, &taken);
        if (taken && pol_ledger_use(l, i, (int64_t)taken, err) != TPX_OK) {
            tpx_err_prefix(err, "%s: node '%s'", name, topo_cluster_node(c, i)->name);
            return err->code;
        }
    }
    return apply_docs(l, docs, ndocs, &in, applied, err);
}

enum tpx_code obj_cluster_apply_pods(struct pol_ledger *l, const char *path,
                                     const struct topo_label_config *cfg, size_t *applied,
                                     struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};
    enum tpx_code rc;

    if (obj_yaml_load_file(path, OBJ_CLUSTER_MAX_FILE, &d, err) != TPX_OK)
        return err->code;
    {
        struct pods_in in = {strcmp(path, "-") == 0 ? "<stdin>" : path, &d, cfg, NULL};
        rc = apply_docs(l, d.docs, d.n, &in, applied, err);
    }
    obj_yaml_docs_release(&d);
    return rc;
}

/* --- cluster -> NodeList -----------------------------------------------------------------------
 */

#define NODE_LABELS_MAX 16

static json_t *node_object(const struct topo_cluster *c, size_t i, obj_node_labels_fn labels_of)
{
    const struct topo_node_info *n = topo_cluster_node(c, i);
    struct topo_kv kv[NODE_LABELS_MAX];
    char storage[NODE_LABELS_MAX][64];
    size_t nl = labels_of ? labels_of(c, i, kv, storage, NODE_LABELS_MAX) : 0;
    char qty[32];
    json_t *labels = json_object();
    json_t *res = json_object();

    if (!labels || !res) {
        json_decref(labels);
        json_decref(res);
        return NULL;
    }
    json_object_set_new(labels, "kubernetes.io/hostname", json_string(n->name));
    for (size_t k = 0; k < nl; k++)
        json_object_set_new(labels, kv[k].key, json_string(kv[k].value));
    if (n->resource) {
        snprintf(qty, sizeof(qty), "%u", n->accel_alloc);
        json_object_set_new(res, n->resource, json_string(qty));
    }
    return json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:b}, s:{s:o, s:o, s:[{s:s, s:s, s:s}]}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", n->name, "labels",
                     labels, "spec", "unschedulable", n->unschedulable, "status", "allocatable",
                     res, "capacity", json_deep_copy(res), "conditions", "type", "Ready", "status",
                     n->unschedulable ? "False" : "True", "reason",
                     n->unschedulable ? "TopoxSynthetic" : "KubeletReady");
}

enum tpx_code obj_cluster_to_nodelist(const struct topo_cluster *c, obj_node_labels_fn labels_of,
                                      json_t **out, struct tpx_err *err)
{
    json_t *items = json_array();
    size_t n = topo_cluster_node_count(c);

    *out = NULL;
    if (!items)
        return tpx_err_set(err, TPX_ENOMEM, "node list: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *node = node_object(c, i, labels_of);
        if (!node || json_array_append_new(items, node) != 0) {
            json_decref(items);
            return tpx_err_set(err, TPX_ENOMEM, "node list: out of memory");
        }
    }
    *out = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "v1", "kind", "List", "metadata",
                     "resourceVersion", "", "items", items);
    if (!*out)
        return tpx_err_set(err, TPX_ENOMEM, "node list: out of memory");
    return TPX_OK;
}
