/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state_feed.c - watch events -> extender/state. A list arrives item by item as its pages
 * are parsed: pods go to the state at once, nodes are kept as compact topo_node_info copies and
 * handed over in one batch when the list completes (ext_state_upsert_nodes rebuilds the snapshot
 * once, not once per node). During a list only the names/uids seen are remembered, for the relist
 * rule. Pods bound to a node the state does not know yet wait in `pending` as plain C facts (never
 * as json_t objects) until that node arrives. */
#include "extender/state_feed.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/map.h"
#include "objects/podfacts.h"
#include "common/banned.h"

/* A bound pod waiting for its node: what ext_state_upsert_pod() needs and nothing more. The
 * workload's scalar fields are copied one by one and its three strings live in `str` with uid,
 * name and node, so a pending pod costs about 150 bytes instead of a whole Pod object or a 700-byte
 * struct pol_workload. Keep pend_pack()/pend_unpack() in step with struct pol_workload. */
struct pend {
    struct pend *next;
    const char *uid, *name, *node, *group, *display, *resource; /* all inside str */
    const char *tp_source;
    unsigned accel, tp, pp, dp, ep, accel_per_pod, group_size, num_ubatches, model_layers;
    int pod_index;
    enum pol_scope scope;
    bool has_wl, has_intent, preferred, tp_explicit, pp_explicit, size_explicit, certain;
    char str[]; /* uid, name, node, group, display, resource, each NUL-terminated */
};

/* uid (borrowed from the entry) -> struct pend (owned). */
struct pend_table {
    struct tpx_map m;
};

/* Nodes of a list in progress; every string of nodes[i] lives in the one block strs[i]. */
struct node_batch {
    struct topo_node_info *nodes;
    char **strs;
    size_t n, alloc;
};

struct ext_state_feed {
    struct ext_state *st;
    const struct topo_label_config *cfg;
    bool in_list[KUBE_KIND_COUNT];
    bool synced[KUBE_KIND_COUNT];
    struct node_batch batch; /* nodes of a node list in progress */
    json_t *seen;            /* uid -> true: pods of a pod list in progress */
    json_t *nodes;           /* name -> true: what the state got from us */
    json_t *pods;            /* uid -> true */
    struct pend_table pending;
    time_t pod_list_at; /* when the pod list in progress started */
    unsigned long refused;
    unsigned long pruned;
};

/* ---- pending pods ----------------------------------------------------------------------- */

static void pend_del(struct pend_table *t, const char *uid)
{
    union tpx_map_val old;

    if (tpx_map_del(&t->m, uid, &old))
        free(old.ptr);
}

/* Take ownership of p (freed on failure), replacing an entry with the same uid. */
static bool pend_put(struct pend_table *t, struct pend *p)
{
    struct pend *old = tpx_map_get(&t->m, p->uid);
    struct tpx_err e = TPX_ERR_INIT;

    if (tpx_map_put(&t->m, p->uid, p, &e) != TPX_OK) {
        free(p);
        return false;
    }
    free(old); /* after the put: the map pointed at its uid until then */
    return true;
}

/* Unlink every entry and return them as one list (the table is left empty). */
static struct pend *pend_detach(struct pend_table *t)
{
    struct pend *all = NULL;
    union tpx_map_val v;

    for (size_t pos = 0; tpx_map_next(&t->m, &pos, NULL, &v);) {
        struct pend *q = v.ptr;

        q->next = all;
        all = q;
    }
    tpx_map_clear(&t->m);
    return all;
}

static void pend_release(struct pend_table *t)
{
    struct pend *p = pend_detach(t);

    while (p) {
        struct pend *next = p->next;

        free(p);
        p = next;
    }
    tpx_map_release(&t->m);
}

static char *put_str(char *at, const char **field, const char *s)
{
    size_t n = strlen(s) + 1;

    memcpy(at, s, n);
    *field = at;
    return at + n;
}

/* A pending entry for these facts, or NULL when out of memory. */
static struct pend *pend_pack(const char *uid, const char *name, const char *node, unsigned accel,
                              const struct pol_workload *wl)
{
    const char *group = wl ? wl->group : "";
    const char *display = wl ? wl->display : "";
    const char *resource = wl ? wl->resource : "";
    size_t len = strlen(uid) + strlen(name) + strlen(node) + strlen(group) + strlen(display) +
                 strlen(resource) + 6;
    struct pend *p = calloc(1, sizeof(*p) + len);
    char *at;

    if (!p)
        return NULL;
    at = put_str(p->str, &p->uid, uid);
    at = put_str(at, &p->name, name);
    at = put_str(at, &p->node, node);
    at = put_str(at, &p->group, group);
    at = put_str(at, &p->display, display);
    put_str(at, &p->resource, resource);
    p->accel = accel;
    p->has_wl = wl != NULL;
    if (wl) {
        p->has_intent = wl->has_intent;
        p->tp = wl->tp;
        p->pp = wl->pp;
        p->dp = wl->dp;
        p->accel_per_pod = wl->accel_per_pod;
        p->group_size = wl->group_size;
        p->pod_index = wl->pod_index;
        p->scope = wl->scope;
        p->preferred = wl->preferred;
        p->num_ubatches = wl->num_ubatches;
        p->model_layers = wl->model_layers;
        p->tp_explicit = wl->tp_explicit;
        p->tp_source = wl->tp_source;
        p->pp_explicit = wl->pp_explicit;
        p->size_explicit = wl->size_explicit;
        p->ep = wl->layout.ep;
        p->certain = wl->layout.certain;
    }
    return p;
}

static void copy_key(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void pend_unpack(const struct pend *p, struct pol_workload *wl)
{
    memset(wl, 0, sizeof(*wl));
    wl->has_intent = p->has_intent;
    wl->tp = p->tp;
    wl->pp = p->pp;
    wl->dp = p->dp;
    wl->accel_per_pod = p->accel_per_pod;
    wl->group_size = p->group_size;
    wl->pod_index = p->pod_index;
    copy_key(wl->group, sizeof(wl->group), p->group);
    copy_key(wl->display, sizeof(wl->display), p->display);
    wl->scope = p->scope;
    wl->preferred = p->preferred;
    wl->num_ubatches = p->num_ubatches;
    wl->model_layers = p->model_layers;
    wl->tp_explicit = p->tp_explicit;
    wl->tp_source = p->tp_source;
    wl->pp_explicit = p->pp_explicit;
    wl->size_explicit = p->size_explicit;
    wl->layout.ep = p->ep;
    wl->layout.certain = p->certain;
    wl->layout.engine = "";
    for (size_t k = 0; k < POL_NSIZES; k++)
        wl->layout.origin[k].argi = -1;
    copy_key(wl->resource, sizeof(wl->resource), p->resource);
}

/* ---- node batches ----------------------------------------------------------------------- */

static const char *dup_into(char **at, const char *s)
{
    const char *r;
    size_t n;

    if (!s)
        return NULL;
    n = strlen(s) + 1;
    memcpy(*at, s, n);
    r = *at;
    *at += n;
    return r;
}

static size_t len0(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* Append a copy of *in (its strings too, in one block). false when out of memory. */
static bool batch_add(struct node_batch *nb, const struct topo_node_info *in)
{
    size_t len = len0(in->name) + len0(in->rack) + len0(in->block) + len0(in->zone) +
                 len0(in->domain) + len0(in->resource);
    struct topo_node_info *out;
    char *block;
    char *at;

    if (nb->n == nb->alloc) {
        size_t alloc = nb->alloc ? nb->alloc * 2 : 256;
        struct topo_node_info *nodes = realloc(nb->nodes, alloc * sizeof(*nodes));
        char **strs;

        if (!nodes)
            return false;
        nb->nodes = nodes;
        strs = realloc(nb->strs, alloc * sizeof(*strs));
        if (!strs)
            return false;
        nb->strs = strs;
        nb->alloc = alloc;
    }
    block = malloc(len ? len : 1);
    if (!block)
        return false;
    at = block;
    out = &nb->nodes[nb->n];
    *out = *in;
    out->name = dup_into(&at, in->name);
    out->rack = dup_into(&at, in->rack);
    out->block = dup_into(&at, in->block);
    out->zone = dup_into(&at, in->zone);
    out->domain = dup_into(&at, in->domain);
    out->resource = dup_into(&at, in->resource);
    nb->strs[nb->n++] = block;
    return true;
}

/* Forget the batch and give its memory back. */
static void batch_release(struct node_batch *nb)
{
    for (size_t i = 0; i < nb->n; i++)
        free(nb->strs[i]);
    free(nb->nodes);
    free(nb->strs);
    memset(nb, 0, sizeof(*nb));
}

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
    pend_del(&f->pending, uid);
    json_object_del(f->pods, uid); /* last: uid may be this object's key */
}

/* Give one bound pod's facts to the state. TPX_ENOENT: its node is not known yet (the caller
 * keeps it pending); other failures are refused here. */
static enum tpx_code give_pod(struct ext_state_feed *f, const char *uid, const char *name,
                              const char *node, unsigned accel, const struct pol_workload *wl)
{
    struct tpx_err e = TPX_ERR_INIT;
    char warn[512];

    /* a bound pod is a fact: recorded whatever the order, never refused for the rules; what it
     * contradicts is logged once, when it is first recorded */
    if (ext_state_record_pod(f->st, uid, name, node, accel, wl, warn, sizeof(warn), &e) == TPX_OK) {
        if (warn[0])
            TPX_LOG(TPX_WARN, "bound pod recorded against the placement rules",
                    TPX_S("name", name ? name : uid), TPX_S("node", node), TPX_S("why", warn));
        json_object_set_new(f->pods, uid, json_true());
        pend_del(&f->pending, uid);
        return TPX_OK;
    }
    if (e.code != TPX_ENOENT)
        refuse(f, "pod", name, &e);
    return e.code;
}

/* Give one Pod to the state, or keep its facts pending. */
static void apply_pod(struct ext_state_feed *f, json_t *pod)
{
    const char *uid = meta(pod, "uid");
    const char *name = meta(pod, "name");
    const char *node = spec_node(pod);
    struct obj_pod_facts store;
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
    if (!node) {
        /* not bound yet: the scheduler will ask about it, and bind (api mode) checks that it is
         * ours */
        json_t *sn = json_object_get(json_object_get(pod, "spec"), "schedulerName");

        ext_state_note_scheduler(f->st, uid, meta(pod, "namespace"), name, json_string_value(sn),
                                 time(NULL));
        return;
    }
    memset(&store, 0, sizeof(store));
    if (obj_pod_facts_from_json_cfg(pod, f->cfg, &store, &e) != TPX_OK) {
        refuse(f, "pod", name, &e);
        return;
    }
    /* A pod whose intent cannot be read still holds its accelerators. */
    has_wl = pol_workload_infer(&store.facts, &wl, &ignore) == TPX_OK;
    if (!name)
        name = uid;
    if (give_pod(f, uid, name, node, store.facts.accel, has_wl ? &wl : NULL) == TPX_ENOENT) {
        struct pend *p = pend_pack(uid, name, node, store.facts.accel, has_wl ? &wl : NULL);

        if (!p || !pend_put(&f->pending, p)) {
            tpx_err_set(&e, TPX_ENOMEM, "out of memory keeping a pod for its node");
            refuse(f, "pod", name, &e);
        }
    }
    obj_pod_facts_release(&store);
}

/* Try every pending pod again (a node arrived). */
static void retry_pending(struct ext_state_feed *f)
{
    struct pend *p = pend_detach(&f->pending);

    while (p) {
        struct pend *next = p->next;
        struct pol_workload wl;

        if (p->has_wl)
            pend_unpack(p, &wl);
        if (give_pod(f, p->uid, p->name, p->node, p->accel, p->has_wl ? &wl : NULL) == TPX_ENOENT)
            pend_put(&f->pending, p); /* still waiting: the entry moves back */
        else
            free(p);
        p = next;
    }
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* Give nodes to the state in one batch; returns the names taken (a new object). */
static json_t *apply_nodes(struct ext_state_feed *f, const struct topo_node_info *infos, size_t n)
{
    json_t *names = json_object();
    struct tpx_err e = TPX_ERR_INIT;

    if (!names)
        return NULL;
    for (size_t i = 0; i < n; i++)
        json_object_set_new(names, infos[i].name, json_true());
    if (n > 0 && ext_state_upsert_nodes(f->st, infos, n, NULL, &e) != TPX_OK) {
        refuse(f, "node", "(batch)", &e);
        json_object_clear(names);
    }
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

/* A (re)list starts; a reset without synced before it (a list that failed half way) is forgotten:
 * what it applied stays, what it collected goes. */
static void on_reset(void *ctx, enum kube_kind kind)
{
    struct ext_state_feed *f = ctx;

    f->in_list[kind] = true;
    if (kind == KUBE_KIND_NODE) {
        batch_release(&f->batch);
    } else {
        json_object_clear(f->seen);
        f->pod_list_at = time(NULL);
    }
}

static bool in_pod_list(void *ctx, const char *uid)
{
    struct ext_state_feed *f = ctx;

    return json_object_get(f->seen, uid) != NULL;
}

static void on_upsert(void *ctx, enum kube_kind kind, json_t *obj)
{
    struct ext_state_feed *f = ctx;

    if (kind == KUBE_KIND_POD) {
        const char *uid = meta(obj, "uid");

        if (f->in_list[kind] && uid)
            json_object_set_new(f->seen, uid, json_true());
        apply_pod(f, obj);
        return;
    }
    {
        struct topo_node_info info;
        struct tpx_err ne = TPX_ERR_INIT;
        json_t *names;
        const char *name;
        json_t *v;

        if (obj_node_from_json(obj, f->cfg, &info, NULL, &ne) != TPX_OK) {
            refuse(f, "node", meta(obj, "name"), &ne);
            return;
        }
        if (f->in_list[kind]) {
            /* info borrows its strings from obj, which goes with its page: copy them. */
            if (!batch_add(&f->batch, &info)) {
                tpx_err_set(&ne, TPX_ENOMEM, "out of memory keeping a listed node");
                refuse(f, "node", info.name, &ne);
            }
            return;
        }
        names = apply_nodes(f, &info, 1);
        json_object_foreach(names, name, v)
        {
            json_object_set_new(f->nodes, name, json_true());
        }
        json_decref(names);
        retry_pending(f);
    }
}

static void on_remove(void *ctx, enum kube_kind kind, json_t *obj)
{
    struct ext_state_feed *f = ctx;

    if (kind == KUBE_KIND_POD)
        drop_pod(f, meta(obj, "uid"));
    else
        drop_node(f, meta(obj, "name"));
}

static void on_synced(void *ctx, enum kube_kind kind)
{
    struct ext_state_feed *f = ctx;
    const char *key;
    json_t *v;
    void *tmp;

    f->in_list[kind] = false;
    if (kind == KUBE_KIND_NODE) {
        json_t *names = apply_nodes(f, f->batch.nodes, f->batch.n);

        batch_release(&f->batch);
        if (!names) {
            struct tpx_err e = TPX_ERR_INIT;

            tpx_err_set(&e, TPX_ENOMEM, "out of memory applying the node list");
            refuse(f, "node", "(batch)", &e);
            return;
        }
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
        struct pend *p;

        /* Pods the new list lacks were deleted (or finished) while we were not watching. */
        json_object_foreach_safe(f->pods, tmp, key, v)
        {
            if (!json_object_get(f->seen, key))
                drop_pod(f, key);
        }
        p = pend_detach(&f->pending);
        while (p) {
            struct pend *next = p->next;

            if (json_object_get(f->seen, p->uid))
                pend_put(&f->pending, p);
            else
                free(p);
            p = next;
        }
        /* The same for pods booked by our own binds whose watch events the gap swallowed: the
         * state knows them, this feed never did. */
        {
            size_t n = ext_state_prune_pods(f->st, in_pod_list, f, f->pod_list_at);

            if (n) {
                f->pruned += n;
                TPX_LOG(TPX_INFO, "relist: released pods no longer listed",
                        TPX_I("count", (long long)n));
            }
        }
        json_object_clear(f->seen);
    }
    f->synced[kind] = true;
    if (f->synced[KUBE_KIND_NODE] && f->synced[KUBE_KIND_POD])
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
        f->seen = json_object();
        f->nodes = json_object();
        f->pods = json_object();
    }
    if (!f || !f->seen || !f->nodes || !f->pods) {
        ext_state_feed_free(f);
        tpx_err_set(err, TPX_ENOMEM, "out of memory creating the state feed");
        return NULL;
    }
    ext_state_require_sync(st);
    return f;
}

void ext_state_feed_sink(struct ext_state_feed *f, struct kube_watch_sink *out)
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
    out->pending = tpx_map_len(&f->pending.m);
    out->refused = f->refused;
    out->pruned = f->pruned;
}

void ext_state_feed_free(struct ext_state_feed *f)
{
    if (!f)
        return;
    batch_release(&f->batch);
    pend_release(&f->pending);
    json_decref(f->seen);
    json_decref(f->nodes);
    json_decref(f->pods);
    free(f);
}
