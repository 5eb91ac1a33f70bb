/* SPDX-License-Identifier: Apache-2.0 */
/* extender/codec.c - wire format in and out. Responses are written straight into a capped buffer
 * (no DOM): a filter answer for 5 000 nodes is one pass of memcpy and string escaping. */
#include "extender/codec.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/jsonstr.h"
#include "common/utf8.h"
#include "extender/codec_int.h"
#include "objects/podfacts.h"

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- output helpers ---- */

/* Room reserved: "s" for a plain s of length n. */
static void put_quoted(struct tpx_buf *out, const char *s, size_t n)
{
    tpx_buf_put(out, "\"", 1);
    tpx_buf_put(out, s, n);
    tpx_buf_put(out, "\"", 1);
}

/* The decimal digits of v at the end of d[16]: returns where they start, *len their count. */
static const char *int_text(char d[16], int v, size_t *len)
{
    size_t n = 16;
    unsigned u = v < 0 ? 0U - (unsigned)v : (unsigned)v;

    do {
        d[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        d[--n] = '-';
    *len = 16 - n;
    return d + n;
}

static size_t int_put(char *p, int v)
{
    char d[16];
    size_t n;
    const char *s = int_text(d, v, &n);

    memcpy(p, s, n);
    return n;
}

/* The decimal digits of v into p (room for 11): a score of 0 to 10 without a division or a
 * call. */
static inline size_t score_put(char *p, int v)
{
    if ((unsigned)v < 10) {
        p[0] = (char)('0' + v);
        return 1;
    }
    if (v == 10) {
        p[0] = '1';
        p[1] = '0';
        return 2;
    }
    return int_put(p, v);
}

/* How many bytes score_put writes for v. */
static inline size_t score_len(int v)
{
    char d[16];

    if ((unsigned)v < 10)
        return 1;
    return v == 10 ? 2 : int_put(d, v);
}

/* Room reserved: the decimal digits of v. */
static void put_int(struct tpx_buf *out, int v)
{
    char d[16];
    size_t n;
    const char *p = int_text(d, v, &n);

    tpx_buf_put(out, p, n);
}

/* ---- pods ---- */

void ext_codec_pod_release(struct ext_codec_pod *p)
{
    free(p->name);
    free(p->ns);
    free(p->uid);
    p->name = p->ns = p->uid = NULL;
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static enum tpx_code decode_pod_json(const json_t *pod, const struct ext_codec_opts *o,
                                     struct ext_codec_pod *out, struct tpx_err *err)
{
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *ann = json_object_get(md, "annotations");
    struct obj_pod_facts store;
    struct tpx_err e = TPX_ERR_INIT;
    char res[64];

    memset(out, 0, sizeof(*out));
    memset(&store, 0, sizeof(store));
    res[0] = '\0';
    if (!json_is_object(pod))
        return tpx_err_set(err, TPX_EPARSE, "Pod is missing or not an object");
    out->name = dup_or_null(jstr(md, "name"));
    out->ns = dup_or_null(jstr(md, "namespace"));
    out->uid = dup_or_null(jstr(md, "uid"));
    if ((jstr(md, "name") && !out->name) || (jstr(md, "namespace") && !out->ns) ||
        (jstr(md, "uid") && !out->uid)) {
        ext_codec_pod_release(out);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory decoding a pod");
    }
    if (obj_pod_facts_from_json_cfg(pod, o ? o->labels : NULL, &store, &e) == TPX_OK && o &&
        o->pod_facts)
        o->pod_facts(o->pod_ctx, pod, &store.facts, res, sizeof(res));
    if (e.code != TPX_OK || pol_workload_infer(&store.facts, &out->wl, &e) != TPX_OK) {
        if (e.code == TPX_ENOMEM) {
            obj_pod_facts_release(&store);
            ext_codec_pod_release(out);
            return tpx_err_set(err, TPX_ENOMEM, "%s", e.msg);
        }
        out->infer_failed = true;
        memcpy(out->msg, e.msg, sizeof(out->msg));
    }
    obj_pod_facts_release(&store);
    if (!out->infer_failed && o && o->pod_workload)
        o->pod_workload(o->pod_ctx, pod, &out->wl);
    if (!out->infer_failed && o && !json_object_get(ann, "topox.io/pipeline-scope"))
        pol_workload_set_scope(&out->wl, o->default_scope); /* a PodGroup's key still holds */
    return TPX_OK;
}

/* The Pod's struct fields that topox reads, named as k8s.io/api/core/v1 names them (issue 21,
 * item 5): go_fold() renames a key that matches a field under Go's rule (ext_nodescan_key_is) to
 * the field's name, the last match winning, and a null leaving a string or struct field as it was
 * (nullable: a map or a slice, which null clears). Map keys (labels, annotations, requests) stay
 * exact. Go also merges a struct field given twice; here the last one is taken whole. */
struct gofield {
    const char *name;
    const struct gofield *sub; /* fields of the value, or of each element with list */
    bool list;
    bool nullable;
};
static const struct gofield f_env[] = {
    {.name = "name"}, {.name = "value"}, {.name = "valueFrom"}, {.name = NULL}};
static const struct gofield f_claim[] = {{.name = "name"}, {.name = "request"}, {.name = NULL}};
static const struct gofield f_res[] = {{"requests", NULL, false, true},
                                       {"limits", NULL, false, true},
                                       {"claims", f_claim, true, true},
                                       {.name = NULL}};
static const struct gofield f_ctr[] = {{.name = "name"},
                                       {.name = "image"},
                                       {"command", NULL, false, true},
                                       {"args", NULL, false, true},
                                       {"env", f_env, true, true},
                                       {"resources", f_res, false, false},
                                       {.name = NULL}};
static const struct gofield f_pclaim[] = {{.name = "name"},
                                          {.name = "resourceClaimName"},
                                          {.name = "resourceClaimTemplateName"},
                                          {.name = NULL}};
static const struct gofield f_owner[] = {{.name = "apiVersion"}, {.name = "kind"},
                                         {.name = "name"},       {.name = "uid"},
                                         {.name = "controller"}, {.name = NULL}};
static const struct gofield f_meta[] = {{.name = "name"},
                                        {.name = "generateName"},
                                        {.name = "namespace"},
                                        {.name = "uid"},
                                        {"labels", NULL, false, true},
                                        {"annotations", NULL, false, true},
                                        {"ownerReferences", f_owner, true, true},
                                        {.name = NULL}};
static const struct gofield f_spec[] = {{"containers", f_ctr, true, true},
                                        {"initContainers", f_ctr, true, true},
                                        {"nodeSelector", NULL, false, true},
                                        {.name = "schedulerName"},
                                        {.name = "nodeName"},
                                        {.name = "priorityClassName"},
                                        {"resourceClaims", f_pclaim, true, true},
                                        {.name = NULL}};
static const struct gofield f_pod[] = {{.name = "apiVersion"},
                                       {.name = "kind"},
                                       {"metadata", f_meta, false, false},
                                       {"spec", f_spec, false, false},
                                       {.name = NULL}};

static void go_fold(json_t *obj, const struct gofield *fields)
{
    if (!json_is_object(obj))
        return;
    for (const struct gofield *f = fields; f->name; f++) {
        const char *k;
        json_t *v, *win = NULL;
        void *tmp;
        bool variant = false;

        json_object_foreach(obj, k, v)
        {
            if (!ext_nodescan_key_is(k, strlen(k), f->name) || (json_is_null(v) && !f->nullable))
                continue;
            variant |= strcmp(k, f->name) != 0;
            win = v;
        }
        if (variant && win) {
            json_incref(win);
            json_object_foreach_safe(obj, tmp, k, v)
            {
                if (ext_nodescan_key_is(k, strlen(k), f->name))
                    json_object_del(obj, k);
            }
            json_object_set_new(obj, f->name, win);
        }
        if (win && f->sub && f->list) {
            size_t i;
            json_t *e;

            json_array_foreach(win, i, e) go_fold(e, f->sub);
        } else if (win && f->sub) {
            go_fold(win, f->sub);
        }
    }
}

/* Parse the Pod at [off, off + len) of body. */
enum tpx_code ext_codec_decode_pod_span(const char *body, const struct ext_nodescan_span *sp,
                                        const struct ext_codec_opts *o, struct ext_codec_pod *out,
                                        struct tpx_err *err)
{
    json_error_t je;
    json_t *pod;
    enum tpx_code rc;

    if (!sp->present || sp->null)
        return tpx_err_set(err, TPX_EPARSE, "the request has no Pod");
    pod = json_loadb(body + sp->off, sp->len, 0, &je);
    if (!pod)
        return tpx_err_set(err, TPX_EPARSE, "Pod: %s", je.text);
    go_fold(pod, f_pod);
    rc = decode_pod_json(pod, o, out, err);
    json_decref(pod);
    return rc;
}

enum tpx_code ext_codec_decode_pod(const void *pod, const struct ext_codec_opts *o,
                                   struct ext_codec_pod *out, struct tpx_err *err)
{
    return decode_pod_json(pod, o, out, err);
}

/* ---- the prioritize answer's template ---- */

/* A HostPriorityList for a list of names but for its scores: segment i is what stands before
 * score i, `[{"Host":"NAME","Score":` for the first name and `},{"Host":"NAME","Score":` for the
 * others (the name quoted and escaped as tpx_json_str writes it), so the answer is the segments
 * and the scores in turn, then tail. */
#define TPL_SLACK 64 /* readable bytes after the last segment: a short one is copied as 64 */

struct prio_tpl {
    char *bytes;
    size_t *cut; /* segment i is bytes[cut[i - 1], cut[i]) (from 0 for the first) */
    size_t n;
    const char *tail; /* "}]", or "[]" for no names */
};

static void tpl_free(struct prio_tpl *t)
{
    if (!t)
        return;
    free(t->bytes);
    free(t->cut);
    free(t);
}

/* The template of names[0, n) (plain: each name's length when it needs no escaping, else
 * UINT32_MAX; NULL: measured); NULL when out of memory. */
static struct prio_tpl *tpl_new(const char *const *names, const uint32_t *plain, size_t n)
{
    static const char first[] = "[{\"Host\":", next[] = "},{\"Host\":", score[] = ",\"Score\":";
    struct prio_tpl *t = calloc(1, sizeof(*t));
    struct tpx_err e = TPX_ERR_INIT;
    struct tpx_buf b;
    size_t want = 0;

    if (!t || !(t->cut = malloc((n ? n : 1) * sizeof(*t->cut)))) {
        free(t);
        return NULL;
    }
    tpx_buf_init(&b, SIZE_MAX);
    for (size_t i = 0; plain && i < n; i++)
        want += (plain[i] == UINT32_MAX ? 0 : plain[i]) + sizeof(next) + sizeof(score);
    if (want && tpx_buf_reserve(&b, want, &e) != TPX_OK)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        size_t pl = !plain                   ? tpx_json_plain_len(names[i])
                    : plain[i] == UINT32_MAX ? SIZE_MAX
                                             : plain[i];
        if (tpx_buf_add(&b, i ? next : first, i ? sizeof(next) - 1 : sizeof(first) - 1, &e) !=
            TPX_OK)
            goto oom;
        if (pl == SIZE_MAX) {
            if (tpx_json_str(&b, names[i], &e) != TPX_OK)
                goto oom;
        } else {
            if (tpx_buf_reserve(&b, pl + 2, &e) != TPX_OK)
                goto oom;
            put_quoted(&b, names[i], pl);
        }
        if (tpx_buf_add(&b, score, sizeof(score) - 1, &e) != TPX_OK)
            goto oom;
        t->cut[i] = b.len;
    }
    if (tpx_buf_reserve(&b, TPL_SLACK, &e) != TPX_OK)
        goto oom;
    memset(b.data + b.len, 0, TPL_SLACK);
    t->n = n;
    t->tail = n ? "}]" : "[]";
    t->bytes = tpx_buf_detach(&b, NULL);
    return t;
oom:
    tpx_buf_release(&b);
    tpl_free(t);
    return NULL;
}

/* ---- the NodeNames cache ---- */

struct ext_codec_names_cache;

struct ext_codec_names_entry {
    struct ext_codec_names_cache *owner;
    size_t refs;             /* the cache's and each request's; under the cache lock */
    unsigned long long used; /* for LRU; under the cache lock */
    size_t len;              /* the list's bytes, as they came */
    char *bytes;
    char **names; /* decoded: one block (ext_nodescan_node_names) */
    size_t n;
    uint32_t *plain; /* per name: its length when it needs no JSON escaping, else UINT32_MAX */
    struct ext_state_resolution res;
    struct prio_tpl *tpl; /* the prioritize answer around its scores, made by the first one */
    bool utf8;            /* bytes are well-formed UTF-8: only then are they echoed as they came */
};

struct ext_codec_names_cache {
    pthread_mutex_t lock;
    struct ext_codec_names_entry *e[EXT_CODEC_NAMES_CACHED];
    unsigned long long clock;
};

struct ext_codec_names_cache *ext_codec_names_cache_new(struct tpx_err *err)
{
    struct ext_codec_names_cache *c = calloc(1, sizeof(*c));

    if (!c) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void entry_free(struct ext_codec_names_entry *e)
{
    free(e->bytes);
    free(e->names);
    free(e->plain);
    ext_state_resolution_release(&e->res);
    tpl_free(e->tpl);
    free(e);
}

/* Drop one reference; the last one frees the entry. */
static void entry_unref(struct ext_codec_names_entry *e)
{
    struct ext_codec_names_cache *c = e->owner;
    bool last;

    pthread_mutex_lock(&c->lock);
    last = --e->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last)
        entry_free(e);
}

void ext_codec_names_cache_free(struct ext_codec_names_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < EXT_CODEC_NAMES_CACHED; i++) {
        if (c->e[i])
            entry_unref(c->e[i]);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* The entry whose bytes begin at p (with rest bytes from there), with a reference; NULL when
 * none. Lists that do not fit in rest are not compared. */
static struct ext_codec_names_entry *cache_find_prefix(struct ext_codec_names_cache *c,
                                                       const char *p, size_t rest)
{
    struct ext_codec_names_entry *cand[EXT_CODEC_NAMES_CACHED], *hit = NULL;
    size_t n = 0;

    if (rest == 0 || *p != '[')
        return NULL;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < EXT_CODEC_NAMES_CACHED; i++) {
        if (c->e[i] && c->e[i]->len <= rest) {
            c->e[i]->refs++;
            cand[n++] = c->e[i];
        }
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n; i++) {
        if (!hit && memcmp(cand[i]->bytes, p, cand[i]->len) == 0) {
            hit = cand[i];
            pthread_mutex_lock(&c->lock);
            hit->used = ++c->clock;
            pthread_mutex_unlock(&c->lock);
            continue;
        }
        entry_unref(cand[i]);
    }
    return hit;
}

/* Keep a decoded list: the entry takes names (also when it returns NULL: then it frees them) and
 * comes back with a reference for the caller. The least recently used entry makes room. */
static struct ext_codec_names_entry *cache_insert(struct ext_codec_names_cache *c, const char *p,
                                                  size_t len, char **names, size_t n)
{
    struct ext_codec_names_entry *e = calloc(1, sizeof(*e)), *old = NULL;
    size_t slot = 0;

    if (!e || !(e->bytes = malloc(len ? len : 1)) ||
        !(e->plain = malloc((n ? n : 1) * sizeof(*e->plain)))) {
        if (e)
            free(e->bytes);
        free(e);
        free(names);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        size_t pl = tpx_json_plain_len(names[i]);
        e->plain[i] = pl >= UINT32_MAX ? UINT32_MAX : (uint32_t)pl;
    }
    memcpy(e->bytes, p, len);
    e->utf8 = tpx_utf8_valid_len(p, len) == len;
    e->owner = c;
    e->len = len;
    e->names = names;
    e->n = n;
    e->refs = 2;
    ext_state_resolution_init(&e->res);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < EXT_CODEC_NAMES_CACHED; i++) {
        if (!c->e[i]) {
            slot = i;
            break;
        }
        if (c->e[i]->used < c->e[slot]->used)
            slot = i;
    }
    old = c->e[slot];
    if (old && --old->refs > 0)
        old = NULL; /* still in use: its last request frees it */
    c->e[slot] = e;
    e->used = ++c->clock;
    pthread_mutex_unlock(&c->lock);
    if (old)
        entry_free(old);
    return e;
}

/* ---- ExtenderArgs ---- */

#define DEFAULT_MAX_CANDIDATES 100000

size_t ext_codec_max_candidates(const struct ext_codec_opts *o)
{
    return o && o->max_candidates ? o->max_candidates : DEFAULT_MAX_CANDIDATES;
}

/* The outer scan's hooks. Nodes is parsed as the scan meets it (one pass over a 35 MB list, not
 * two); a value that is valid JSON but no NodeList is only an error if the request turns out to
 * be full-node (NodeNames null): then it is parsed again for the message. NodeNames is looked up
 * in the names cache where it starts: a cached list is one complete JSON value, so bytes that
 * begin with it hold exactly that value, and a hit costs one memcmp and no scan; a miss is
 * skipped by its brackets and decoded after the Pod, as before. */
struct args_hook {
    struct ext_nodescan_nodes *nodes;
    bool nodes_failed;
    struct ext_codec_names_cache *cache;
    struct ext_codec_names_entry *hit; /* of the last NodeNames seen */
};

static enum tpx_code args_hook(void *ctx, size_t key, const char *at, size_t rest, size_t *used,
                               struct tpx_err *err)
{
    struct args_hook *h = ctx;
    struct tpx_err e = TPX_ERR_INIT;

    if (key == 2) { /* NodeNames */
        if (h->hit)
            entry_unref(h->hit);
        h->hit = h->cache ? cache_find_prefix(h->cache, at, rest) : NULL;
        if (h->hit) {
            *used = h->hit->len;
            return TPX_OK;
        }
        return ext_nodescan_span_len(at, rest, used, err);
    }
    ext_nodescan_nodes_release(h->nodes); /* a later "Nodes" replaces an earlier one */
    h->nodes_failed = false;
    if (rest >= 4 && memcmp(at, "null", 4) == 0) { /* names mode sends "Nodes":null */
        *used = 4;
        return TPX_OK;
    }
    if (ext_nodescan_nodelist_prefix(at, rest, h->nodes, used, &e) == TPX_OK)
        return TPX_OK;
    if (e.code == TPX_ENOMEM)
        return tpx_err_set(err, TPX_ENOMEM, "%s", e.msg);
    h->nodes_failed = true;
    return ext_nodescan_value_len(at, rest, used, err);
}

enum tpx_code ext_codec_decode_args(const char *body, size_t len, const struct ext_codec_opts *o,
                                    struct ext_codec_args *a, struct tpx_err *err)
{
    static const char *const keys[] = {"Pod", "Nodes", "NodeNames"};
    struct ext_nodescan_span sp[3];
    struct args_hook ah;

    memset(a, 0, sizeof(*a));
    memset(&ah, 0, sizeof(ah));
    a->body = body;
    ah.nodes = &a->nodes;
    ah.cache = o ? o->names_cache : NULL;
    /* NodeNames is tokenized once, by the parser below that reads it (or not at all: a cache
     * hit); Nodes by the hook. */
    if (ext_nodescan_object_keys_hook(body, len, keys, 3, 1U << 2, 1U << 1 | 1U << 2, args_hook,
                                      &ah, sp, err) != TPX_OK) {
        ext_nodescan_nodes_release(&a->nodes);
        if (ah.hit)
            entry_unref(ah.hit);
        tpx_err_prefix(err, "ExtenderArgs");
        return err->code;
    }
    if (!sp[2].null) /* names mode: Nodes (validated) is not used */
        ext_nodescan_nodes_release(&a->nodes);
    a->cached = ah.hit; /* released with a from here on */
    if (a->cached) {
        a->names = a->cached->names;
        a->nnames = a->cached->n;
    }
    if (ext_codec_decode_pod_span(body, &sp[0], o, &a->pod, err) != TPX_OK)
        goto fail;
    if (!sp[2].null) {
        const char *np = body + sp[2].off;
        bool cache = o && o->names_cache && sp[2].len <= EXT_CODEC_NAMES_CACHE_MAX;

        /* the same bytes decoded (and validated) before give the same names */
        if (a->cached) {
            a->names = a->cached->names;
            a->nnames = a->cached->n;
            a->resolution = &a->cached->res;
            a->plain = a->cached->plain;
            a->cached_bytes = a->cached->utf8 ? a->cached->bytes : NULL;
            a->cached_len = a->cached->utf8 ? a->cached->len : 0;
            return TPX_OK;
        }
        if (ext_nodescan_node_names(np, sp[2].len, ext_codec_max_candidates(o), &a->names,
                                    &a->nnames, err) != TPX_OK) {
            tpx_err_prefix(err, "NodeNames");
            goto fail;
        }
        if (cache) {
            a->cached = cache_insert(o->names_cache, np, sp[2].len, a->names, a->nnames);
            if (!a->cached) {
                a->names = NULL;
                tpx_err_set(err, TPX_ENOMEM, "out of memory");
                goto fail;
            }
            a->resolution = &a->cached->res;
            a->plain = a->cached->plain;
            a->cached_bytes = a->cached->utf8 ? a->cached->bytes : NULL;
            a->cached_len = a->cached->utf8 ? a->cached->len : 0;
        }
        return TPX_OK;
    }
    if (!sp[1].null) {
        a->full_nodes = true;
        a->nodes_off = sp[1].off;
        if (ah.nodes_failed) {
            ext_nodescan_nodes_release(&a->nodes);
            if (ext_nodescan_nodelist(body + sp[1].off, sp[1].len, &a->nodes, err) == TPX_OK)
                tpx_err_set(err, TPX_EPARSE, "Nodes is not a NodeList");
            tpx_err_prefix(err, "Nodes");
            goto fail;
        }
        if (a->nodes.n > ext_codec_max_candidates(o)) {
            tpx_err_set(err, TPX_ETOOBIG, "Nodes: more than %zu candidate nodes",
                        ext_codec_max_candidates(o));
            goto fail;
        }
        a->nnames = a->nodes.n;
        a->names = malloc((a->nnames ? a->nnames : 1) * sizeof(char *));
        if (!a->names) {
            tpx_err_set(err, TPX_ENOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < a->nnames; i++)
            a->names[i] = (char *)(a->nodes.items[i].name ? a->nodes.items[i].name : "");
    }
    return TPX_OK;
fail:
    ext_codec_args_release(a);
    return err->code;
}

void ext_codec_args_release(struct ext_codec_args *a)
{
    ext_codec_pod_release(&a->pod);
    if (a->cached) /* the names are the entry's */
        entry_unref(a->cached);
    else
        free(a->names);
    a->cached = NULL;
    a->resolution = NULL;
    a->plain = NULL;
    a->cached_bytes = NULL;
    ext_nodescan_nodes_release(&a->nodes);
    a->names = NULL;
    a->nnames = 0;
}

enum tpx_code ext_codec_node_infos(const struct ext_codec_args *a, const struct ext_codec_opts *o,
                                   struct topo_node_info **out, size_t *n, struct tpx_err *err)
{
    const struct topo_label_config *cfg = o && o->labels ? o->labels : topo_label_config_default();
    struct topo_node_info *v = calloc(a->nodes.n ? a->nodes.n : 1, sizeof(*v));
    /* NULL while no node has a label or a resource: no arithmetic on it then, not even + 0 */
    const struct topo_kv *kv = a->nodes.kv;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if (!v)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    for (size_t i = 0; i < a->nodes.n; i++) {
        const struct ext_nodescan_node *s = &a->nodes.items[i];
        struct topo_node_info *info = &v[k];

        if (!s->name || !*s->name)
            continue;
        if (topo_labels_decode(cfg, kv ? kv + s->labels : NULL, s->nlabels,
                               kv ? kv + s->alloc : NULL, s->nalloc, info, NULL, err) != TPX_OK) {
            tpx_err_prefix(err, "node '%s'", s->name);
            free(v);
            return err->code;
        }
        info->name = s->name;
        info->accel_used = 0;
        info->unschedulable = info->unschedulable || s->unschedulable || !s->ready;
        k++;
    }
    *out = v;
    *n = k;
    return TPX_OK;
}

enum tpx_code ext_codec_filter_error(const char *msg, struct tpx_buf *out, struct tpx_err *err)
{
    if (tpx_buf_adds(out,
                     "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                     "\"FailedAndUnresolvableNodes\":{},\"Error\":",
                     err) != TPX_OK ||
        tpx_json_str(out, msg && *msg ? msg : "error", err) != TPX_OK)
        return err->code;
    return tpx_buf_add(out, "}", 1, err);
}

enum tpx_code ext_codec_priorities(const char *const *names, const int *scores, size_t n,
                                   struct tpx_buf *out, struct tpx_err *err)
{
    return ext_codec_priorities_plain(names, NULL, scores, n, out, err);
}

enum tpx_code ext_codec_priorities_plain(const char *const *names, const uint32_t *plains,
                                         const int *scores, size_t n, struct tpx_buf *out,
                                         struct tpx_err *err)
{
    static const char host[] = "{\"Host\":";
    static const char score[] = ",\"Score\":";
    /* ,{"Host":"NAME","Score":-2147483648} at most around a name */
    const size_t around = 1 + (sizeof(host) - 1) + 2 + (sizeof(score) - 1) + 11 + 1;
    bool room = false;

    if (plains) { /* the whole answer's room at once: then no check per name */
        size_t want = 2;

        for (size_t i = 0; i < n; i++)
            want += (plains[i] == UINT32_MAX ? 6 * strlen(names[i]) : plains[i]) + around;
        room = tpx_buf_reserve(out, want, err) == TPX_OK;
        if (!room && err->code != TPX_ETOOBIG)
            return err->code;
        tpx_err_clear(err); /* near the cap the worst case may not fit where the answer does */
    }
    if (tpx_buf_add(out, "[", 1, err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < n; i++) {
        size_t plain = !plains                   ? tpx_json_plain_len(names[i])
                       : plains[i] == UINT32_MAX ? SIZE_MAX
                                                 : plains[i];

        if (plain == SIZE_MAX) { /* a name to escape: the general path */
            if ((i && tpx_buf_add(out, ",", 1, err) != TPX_OK) ||
                tpx_buf_add(out, host, sizeof(host) - 1, err) != TPX_OK ||
                tpx_json_str(out, names[i], err) != TPX_OK)
                return err->code;
        } else { /* ,{"Host":"NAME" */
            if (!room && tpx_buf_reserve(out, plain + sizeof(host) + 2, err) != TPX_OK)
                return err->code;
            if (i)
                tpx_buf_put(out, ",", 1);
            tpx_buf_put(out, host, sizeof(host) - 1);
            put_quoted(out, names[i], plain);
        }
        if (!room && tpx_buf_reserve(out, sizeof(score) + 12, err) != TPX_OK)
            return err->code;
        tpx_buf_put(out, score, sizeof(score) - 1);
        put_int(out, scores[i]);
        tpx_buf_put(out, "}", 1);
    }
    return tpx_buf_add(out, "]", 1, err);
}

/* ---- bind ---- */

/* Top-level string fields, as Go's encoding/json fills a struct's string fields (decode.go,
 * object()): each key is matched exactly or else case-insensitively (ext_nodescan's key rule),
 * every occurrence is decoded into the field in turn, so the last wins, and a null leaves the field
 * as it was. A value of another type is an error, as Go's UnmarshalTypeError. */
struct str_fields {
    const char *const *keys;
    const char *at[8]; /* the last string's opening quote, NULL: none */
    size_t len[8];     /* its raw length between the quotes */
};

static enum tpx_code str_field_hook(void *ctx, size_t key, const char *at, size_t rest,
                                    size_t *used, struct tpx_err *err)
{
    struct str_fields *f = ctx;

    if (ext_nodescan_value_len(at, rest, used, err) != TPX_OK)
        return err->code;
    if (*used == 4 && memcmp(at, "null", 4) == 0)
        return TPX_OK;
    if (at[0] != '"')
        return tpx_err_set(err, TPX_EPARSE, "%s is not a string", f->keys[key]);
    f->at[key] = at;
    f->len[key] = *used - 2;
    return TPX_OK;
}

/* The field's decoded value, malloc'd; NULL when absent (or out of memory: *oom). */
static char *str_field(const struct str_fields *f, size_t key, bool *oom)
{
    char *d;
    struct ext_nodescan_raw r;

    if (!f->at[key])
        return NULL;
    d = malloc(f->len[key] + 1);
    if (!d) {
        *oom = true;
        return NULL;
    }
    r.off = 1;
    r.len =
        (uint32_t)f->len[key] | (memchr(f->at[key] + 1, '\\', f->len[key]) ? EXT_SCAN_RAW_ESC : 0);
    ext_nodescan_raw_decode(f->at[key], r, d);
    return d;
}

enum tpx_code ext_codec_decode_bind(const char *body, size_t len, struct ext_codec_bind_args *b,
                                    struct tpx_err *err)
{
    static const char *const keys[] = {"PodName", "PodNamespace", "PodUID", "Node"};
    struct ext_nodescan_span sp[4];
    struct str_fields f;
    bool oom = false;

    memset(b, 0, sizeof(*b));
    memset(&f, 0, sizeof(f));
    f.keys = keys;
    if (ext_nodescan_object_keys_hook(body, len, keys, 4, 0, 0xF, str_field_hook, &f, sp, err) !=
        TPX_OK) {
        tpx_err_prefix(err, "ExtenderBindingArgs");
        return err->code;
    }
    if (!f.at[2] || f.len[2] == 0 || !f.at[3] || f.len[3] == 0)
        return tpx_err_set(err, TPX_EPARSE, "ExtenderBindingArgs needs PodUID and Node");
    b->pod_name = str_field(&f, 0, &oom);
    b->pod_ns = str_field(&f, 1, &oom);
    b->pod_uid = str_field(&f, 2, &oom);
    b->node = str_field(&f, 3, &oom);
    if (oom) {
        ext_codec_bind_args_release(b);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    return TPX_OK;
}

void ext_codec_bind_args_release(struct ext_codec_bind_args *b)
{
    free(b->pod_name);
    free(b->pod_ns);
    free(b->pod_uid);
    free(b->node);
    memset(b, 0, sizeof(*b));
}

enum tpx_code ext_codec_bind_result(const char *msg, struct tpx_buf *out, struct tpx_err *err)
{
    if (tpx_buf_adds(out, "{\"Error\":", err) != TPX_OK ||
        tpx_json_str(out, msg ? msg : "", err) != TPX_OK)
        return err->code;
    return tpx_buf_add(out, "}", 1, err);
}

/* ---- /debug/state ---- */

enum tpx_code ext_codec_debug_state(const struct pol_ledger *l, size_t pods_seen,
                                    struct tpx_buf *out, struct tpx_err *err)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    size_t nr = topo_cluster_rack_count(c), ng = pol_ledger_group_count(l);
    struct pol_rack_summary *r = calloc(nr ? nr : 1, sizeof(*r));
    struct pol_group_summary *g = calloc(ng ? ng : 1, sizeof(*g));
    json_t *root = json_object(), *racks = json_array(), *groups = json_array();
    enum tpx_code rc = TPX_OK;
    char *text = NULL;

    if (!r || !g || !root || !racks || !groups) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    pol_ledger_racks(l, r);
    pol_ledger_groups(l, g);
    json_object_set_new(root, "nodes", json_integer((json_int_t)topo_cluster_node_count(c)));
    json_object_set_new(root, "domains", json_integer((json_int_t)topo_cluster_domain_count(c)));
    json_object_set_new(root, "pods_tracked", json_integer((json_int_t)pods_seen));
    for (size_t i = 0; i < nr; i++) {
        json_array_append_new(racks, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "rack",
                                               topo_cluster_rack_name(c, r[i].rack), "accel_total",
                                               (json_int_t)r[i].accel_total, "accel_free",
                                               (json_int_t)r[i].accel_free, "accel_reserved",
                                               (json_int_t)r[i].accel_reserved, "free_domains",
                                               (json_int_t)r[i].free_domains, "largest_tp_now",
                                               (json_int_t)r[i].largest_tp_now));
    }
    for (size_t i = 0; i < ng; i++) {
        json_t *gj = json_pack(
            "{s:s?,s:s?,s:s?,s:I,s:I,s:I,s:I}", "group", g[i].group, "display", g[i].display,
            "rack", g[i].rack == TOPO_NONE ? NULL : topo_cluster_rack_name(c, g[i].rack),
            "members_placed", (json_int_t)g[i].members_placed, "group_size",
            (json_int_t)g[i].group_size, "accel_reserved", (json_int_t)g[i].accel_reserved,
            "reservation_expires", (json_int_t)g[i].expires);
        json_array_append_new(groups, gj);
    }
    json_object_set_new(root, "racks", racks);
    json_object_set_new(root, "groups", groups);
    racks = groups = NULL;
    text = json_dumps(root, JSON_COMPACT);
    if (!text) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    rc = tpx_buf_adds(out, text, err);
out:
    free(text);
    json_decref(racks);
    json_decref(groups);
    json_decref(root);
    free(r);
    free(g);
    return rc;
}

/* ---- the prioritize answer, streamed ---- */

struct ext_codec_prio_stream {
    const struct prio_tpl *t;
    struct prio_tpl *own; /* the template when the names are not a cached list's */
    const int *scores;
    void (*release)(void *);
    void *release_ctx;
    size_t i; /* the name whose segment (sub 0) or score (sub 1) comes next */
    unsigned sub;
    bool tail_done;
    char num[16];
    const char *piece; /* what is left of the current piece */
    size_t left;
    size_t pos; /* bytes handed out so far */
};

/* The cached list's template, made once (by the first prioritize that needs it); NULL when out
 * of memory. */
static const struct prio_tpl *entry_tpl(struct ext_codec_names_entry *e)
{
    struct ext_codec_names_cache *c = e->owner;
    struct prio_tpl *t;

    pthread_mutex_lock(&c->lock);
    t = e->tpl;
    pthread_mutex_unlock(&c->lock);
    if (t)
        return t;
    t = tpl_new((const char *const *)e->names, e->plain, e->n);
    if (!t)
        return NULL;
    pthread_mutex_lock(&c->lock);
    if (e->tpl) { /* another request made it meanwhile */
        tpl_free(t);
        t = e->tpl;
    } else {
        e->tpl = t;
    }
    pthread_mutex_unlock(&c->lock);
    return t;
}

struct ext_codec_prio_stream *ext_codec_priorities_stream_new(const struct ext_codec_args *a,
                                                              const int *scores, size_t cap,
                                                              void (*release)(void *),
                                                              void *release_ctx, size_t *len,
                                                              struct tpx_err *err)
{
    struct ext_codec_prio_stream *f = calloc(1, sizeof(*f));
    size_t total;

    *len = 0;
    if (!f) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return NULL;
    }
    if (a->cached && !a->full_nodes)
        f->t = entry_tpl(a->cached);
    else
        f->t = f->own = tpl_new((const char *const *)a->names, a->plain, a->nnames);
    if (!f->t) {
        free(f);
        tpx_err_set(err, TPX_ENOMEM, "out of memory writing the prioritize answer");
        return NULL;
    }
    total = (f->t->n ? f->t->cut[f->t->n - 1] : 0) + 2;
    for (size_t i = 0; i < f->t->n; i++)
        total += score_len(scores[i]);
    if (total > cap) {
        tpl_free(f->own);
        free(f);
        tpx_err_set(err, TPX_ETOOBIG, "buffer limit of %zu bytes exceeded", cap);
        return NULL;
    }
    f->scores = scores;
    f->release = release;
    f->release_ctx = release_ctx;
    *len = total;
    return f;
}

size_t ext_codec_priorities_stream_read(struct ext_codec_prio_stream *f, size_t pos, char *buf,
                                        size_t max)
{
    const struct prio_tpl *t = f->t;
    size_t n = 0;

    if (pos != f->pos)
        return 0; /* only sequential reads */
    while (n < max) {
        if (f->left) {
            size_t k = f->left < max - n ? f->left : max - n;
            memcpy(buf + n, f->piece, k);
            f->piece += k;
            f->left -= k;
            n += k;
        } else if (f->i < t->n && f->sub == 0) {
            size_t from = f->i ? t->cut[f->i - 1] : 0, sl = t->cut[f->i] - from;
            if (max - n >= TPL_SLACK + sizeof(f->num) && sl <= TPL_SLACK) {
                /* the segment and its score at once; a copy of fixed size is a few moves, the
                 * bytes past the segment are written over or past the answer's end */
                memcpy(buf + n, t->bytes + from, TPL_SLACK);
                n += sl;
                n += score_put(buf + n, f->scores[f->i]);
                f->i++;
                continue;
            }
            if (max - n >= sl + sizeof(f->num)) {
                memcpy(buf + n, t->bytes + from, sl);
                n += sl;
                n += score_put(buf + n, f->scores[f->i]);
                f->i++;
                continue;
            }
            f->piece = t->bytes + from;
            f->left = sl;
            f->sub = 1;
        } else if (f->i < t->n) {
            f->left = score_put(f->num, f->scores[f->i]);
            f->piece = f->num;
            f->sub = 0;
            f->i++;
        } else if (!f->tail_done) {
            f->piece = t->tail;
            f->left = 2;
            f->tail_done = true;
        } else {
            break;
        }
    }
    f->pos += n;
    return n;
}

void ext_codec_priorities_stream_free(struct ext_codec_prio_stream *f)
{
    if (!f)
        return;
    tpl_free(f->own);
    if (f->release)
        f->release(f->release_ctx);
    free(f);
}
