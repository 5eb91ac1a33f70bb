/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state_feed.c - watch events -> extender/state. A list arrives item by item as its pages
 * are parsed: pods go to the state at once, nodes are kept as compact topo_node_info copies and
 * handed over in one batch when the list completes (ext_state_upsert_nodes rebuilds the snapshot
 * once, not once per node). During a list only the names/uids seen are remembered, for the relist
 * rule. Pods bound to a node the state does not know yet wait in `pending` as plain C facts (never
 * as json_t objects) until that node arrives. */
#include "extender/state_feed.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"
#include "common/str.h"
#include "extender/codec.h"
#include "extender/cpumembers.h"
#include "objects/dra.h"
#include "objects/podfacts.h"
#include "common/banned.h"

/* The DRA kinds, from KUBE_KIND_SLICE on. */
#define NDRA (KUBE_KIND_COUNT - KUBE_KIND_SLICE)
/* A node's devices that allocated claims hold, and that no bound pod counts, are booked as one
 * pod with this uid prefix and the node's name. */
#define DRA_UID "dra:"

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
    bool dp_world;
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
    /* every node as it was last listed or watched, before DRA: name -> struct node_copy */
    struct tpx_map ncopy;
    /* DRA (docs/dra.md): the objects are kept and `dra` is built anew from them (objects/dra.c,
     * the rules `plan --snapshot` uses) after each change, outside lists */
    bool dra_on;               /* the DRA kinds are watched: readiness waits for them too */
    bool dra_dirty;            /* something changed since the last refresh */
    bool refreshing;           /* inside dra_refresh(): pods re-applied there change nothing */
    json_t *dra_objs[NDRA];    /* per kind: uid -> object */
    json_t *dra_seen[NDRA];    /* uids of a list in progress */
    json_t *dra_pods;          /* uid -> bound Pod with claims or an extendedResourceClaimStatus */
    json_t *owned;             /* "ns/name" -> true: claims whose devices their pod counts */
    json_t *booked;            /* node -> devices booked as pod DRA_UID node */
    pthread_rwlock_t dra_lock; /* the filter reads `dra` while a refresh replaces it */
    struct obj_dra dra;
    unsigned long dra_refreshes;
    struct ext_metrics *metrics; /* NULL: none */
    /* PodGroups (scheduling.k8s.io): "ns/name" -> [minCount, level] as obj_podgroup_read reads
     * them, for the pods that name one; the watch writes, filters read, under pg_lock */
    json_t *podgroups;
    json_t *pg_seen;             /* keys of a list in progress */
    struct ext_nominator *nom;   /* pending group members go there (--nominate); NULL: none */
    struct ext_cpu_members *cpu; /* bound members without accelerators go there; NULL: none */
    json_t *pg_waiting;          /* uid -> pending Pod naming a PodGroup not seen yet (--nominate):
                                  * read again when PodGroups arrive (pods are listed first) */
    bool pg_on; /* PodGroups are watched: readiness waits for their first list too */
    pthread_mutex_t pg_lock;
};

/* A node as the feed got it; every string of info lives in str. */
struct node_copy {
    struct topo_node_info info;
    char str[];
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
        p->dp_world = wl->dp_world;
    }
    return p;
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
    tpx_str_copy(wl->group, sizeof(wl->group), p->group);
    tpx_str_copy(wl->display, sizeof(wl->display), p->display);
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
    wl->dp_world = p->dp_world;
    wl->layout.engine = "";
    for (size_t k = 0; k < POL_NSIZES; k++)
        wl->layout.origin[k].argi = -1;
    tpx_str_copy(wl->resource, sizeof(wl->resource), p->resource);
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

/* Keep a copy of *in under its name (replacing one), for DRA to adjust later. false: no memory. */
static bool ncopy_put(struct ext_state_feed *f, const struct topo_node_info *in)
{
    size_t len = len0(in->name) + len0(in->rack) + len0(in->block) + len0(in->zone) +
                 len0(in->domain) + len0(in->resource);
    struct node_copy *c = malloc(sizeof(*c) + len + 1);
    struct node_copy *old;
    struct tpx_err e = TPX_ERR_INIT;
    char *at;

    if (!c || !in->name) {
        free(c);
        return false;
    }
    at = c->str;
    c->info = *in;
    c->info.name = dup_into(&at, in->name);
    c->info.rack = dup_into(&at, in->rack);
    c->info.block = dup_into(&at, in->block);
    c->info.zone = dup_into(&at, in->zone);
    c->info.domain = dup_into(&at, in->domain);
    c->info.resource = dup_into(&at, in->resource);
    old = tpx_map_get(&f->ncopy, c->info.name);
    if (tpx_map_put(&f->ncopy, c->info.name, c, &e) != TPX_OK) {
        free(c);
        return false;
    }
    free(old); /* after the put: the map pointed at its name until then */
    return true;
}

static void ncopy_del(struct ext_state_feed *f, const char *name)
{
    union tpx_map_val old;

    if (tpx_map_del(&f->ncopy, name, &old))
        free(old.ptr);
}

static void ncopy_release(struct tpx_map *m)
{
    union tpx_map_val v;

    for (size_t pos = 0; tpx_map_next(m, &pos, NULL, &v);)
        free(v.ptr);
    tpx_map_release(m);
}

/* A node's capacity as DRA says it (docs/dra.md): the GPUs of its ResourceSlices stand for
 * allocatable. Only on the watch's thread (it reads `dra` unlocked). */
static void dra_capacity(const struct ext_state_feed *f, struct topo_node_info *info)
{
    unsigned total, taken;

    if (!f->dra_on)
        return;
    obj_dra_node_count(&f->dra, info->name, &total, &taken);
    if (total) {
        info->accel_alloc = total;
        if (!info->resource)
            info->resource = obj_dra_resource(&f->dra);
    }
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
    char *copy;

    if (!uid)
        return;
    ext_state_remove_pod(f->st, uid);
    pend_del(&f->pending, uid);
    ext_nominator_forget(f->nom, uid);
    ext_cpu_members_forget(f->cpu, uid);
    /* uid may be a key of f->pods or a string of the Pod that dra_pods holds */
    copy = strdup(uid);
    if (!copy)
        return;
    if (json_object_get(f->dra_pods, copy)) {
        json_object_del(f->dra_pods, copy);
        f->dra_dirty = true;
    }
    json_object_del(f->pods, copy);
    json_object_del(f->pg_waiting, copy);
    free(copy);
}

static bool has_claims(json_t *pod)
{
    return json_array_size(json_object_get(json_object_get(pod, "spec"), "resourceClaims")) > 0 ||
           json_object_get(json_object_get(pod, "status"), "extendedResourceClaimStatus");
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

/* A claimant of a ComputeDomain's channel joins the domain's group (obj_dra_domain_member(), the
 * rule plan uses): as many pods as its numNodes, else as its own group says; with neither the
 * size is unknown and the pod keeps its own intent. Callers hold what protects `dra`.
 * It takes any free slot of the domain's group (index -1): a domain's claimants may come from
 * several groups or jobs (NVIDIA's GB200 recipes put a prefill and a decode worker in one
 * domain), each counting its pods from 0, and the domain is one TP group over one clique (pp 1),
 * so a slot's number says nothing about where a pod goes. plan numbers them in turn instead
 * (obj_dra_manifest_domains()), as it sees every claimant at once. */
static void domain_member(const struct ext_state_feed *f, json_t *pod, struct pol_workload *wl)
{
    const char *ns = meta(pod, "namespace");
    const struct obj_dra_domain *cd;
    unsigned n;

    if (!f->dra_on || wl->accel_per_pod == 0 || !has_claims(pod))
        return;
    cd = obj_dra_pod_domain(&f->dra, pod, ns);
    if (!cd)
        return;
    n = cd->num_nodes ? cd->num_nodes : wl->size_explicit ? wl->group_size : 0;
    if (n)
        obj_dra_domain_member(cd, n, n * wl->accel_per_pod, -1, wl);
}

/* Give one Pod to the state, or keep its facts pending. */
/* "ns/name" of a PodGroup object into key; false when it has no name. */
static bool podgroup_key(json_t *pg, char *key, size_t len)
{
    const char *ns = meta(pg, "namespace"), *name = meta(pg, "name");

    if (!name)
        return false;
    snprintf(key, len, "%s/%s", ns ? ns : "default", name);
    return true;
}

static void podgroup_put(struct ext_state_feed *f, json_t *pg)
{
    char key[512];
    unsigned min;
    int level;

    if (!podgroup_key(pg, key, sizeof(key)))
        return;
    obj_podgroup_read(pg, f->cfg, &min, &level);
    pthread_mutex_lock(&f->pg_lock);
    json_object_set_new(f->podgroups, key, json_pack("[I,i]", (json_int_t)min, level));
    if (f->in_list[KUBE_KIND_PODGROUP])
        json_object_set_new(f->pg_seen, key, json_true());
    pthread_mutex_unlock(&f->pg_lock);
}

static void podgroup_del(struct ext_state_feed *f, json_t *pg)
{
    char key[512];

    if (!podgroup_key(pg, key, sizeof(key)))
        return;
    pthread_mutex_lock(&f->pg_lock);
    json_object_del(f->podgroups, key);
    pthread_mutex_unlock(&f->pg_lock);
}

/* A relist is over: PodGroups it lacked were deleted while we were not watching. */
static void podgroup_synced(struct ext_state_feed *f)
{
    const char *key;
    json_t *v;
    void *tmp;

    pthread_mutex_lock(&f->pg_lock);
    json_object_foreach_safe(f->podgroups, tmp, key, v)
    {
        if (!json_object_get(f->pg_seen, key))
            json_object_del(f->podgroups, key);
    }
    json_object_clear(f->pg_seen);
    pthread_mutex_unlock(&f->pg_lock);
}

/* The minCount and level of the PodGroup facts names, from the watched object; left unknown (0,
 * -1) while the PodGroup is not known, so the pod makes no gang (the certainty rule). */
static void podgroup_facts(struct ext_state_feed *f, struct pol_pod_facts *facts)
{
    char key[512];
    json_t *v;

    if (!facts->pod_group || !facts->pod_group[0])
        return;
    snprintf(key, sizeof(key), "%s/%s", facts->ns ? facts->ns : "default", facts->pod_group);
    pthread_mutex_lock(&f->pg_lock);
    v = json_object_get(f->podgroups, key);
    if (v) {
        facts->pod_group_min = (unsigned)json_integer_value(json_array_get(v, 0));
        facts->pod_group_level = (int)json_integer_value(json_array_get(v, 1));
    }
    pthread_mutex_unlock(&f->pg_lock);
}

/* A pending pod, for the nominator: its group and index read as /filter reads them (the same
 * hooks, so a PodGroup's or a ComputeDomain's member is keyed as its filter will be), whether it
 * is being deleted, and its nomination now. A pod without a group intent is forgotten. */
static void nominee(struct ext_state_feed *f, json_t *pod, const char *uid, const char *name,
                    const char *scheduler)
{
    struct ext_codec_opts o;
    struct ext_codec_pod cp;
    struct tpx_err e = TPX_ERR_INIT;
    json_t *md = json_object_get(pod, "metadata");
    const char *nnn =
        json_string_value(json_object_get(json_object_get(pod, "status"), "nominatedNodeName"));
    bool deleting = json_object_get(md, "deletionTimestamp") != NULL &&
                    !json_is_null(json_object_get(md, "deletionTimestamp"));
    const struct pol_workload *wl = &cp.wl;
    /* a gated pod (Kueue's admission, any schedulingGates) is not in kube-scheduler's queue */
    bool gated = json_array_size(json_object_get(json_object_get(pod, "spec"), "schedulingGates"));

    {
        const char *pg = json_string_value(json_object_get(
            json_object_get(json_object_get(pod, "spec"), "schedulingGroup"), "podGroupName"));
        char key[512];
        bool known;

        snprintf(key, sizeof(key), "%s/%s",
                 meta(pod, "namespace") ? meta(pod, "namespace") : "default", pg ? pg : "");
        pthread_mutex_lock(&f->pg_lock);
        known = !pg || json_object_get(f->podgroups, key) != NULL;
        pthread_mutex_unlock(&f->pg_lock);
        if (!known) { /* its gang's size comes with the PodGroup: wait for it */
            json_object_set(f->pg_waiting, uid, pod);
            ext_nominator_forget(f->nom, uid);
            return;
        }
        json_object_del(f->pg_waiting, uid);
    }
    memset(&o, 0, sizeof(o));
    o.labels = f->cfg;
    o.pod_facts = ext_state_feed_pod_facts;
    o.pod_workload = ext_state_feed_pod_workload;
    o.pod_ctx = f;
    if (ext_codec_decode_pod(pod, &o, &cp, &e) != TPX_OK) {
        ext_nominator_forget(f->nom, uid);
        return;
    }
    if (!cp.infer_failed) {
        /* a pending CPU leader takes no slot of its group; its workers count without it */
        double now = tpx_mono_s();
        ext_cpu_members_note(f->cpu, &cp.wl, uid, now, true);
        ext_cpu_members_skip(f->cpu, &cp.wl, now);
    }
    if (cp.infer_failed || !wl->has_intent || wl->preferred || wl->group_size < 2)
        ext_nominator_forget(f->nom, uid);
    else
        ext_nominator_pending(f->nom, uid, meta(pod, "namespace"), name, scheduler, deleting,
                              wl->group, wl->pod_index, nnn, gated ? NULL : wl);
    ext_codec_pod_release(&cp);
}

/* PodGroups arrived: read again the pending pods that waited for theirs. */
static void nominees_again(struct ext_state_feed *f)
{
    json_t *waiting = f->pg_waiting;
    const char *uid;
    json_t *pod;
    void *tmp;

    if (!f->nom || json_object_size(waiting) == 0)
        return;
    f->pg_waiting = json_object();
    if (!f->pg_waiting) {
        f->pg_waiting = waiting;
        return;
    }
    json_object_foreach_safe(waiting, tmp, uid, pod)
    {
        const char *sn =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "schedulerName"));

        nominee(f, pod, uid, meta(pod, "name") ? meta(pod, "name") : uid, sn);
    }
    json_decref(waiting);
}

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
        if (f->nom)
            nominee(f, pod, uid, name, json_string_value(sn));
        return;
    }
    ext_nominator_forget(f->nom, uid); /* bound: no nomination of ours matters any more */
    json_object_del(f->pg_waiting, uid);
    memset(&store, 0, sizeof(store));
    if (obj_pod_facts_from_json_cfg(pod, f->cfg, &store, &e) != TPX_OK) {
        refuse(f, "pod", name, &e);
        return;
    }
    podgroup_facts(f, &store.facts);
    if (f->dra_on && has_claims(pod)) {
        if (!f->refreshing) {
            /* given to the state by the refresh this marks, once its claims are known to be
             * its own: recorded now, its devices would also still be held for the claims */
            json_object_set(f->dra_pods, uid, pod);
            f->dra_dirty = true;
            obj_pod_facts_release(&store);
            return;
        }
        /* its claims' devices count as its own (a claim not known yet counts nothing, and the
         * refresh once it comes re-applies the pod) */
        obj_dra_facts_demand(&f->dra, pod, &store.facts, NULL, NULL, &ignore);
        ignore = (struct tpx_err)TPX_ERR_INIT;
    }
    /* A pod whose intent cannot be read still holds its accelerators. */
    has_wl = pol_workload_infer(&store.facts, &wl, &ignore) == TPX_OK;
    if (has_wl)
        domain_member(f, pod, &wl);
    /* a CPU member takes no slot of its group, and its group's bound members count without it,
     * as their filters did */
    if (has_wl && store.facts.accel == 0)
        ext_cpu_members_note(f->cpu, &wl, uid, tpx_mono_s(), true);
    else if (has_wl)
        ext_cpu_members_skip(f->cpu, &wl, tpx_mono_s());
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

/* Give nodes to the state in one batch (their DRA capacity set in place: infos is the caller's
 * scratch); returns the names taken (a new object). */
static json_t *apply_nodes(struct ext_state_feed *f, struct topo_node_info *infos, size_t n)
{
    json_t *names = json_object();
    struct tpx_err e = TPX_ERR_INIT;

    if (!names)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        json_object_set_new(names, infos[i].name, json_true());
        if (!ncopy_put(f, &infos[i])) {
            tpx_err_set(&e, TPX_ENOMEM, "out of memory keeping a node");
            refuse(f, "node", infos[i].name, &e);
        }
        dra_capacity(f, &infos[i]);
    }
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
    ncopy_del(f, name);
    json_object_del(f->nodes, name);
}

/* ---- DRA -------------------------------------------------------------------------------- */

/* "ns/name" of a claim. */
static void claim_key(const json_t *claim, char *key, size_t len)
{
    const json_t *md = json_object_get(claim, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));

    snprintf(key, len, "%s/%s", ns ? ns : "", name ? name : "");
}

static void own_claim(void *ctx, const json_t *claim)
{
    struct ext_state_feed *f = ctx;
    char key[600];

    claim_key(claim, key, sizeof(key));
    json_object_set_new(f->owned, key, json_true());
}

static bool is_owned(void *ctx, const json_t *claim)
{
    struct ext_state_feed *f = ctx;
    char key[600];

    claim_key(claim, key, sizeof(key));
    return json_object_get(f->owned, key) != NULL;
}

/* Book what claims hold and no pod counts, per node, as pod DRA_UID+node. */
static void dra_book(struct ext_state_feed *f)
{
    union tpx_map_val v;
    const char *key;
    json_t *val;
    void *tmp;

    for (size_t pos = 0; tpx_map_next(&f->ncopy, &pos, NULL, &v);) {
        const struct node_copy *c = v.ptr;
        unsigned total, taken;
        json_t *had = json_object_get(f->booked, c->info.name);
        char uid[300];
        struct tpx_err e = TPX_ERR_INIT;

        obj_dra_node_count(&f->dra, c->info.name, &total, &taken);
        if ((json_int_t)taken == (had ? json_integer_value(had) : 0))
            continue;
        snprintf(uid, sizeof(uid), "%s%s", DRA_UID, c->info.name);
        if (taken == 0) {
            ext_state_remove_pod(f->st, uid);
            json_object_del(f->booked, c->info.name);
        } else if (ext_state_record_pod(f->st, uid, uid, c->info.name, taken, NULL, NULL, 0, &e) ==
                   TPX_OK) {
            json_object_set_new(f->booked, c->info.name, json_integer(taken));
        } else if (e.code != TPX_ENOENT) {
            refuse(f, "resourceclaim", uid, &e);
        }
    }
    json_object_foreach_safe(f->booked, tmp, key, val)
    {
        char uid[300];

        if (tpx_map_get(&f->ncopy, key))
            continue;
        snprintf(uid, sizeof(uid), "%s%s", DRA_UID, key);
        ext_state_remove_pod(f->st, uid);
        json_object_del(f->booked, key);
    }
}

/* Build `dra` anew from the kept objects, then give the state what follows from it: nodes'
 * capacity, the devices claims hold, the bound pods that claim. O(objects + nodes + claiming
 * pods), plus the sort of the devices. */
static void dra_refresh(struct ext_state_feed *f)
{
    struct obj_dra nd, old;
    struct topo_node_info *infos;
    size_t n = 0;
    union tpx_map_val v;
    const char *key;
    json_t *obj;
    void *tmp;

    f->dra_dirty = false;
    f->dra_refreshes++;
    if (f->metrics)
        ext_metrics_dra_rebuild(f->metrics);
    obj_dra_init(&nd);
    for (int k = 0; k < NDRA; k++) {
        json_object_foreach(f->dra_objs[k], key, obj)
        {
            struct tpx_err e = TPX_ERR_INIT;

            if (obj_dra_add_docs(&nd, &obj, 1, &e) != TPX_OK)
                refuse(f, kube_kind_name((enum kube_kind)(KUBE_KIND_SLICE + k)), meta(obj, "name"),
                       &e);
        }
    }
    /* the claims a bound pod counts itself take no device of their node (the first finish
     * indexes the claims, so each pod's claims are found without a scan) */
    obj_dra_finish(&nd);
    json_object_clear(f->owned);
    json_object_foreach(f->dra_pods, key, obj)
    {
        struct obj_pod_facts store;
        struct tpx_err e = TPX_ERR_INIT;

        memset(&store, 0, sizeof(store));
        if (obj_pod_facts_from_json_cfg(obj, f->cfg, &store, &e) == TPX_OK)
            obj_dra_facts_demand(&nd, obj, &store.facts, own_claim, f, &e);
        obj_pod_facts_release(&store);
    }
    obj_dra_finish_skip(&nd, is_owned, f);
    pthread_rwlock_wrlock(&f->dra_lock);
    old = f->dra;
    f->dra = nd;
    pthread_rwlock_unlock(&f->dra_lock);
    obj_dra_release(&old);

    /* every node again, with its DRA capacity (the state rebuilds only when one differs) */
    infos = malloc((tpx_map_len(&f->ncopy) + 1) * sizeof(*infos));
    if (infos) {
        for (size_t pos = 0; tpx_map_next(&f->ncopy, &pos, NULL, &v);) {
            infos[n] = ((const struct node_copy *)v.ptr)->info;
            dra_capacity(f, &infos[n]);
            n++;
        }
        if (n > 0) {
            struct tpx_err e = TPX_ERR_INIT;

            if (ext_state_upsert_nodes(f->st, infos, n, NULL, &e) != TPX_OK)
                refuse(f, "node", "(DRA capacity)", &e);
        }
        free(infos);
    }
    dra_book(f);
    f->refreshing = true;
    json_object_foreach_safe(f->dra_pods, tmp, key, obj)
    {
        json_incref(obj); /* apply_pod may drop it */
        apply_pod(f, obj);
        json_decref(obj);
    }
    f->refreshing = false;
}

/* The uid a DRA object is kept under. */
static const char *dra_key(json_t *obj)
{
    const char *uid = meta(obj, "uid");

    return uid ? uid : meta(obj, "name");
}

/* ---- the sink --------------------------------------------------------------------------- */

/* A (re)list starts; a reset without synced before it (a list that failed half way) is forgotten:
 * what it applied stays, what it collected goes. */
static void on_reset(void *ctx, enum kube_kind kind)
{
    struct ext_state_feed *f = ctx;

    f->in_list[kind] = true;
    if (kind >= KUBE_KIND_SLICE) {
        json_object_clear(f->dra_seen[kind - KUBE_KIND_SLICE]);
    } else if (kind == KUBE_KIND_PODGROUP) {
        pthread_mutex_lock(&f->pg_lock);
        json_object_clear(f->pg_seen);
        pthread_mutex_unlock(&f->pg_lock);
    } else if (kind == KUBE_KIND_NODE) {
        batch_release(&f->batch);
    } else {
        json_object_clear(f->seen);
        f->pod_list_at = time(NULL);
    }
}

static bool in_pod_list(void *ctx, const char *uid)
{
    struct ext_state_feed *f = ctx;

    /* what claims hold is not a pod of the list */
    return json_object_get(f->seen, uid) != NULL || strncmp(uid, DRA_UID, strlen(DRA_UID)) == 0;
}

/* Refresh DRA when something changed and no list of this kind is running: after a list, and
 * after a burst of watch events (drained), never per event: a burst of 1 000 claim events
 * rebuilds the view once per read, not 1 000 times. A filter sees the view of the last completed
 * list and of every burst delivered before it. */
static void maybe_refresh(struct ext_state_feed *f, enum kube_kind kind)
{
    if (f->dra_on && f->dra_dirty && !f->in_list[kind])
        dra_refresh(f);
}

static void on_upsert(void *ctx, enum kube_kind kind, json_t *obj)
{
    struct ext_state_feed *f = ctx;

    if (kind >= KUBE_KIND_SLICE) {
        const char *key = dra_key(obj);

        if (!key)
            return;
        if (f->in_list[kind])
            json_object_set_new(f->dra_seen[kind - KUBE_KIND_SLICE], key, json_true());
        json_object_set(f->dra_objs[kind - KUBE_KIND_SLICE], key, obj);
        f->dra_dirty = true; /* refreshed when the burst or the list ends */
        return;
    }
    if (kind == KUBE_KIND_PODGROUP) {
        podgroup_put(f, obj);
        if (!f->in_list[kind])
            nominees_again(f);
        return;
    }
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
        if (f->dra_on)
            dra_book(f); /* a new node may have claims waiting for it */
        retry_pending(f);
    }
}

static void on_remove(void *ctx, enum kube_kind kind, json_t *obj)
{
    struct ext_state_feed *f = ctx;

    if (kind >= KUBE_KIND_SLICE) {
        const char *key = dra_key(obj);

        if (key && json_object_get(f->dra_objs[kind - KUBE_KIND_SLICE], key)) {
            char *copy = strdup(key);

            if (copy)
                json_object_del(f->dra_objs[kind - KUBE_KIND_SLICE], copy);
            free(copy);
            f->dra_dirty = true;
        }
    } else if (kind == KUBE_KIND_PODGROUP) {
        podgroup_del(f, obj);
    } else if (kind == KUBE_KIND_POD) {
        drop_pod(f, meta(obj, "uid"));
    } else {
        drop_node(f, meta(obj, "name"));
    }
}

/* The watch delivered every event of one read: the burst is over. */
static void on_drained(void *ctx, enum kube_kind kind)
{
    maybe_refresh(ctx, kind);
}

static void on_synced(void *ctx, enum kube_kind kind)
{
    struct ext_state_feed *f = ctx;
    const char *key;
    json_t *v;
    void *tmp;

    f->in_list[kind] = false;
    if (kind >= KUBE_KIND_SLICE) {
        json_t *objs = f->dra_objs[kind - KUBE_KIND_SLICE];
        json_t *seen = f->dra_seen[kind - KUBE_KIND_SLICE];

        /* Objects the new list lacks were deleted while we were not watching. */
        json_object_foreach_safe(objs, tmp, key, v)
        {
            if (!json_object_get(seen, key))
                json_object_del(objs, key);
        }
        json_object_clear(seen);
        f->dra_dirty = true;
    } else if (kind == KUBE_KIND_PODGROUP) {
        podgroup_synced(f);
        nominees_again(f);
    } else if (kind == KUBE_KIND_NODE) {
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
        if (f->dra_on)
            dra_book(f); /* claims listed before their nodes are held now */
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
        ext_nominator_prune(f->nom, in_pod_list, f);
        json_object_clear(f->seen);
    }
    f->synced[kind] = true;
    maybe_refresh(f, kind);
    {
        bool all = f->synced[KUBE_KIND_NODE] && f->synced[KUBE_KIND_POD] &&
                   (!f->pg_on || f->synced[KUBE_KIND_PODGROUP]);

        for (int k = KUBE_KIND_SLICE; f->dra_on && k < KUBE_KIND_COUNT; k++)
            all = all && f->synced[k];
        if (all)
            ext_state_mark_synced(f->st);
    }
}

/* ---- lifecycle -------------------------------------------------------------------------- */

struct ext_state_feed *ext_state_feed_new(struct ext_state *st, const struct topo_label_config *cfg,
                                          struct tpx_err *err)
{
    struct ext_state_feed *f = calloc(1, sizeof(*f));

    bool ok;

    if (f) {
        f->st = st;
        f->cfg = cfg;
        f->seen = json_object();
        f->nodes = json_object();
        f->pods = json_object();
        f->dra_pods = json_object();
        f->owned = json_object();
        f->booked = json_object();
        for (int k = 0; k < NDRA; k++) {
            f->dra_objs[k] = json_object();
            f->dra_seen[k] = json_object();
        }
        obj_dra_init(&f->dra);
        pthread_rwlock_init(&f->dra_lock, NULL);
        f->podgroups = json_object();
        f->pg_waiting = json_object();
        f->pg_seen = json_object();
        pthread_mutex_init(&f->pg_lock, NULL);
    }
    ok = f && f->seen && f->nodes && f->pods && f->dra_pods && f->owned && f->booked &&
         f->podgroups && f->pg_seen;
    for (int k = 0; ok && k < NDRA; k++)
        ok = f->dra_objs[k] && f->dra_seen[k];
    if (!ok) {
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
    out->drained = on_drained;
}

void ext_state_feed_watch_dra(struct ext_state_feed *f, bool on)
{
    f->dra_on = on;
}

void ext_state_feed_watch_podgroups(struct ext_state_feed *f, bool on)
{
    f->pg_on = on;
}

void ext_state_feed_set_nominator(struct ext_state_feed *f, struct ext_nominator *n)
{
    f->nom = n;
}

void ext_state_feed_set_cpu_members(struct ext_state_feed *f, struct ext_cpu_members *c)
{
    f->cpu = c;
}

void ext_state_feed_set_metrics(struct ext_state_feed *f, struct ext_metrics *m)
{
    f->metrics = m;
}

void ext_state_feed_pod_facts(void *ctx, const void *pod, struct pol_pod_facts *facts, char *res,
                              size_t res_len)
{
    struct ext_state_feed *f = ctx;
    struct tpx_err ignore = TPX_ERR_INIT;
    const char *before = facts->resource;

    if (f)
        podgroup_facts(f, facts);
    /* without claims, only an extended resource that a DeviceClass maps can ask for DRA GPUs */
    if (!f || !f->dra_on || (!has_claims((json_t *)pod) && facts->accel))
        return;
    pthread_rwlock_rdlock(&f->dra_lock);
    obj_dra_facts_demand(&f->dra, pod, facts, NULL, NULL, &ignore);
    if (facts->resource && facts->resource != before && res_len) {
        /* borrowed from `dra`, which a refresh may free once the lock is let go */
        snprintf(res, res_len, "%s", facts->resource);
        facts->resource = res;
    }
    pthread_rwlock_unlock(&f->dra_lock);
}

void ext_state_feed_pod_workload(void *ctx, const void *pod, struct pol_workload *wl)
{
    struct ext_state_feed *f = ctx;

    if (!f || !f->dra_on)
        return;
    pthread_rwlock_rdlock(&f->dra_lock);
    domain_member(f, (json_t *)pod, wl);
    pthread_rwlock_unlock(&f->dra_lock);
}

void ext_state_feed_stats(const struct ext_state_feed *f, struct ext_state_feed_stats *out)
{
    json_t *v;
    const char *k;

    out->nodes = json_object_size(f->nodes);
    out->pods = json_object_size(f->pods);
    out->pending = tpx_map_len(&f->pending.m);
    out->refused = f->refused;
    out->pruned = f->pruned;
    out->dra_objects = 0;
    for (int i = 0; i < NDRA; i++)
        out->dra_objects += json_object_size(f->dra_objs[i]);
    out->dra_devices = f->dra.ndev;
    out->dra_pods = json_object_size(f->dra_pods);
    out->dra_held = 0;
    json_object_foreach((json_t *)f->booked, k, v)
    {
        out->dra_held += (unsigned long)json_integer_value(v);
    }
    out->dra_refreshes = f->dra_refreshes;
}

void ext_state_feed_free(struct ext_state_feed *f)
{
    if (!f)
        return;
    batch_release(&f->batch);
    pend_release(&f->pending);
    ncopy_release(&f->ncopy);
    json_decref(f->seen);
    json_decref(f->nodes);
    json_decref(f->pods);
    json_decref(f->dra_pods);
    json_decref(f->owned);
    json_decref(f->booked);
    json_decref(f->podgroups);
    json_decref(f->pg_waiting);
    json_decref(f->pg_seen);
    for (int k = 0; k < NDRA; k++) {
        json_decref(f->dra_objs[k]);
        json_decref(f->dra_seen[k]);
    }
    obj_dra_release(&f->dra);
    pthread_rwlock_destroy(&f->dra_lock);
    pthread_mutex_destroy(&f->pg_lock);
    free(f);
}
