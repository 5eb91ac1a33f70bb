/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state_feed.c - watch events -> extender/state. Lists are applied as one batch
 * (ext_state_upsert_nodes rebuilds the snapshot once, not once per node); pods bound to a node the
 * state does not know yet wait in `pending` until that node arrives. */
#include "extender/state_feed.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "extender/podfacts.h"
#include "common/banned.h"

struct ext_state_feed {
    struct ext_state *st;
    const struct topo_label_config *cfg;
    bool in_list[EXT_KIND_COUNT];
    bool synced[EXT_KIND_COUNT];
    json_t *batch[EXT_KIND_COUNT]; /* objects of a list in progress */
    json_t *nodes;                 /* name -> true: what the state got from us */
    json_t *pods;                  /* uid -> true */
    json_t *pending;               /* uid -> Pod bound to a node not known yet */
    unsigned long refused;
};

static const char *meta(json_t *obj, const char *key)
{
    json_t *v = json_object_get(json_object_get(obj, "metadata"), key);

    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const char *spec_node(json_t *pod)
{
    json_t *v = json_object_get(json_object_get(pod, "spec"), "nodeName");

    return json_is_string(v) && *json_string_value(v) ? json_string_value(v) : NULL;
}

static bool is_finished(json_t *pod)
{
    json_t *v = json_object_get(json_object_get(pod, "status"), "phase");
    const char *p = json_is_string(v) ? json_string_value(v) : "";

    return strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0;
}

static void refuse(struct ext_state_feed *f, const char *what, const char *name,
                   const struct tpx_err *e)
{
    f->refused++;
    TPX_LOG(TPX_WARN, "watch object ignored", TPX_S("kind", what), TPX_S("name", name ? name : ""),
            TPX_S("err", e->msg));
}

/* ---- pods ------------------------------------------------------------------------------- */

static void drop_pod(struct ext_state_feed *f, const char *uid)
{
    if (!uid)
        return;
    ext_state_remove_pod(f->st, uid);
    json_object_del(f->pods, uid);
    json_object_del(f->pending, uid);
}

/* Give one Pod to the state. */
static void apply_pod(struct ext_state_feed *f, json_t *pod)
{
    const char *uid = meta(pod, "uid");
    const char *name = meta(pod, "name");
    const char *node = spec_node(pod);
    struct ext_pod_facts store;
    struct pol_workload wl;
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_err ignore = TPX_ERR_INIT;
    bool has_wl;

    if (!uid) {
        tpx_err_set(&e, TPX_EINVAL, "pod without metadata.uid");
        refuse(f, "pod", name, &e);
        return;
    }
    if (is_finished(pod)) {
        drop_pod(f, uid);
        return;
    }
    if (!node)
        return; /* not bound yet: the scheduler will ask about it */
    memset(&store, 0, sizeof(store));
    if (ext_pod_facts_from_json_cfg(pod, f->cfg, &store, &e) != TPX_OK) {
        refuse(f, "pod", name, &e);
        return;
    }
    /* A pod whose intent cannot be read still holds its accelerators. */
    has_wl = pol_workload_infer(&store.facts, &wl, &ignore) == TPX_OK;
    if (ext_state_upsert_pod(f->st, uid, name ? name : uid, node, store.facts.accel,
                             has_wl ? &wl : NULL, &e) == TPX_OK) {
        json_object_set_new(f->pods, uid, json_true());
        json_object_del(f->pending, uid);
    } else if (e.code == TPX_ENOENT) {
        json_object_set(f->pending, uid, pod);
    } else {
        refuse(f, "pod", name, &e);
    }
    ext_pod_facts_release(&store);
}

static void retry_pending(struct ext_state_feed *f)
{
    json_t *copy = json_copy(f->pending);
    const char *uid;
    json_t *pod;

    json_object_foreach(copy, uid, pod)
    {
        apply_pod(f, pod);
    }
    json_decref(copy);
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* Give nodes to the state in one batch; returns the names taken (a new object). */
static json_t *apply_nodes(struct ext_state_feed *f, json_t *arr)
{
    size_t n = json_array_size(arr);
    struct topo_node_info *infos = calloc(n ? n : 1, sizeof(*infos));
    json_t *names = json_object();
    size_t k = 0;
    json_t *node;
    size_t i;
    struct tpx_err e = TPX_ERR_INIT;

    if (!infos || !names) {
        free(infos);
        return names;
    }
    json_array_foreach(arr, i, node)
    {
        struct tpx_err ne = TPX_ERR_INIT;

        if (ext_node_from_json(node, f->cfg, &infos[k], NULL, &ne) != TPX_OK) {
            refuse(f, "node", meta(node, "name"), &ne);
            continue;
        }
        json_object_set_new(names, infos[k].name, json_true());
        k++;
    }
    /* infos borrow their strings from arr, which lives until this returns. */
    if (k > 0 && ext_state_upsert_nodes(f->st, infos, k, NULL, &e) != TPX_OK) {
        refuse(f, "node", "(batch)", &e);
        json_object_clear(names);
    }
    free(infos);
    return names;
}

static void drop_node(struct ext_state_feed *f, const char *name)
{
    struct tpx_err ignore = TPX_ERR_INIT;

    if (!name)
        return;
    ext_state_remove_node(f->st, name, &ignore);
    json_object_del(f->nodes, name);
}

/* ---- the sink --------------------------------------------------------------------------- */

static void on_reset(void *ctx, enum ext_kind kind)
{
    struct ext_state_feed *f = ctx;

    f->in_list[kind] = true;
    json_array_clear(f->batch[kind]);
}

static void on_upsert(void *ctx, enum ext_kind kind, json_t *obj)
{
    struct ext_state_feed *f = ctx;

    if (f->in_list[kind]) {
        json_array_append(f->batch[kind], obj);
        return;
    }
    if (kind == EXT_KIND_POD) {
        apply_pod(f, obj);
    } else {
        json_t *one = json_array();
        json_t *names;
        const char *name;
        json_t *v;

        json_array_append(one, obj);
        names = apply_nodes(f, one);
        json_object_foreach(names, name, v)
        {
            json_object_set_new(f->nodes, name, json_true());
        }
        json_decref(names);
        json_decref(one);
        retry_pending(f);
    }
}

static void on_remove(void *ctx, enum ext_kind kind, json_t *obj)
{
    struct ext_state_feed *f = ctx;

    if (kind == EXT_KIND_POD)
        drop_pod(f, meta(obj, "uid"));
    else
        drop_node(f, meta(obj, "name"));
}

static void on_synced(void *ctx, enum ext_kind kind)
{
    struct ext_state_feed *f = ctx;
    json_t *batch = f->batch[kind];
    const char *key;
    json_t *v;
    void *tmp;

    f->in_list[kind] = false;
    if (kind == EXT_KIND_NODE) {
        json_t *names = apply_nodes(f, batch);

        /* Nodes the new list lacks were deleted while we were not watching. */
        json_object_foreach_safe(f->nodes, tmp, key, v)
        {
            if (!json_object_get(names, key))
                drop_node(f, key);
        }
        json_object_update(f->nodes, names);
        json_decref(names);
        retry_pending(f);
    } else {
        json_t *seen = json_object();
        json_t *pod;
        size_t i;

        json_array_foreach(batch, i, pod)
        {
            const char *uid = meta(pod, "uid");

            if (uid)
                json_object_set_new(seen, uid, json_true());
            apply_pod(f, pod);
        }
        json_object_foreach_safe(f->pods, tmp, key, v)
        {
            if (!json_object_get(seen, key))
                drop_pod(f, key);
        }
        json_object_foreach_safe(f->pending, tmp, key, v)
        {
            if (!json_object_get(seen, key))
                json_object_del(f->pending, key);
        }
        json_decref(seen);
    }
    json_array_clear(batch);
    f->synced[kind] = true;
    if (f->synced[EXT_KIND_NODE] && f->synced[EXT_KIND_POD])
        ext_state_mark_synced(f->st);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

struct ext_state_feed *ext_state_feed_new(struct ext_state *st, const struct topo_label_config *cfg,
                                          struct tpx_err *err)
{
    struct ext_state_feed *f = calloc(1, sizeof(*f));

    if (f) {
        f->st = st;
        f->cfg = cfg;
        f->batch[0] = json_array();
        f->batch[1] = json_array();
        f->nodes = json_object();
        f->pods = json_object();
        f->pending = json_object();
    }
    if (!f || !f->batch[0] || !f->batch[1] || !f->nodes || !f->pods || !f->pending) {
        ext_state_feed_free(f);
        tpx_err_set(err, TPX_ENOMEM, "out of memory creating the state feed");
        return NULL;
    }
    ext_state_require_sync(st);
    return f;
}

void ext_state_feed_sink(struct ext_state_feed *f, struct ext_watch_sink *out)
{
    out->ctx = f;
    out->reset = on_reset;
    out->upsert = on_upsert;
    out->remove = on_remove;
    out->synced = on_synced;
}

void ext_state_feed_stats(const struct ext_state_feed *f, struct ext_state_feed_stats *out)
{
    out->nodes = json_object_size(f->nodes);
    out->pods = json_object_size(f->pods);
    out->pending = json_object_size(f->pending);
    out->refused = f->refused;
}

void ext_state_feed_free(struct ext_state_feed *f)
{
    if (!f)
        return;
    json_decref(f->batch[0]);
    json_decref(f->batch[1]);
    json_decref(f->nodes);
    json_decref(f->pods);
    json_decref(f->pending);
    free(f);
}
