/* SPDX-License-Identifier: Apache-2.0 */
/* kube/watch.c - list+watch loops for nodes and pods, one thread and one kube_client per kind.
 * A LIST is streamed page by page into the sink. Chunks are split into newline-delimited events in
 * a capped buffer; the resume point is the last resourceVersion seen (bookmarks included); 410 in
 * either form means relist. */
#include "kube/watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* malloc_trim is glibc's; under ASan or TSan the allocator is the sanitizer's and glibc's trim
 * walks arenas that were never set up (SEGV: google/sanitizers#1721; seen under TSan in CI), so
 * it is left out there. GCC says __SANITIZE_*__, clang __has_feature(). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TPX_SANITIZED_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TPX_SANITIZED_ALLOCATOR 1
#endif
#if defined(__GLIBC__) && !defined(TPX_SANITIZED_ALLOCATOR)
#include <malloc.h>
#define TRIM_HEAP() malloc_trim(0)
#else
#define TRIM_HEAP() ((void)0)
#endif

#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/banned.h"

#define DEFAULT_PAGE_LIMIT KUBE_LIST_LIMIT
#define DEFAULT_TIMEOUT_S 300U
#define DEFAULT_MAX_EVENT ((size_t)64 << 20)
#define DEFAULT_BACKOFF_MIN_MS 500U
#define DEFAULT_BACKOFF_MAX_MS 30000U
#define DEFAULT_POD_SELECTOR "status.phase!=Succeeded,status.phase!=Failed"

struct kind_loop {
    struct kube_watch *w;
    enum kube_kind kind;
    struct kube_client *k;
    pthread_t th;
    bool started;
    char *rv; /* resume point; NULL means LIST first */
    struct kube_watch_lines lines;
    struct tpx_backoff retry;
    /* set by the stream callbacks, read after the stream ends */
    bool expired;
    bool broken; /* unparsable or oversized event: relist */
    bool got_bytes;
    struct tpx_err serr;
    struct kube_watch_stats st; /* under w->mu */
};

struct kube_watch {
    struct kube_watch_sink sink;
    struct kube_watch_config cfg;
    char *pod_selector;
    pthread_mutex_t mu; /* recursive: a wait predicate may read the stats */
    pthread_cond_t cv;
    atomic_bool stopping;
    struct kind_loop loops[KUBE_KIND_COUNT];
};

/* PodGroups are scheduling.k8s.io/v1beta1 in Kubernetes 1.37 (k8s.io/api v0.37.2
 * scheduling/v1beta1/types.go); resource.k8s.io/v1 is GA since Kubernetes 1.34 (KEP-4381); the
 * NVIDIA DRA driver's ComputeDomain CRD is resource.nvidia.com/v1beta1. */
static const struct {
    const char *name;
    const char *path;
} kinds[KUBE_KIND_COUNT] = {
    {"node", "/api/v1/nodes"},
    {"pod", "/api/v1/pods"},
    {"podgroup", "/apis/scheduling.k8s.io/v1beta1/podgroups"},
    {"resourceslice", "/apis/resource.k8s.io/v1/resourceslices"},
    {"resourceclaim", "/apis/resource.k8s.io/v1/resourceclaims"},
    {"deviceclass", "/apis/resource.k8s.io/v1/deviceclasses"},
    {"computedomain", "/apis/resource.nvidia.com/v1beta1/computedomains"},
};

const char *kube_kind_name(enum kube_kind kind)
{
    return (unsigned)kind < KUBE_KIND_COUNT ? kinds[kind].name : "?";
}

const char *kube_kind_path(enum kube_kind kind)
{
    return (unsigned)kind < KUBE_KIND_COUNT ? kinds[kind].path : "/";
}

static bool optional_kind(enum kube_kind kind)
{
    return kind != KUBE_KIND_NODE && kind != KUBE_KIND_POD;
}

/* ---- line splitting --------------------------------------------------------------------- */

void kube_watch_lines_init(struct kube_watch_lines *l, size_t cap)
{
    tpx_buf_init(&l->part, cap);
}

void kube_watch_lines_release(struct kube_watch_lines *l)
{
    tpx_buf_release(&l->part);
}

static enum tpx_code too_long(const struct kube_watch_lines *l, struct tpx_err *err)
{
    return tpx_err_set(err, TPX_ETOOBIG, "watch event longer than %zu bytes", l->part.cap);
}

static enum tpx_code lines_append(struct kube_watch_lines *l, const char *p, size_t n,
                                  struct tpx_err *err)
{
    struct tpx_err e = TPX_ERR_INIT;

    if (tpx_buf_add(&l->part, p, n, &e) == TPX_OK)
        return TPX_OK;
    if (e.code == TPX_ETOOBIG)
        return too_long(l, err);
    return tpx_err_set(err, e.code, "out of memory buffering a watch event");
}

enum tpx_code kube_watch_lines_feed(struct kube_watch_lines *l, const char *p, size_t n,
                                    bool (*on_line)(void *ctx, const char *line, size_t len),
                                    void *ctx, struct tpx_err *err)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;

        if (!nl)
            return lines_append(l, p, take, err);
        if (l->part.len == 0) {
            /* The whole line is in this chunk: no copy. */
            if (take > l->part.cap)
                return too_long(l, err);
            if (take > 0 && !on_line(ctx, p, take))
                return TPX_OK;
        } else {
            bool more;

            if (lines_append(l, p, take, err) != TPX_OK)
                return err->code;
            more = on_line(ctx, l->part.data, l->part.len);
            tpx_buf_reset(&l->part);
            if (!more)
                return TPX_OK;
        }
        p += take + 1;
        n -= take + 1;
    }
    return TPX_OK;
}

/* ---- helpers ---------------------------------------------------------------------------- */

static void lock(struct kube_watch *w)
{
    pthread_mutex_lock(&w->mu);
}

static void unlock_and_signal(struct kube_watch *w)
{
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static bool is_stopping(void *ctx)
{
    struct kube_watch *w = ctx;

    return atomic_load(&w->stopping);
}

/* Percent-encode a query value (selectors and resourceVersions are opaque strings). */
static enum tpx_code add_escaped(struct tpx_buf *b, const char *s, struct tpx_err *err)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char enc[3];

        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            if (tpx_buf_add(b, p, 1, err) != TPX_OK)
                return err->code;
            continue;
        }
        enc[0] = '%';
        enc[1] = hex[*p >> 4];
        enc[2] = hex[*p & 15];
        if (tpx_buf_add(b, enc, 3, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

static const char *base_path(enum kube_kind kind)
{
    return kube_kind_path(kind);
}

static void set_rv(struct kind_loop *l, const char *rv)
{
    char *copy;

    if (!rv || !*rv)
        return;
    copy = strdup(rv);
    if (!copy)
        return;
    free(l->rv);
    l->rv = copy;
    lock(l->w);
    snprintf(l->st.rv, sizeof(l->st.rv), "%s", rv);
    unlock_and_signal(l->w);
}

static const char *obj_rv(json_t *obj)
{
    json_t *v = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");

    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void note_failure(struct kind_loop *l, const struct tpx_err *e, bool expired)
{
    lock(l->w);
    if (expired)
        l->st.expired++;
    else
        l->st.failures++;
    snprintf(l->st.last_error, sizeof(l->st.last_error), "%.255s", e->msg);
    unlock_and_signal(l->w);
    TPX_LOG(expired ? TPX_INFO : TPX_WARN, expired ? "watch expired, relisting" : "watch failed",
            TPX_S("kind", kube_kind_name(l->kind)), TPX_S("err", e->msg));
}

/* Sleep before the next try, waking at once on stop. */
static void backoff(struct kind_loop *l, unsigned fails)
{
    struct kube_watch *w = l->w;
    struct timespec ts = tpx_deadline_ms(tpx_backoff_ms(&l->retry, fails));

    pthread_mutex_lock(&w->mu);
    tpx_cond_wait_stop(&w->cv, &w->mu, &ts, &w->stopping);
    pthread_mutex_unlock(&w->mu);
}

/* ---- LIST ------------------------------------------------------------------------------- */

struct list_run {
    struct kind_loop *l;
    size_t items;
};

/* One listed object, delivered while its page is still the only one in memory. */
static bool deliver(void *ctx, json_t *item)
{
    struct list_run *lr = ctx;
    struct kube_watch *w = lr->l->w;

    lock(w);
    if (w->sink.upsert)
        w->sink.upsert(w->sink.ctx, lr->l->kind, item);
    pthread_mutex_unlock(&w->mu);
    lr->items++;
    return !atomic_load(&w->stopping);
}

static enum tpx_code do_list(struct kind_loop *l, struct tpx_err *err)
{
    struct kube_watch *w = l->w;
    struct list_run lr = {l, 0};
    struct tpx_buf q;
    char *rv = NULL;

    tpx_buf_init(&q, 4096);
    if (l->kind == KUBE_KIND_POD && w->pod_selector[0]) {
        tpx_buf_adds(&q, "fieldSelector=", err);
        add_escaped(&q, w->pod_selector, err);
    }
    if (err->code != TPX_OK) {
        tpx_buf_release(&q);
        return err->code;
    }
    /* Streamed: every page's items go to the sink as soon as the page is parsed, and the page is
     * freed before the next one is fetched, so a list never holds more than one page of JSON
     * (10 000 nodes and 50 000 pods as jansson values took ~700 MB when collected whole). */
    lock(w);
    if (w->sink.reset)
        w->sink.reset(w->sink.ctx, l->kind);
    unlock_and_signal(w);
    kube_list(l->k, base_path(l->kind), q.data, w->cfg.page_limit, deliver, &lr, &rv, err);
    tpx_buf_release(&q);
    if (err->code == TPX_EAPI && err->http_status == 404 && optional_kind(l->kind)) {
        /* not served here: an empty list, so readiness does not wait for it */
        free(rv);
        lock(w);
        if (w->sink.synced)
            w->sink.synced(w->sink.ctx, l->kind);
        l->st.lists++;
        l->st.synced = true;
        l->st.absent = true;
        unlock_and_signal(w);
        return TPX_ENOENT;
    }
    if (err->code != TPX_OK) {
        free(rv);
        return err->code;
    }
    if (!rv || !*rv) {
        free(rv);
        return tpx_err_set(err, TPX_EPARSE, "LIST %s: no metadata.resourceVersion",
                           base_path(l->kind));
    }
    lock(w);
    if (w->sink.synced)
        w->sink.synced(w->sink.ctx, l->kind);
    l->st.lists++;
    l->st.synced = true;
    l->st.absent = false;
    unlock_and_signal(w);
    TPX_LOG(TPX_INFO, "listed", TPX_S("kind", kube_kind_name(l->kind)), TPX_I("items", lr.items),
            TPX_S("rv", rv));
    set_rv(l, rv);
    free(rv);
    /* glibc keeps the heap pages of freed pages' JSON (and of a relist's replaced objects) mapped
     * in its arenas, so RSS would stay at the list's peak for the life of the process: hand the
     * free pages back to the kernel now that the list is applied. */
    TRIM_HEAP();
    return TPX_OK;
}

/* ---- WATCH ------------------------------------------------------------------------------ */

static bool on_event(void *ctx, const char *line, size_t len)
{
    struct kind_loop *l = ctx;
    struct kube_watch *w = l->w;
    json_error_t je;
    json_t *ev = json_loadb(line, len, 0, &je);
    json_t *obj = json_object_get(ev, "object");
    json_t *t = json_object_get(ev, "type");
    const char *type = json_is_string(t) ? json_string_value(t) : NULL;
    bool go_on = true;

    if (!ev || !type || !json_is_object(obj)) {
        tpx_err_set(&l->serr, TPX_EPARSE, "watch %s: bad event at column %d: %s",
                    base_path(l->kind), je.column, ev ? "no type or object" : je.text);
        l->broken = true;
        json_decref(ev);
        return false;
    }
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
        strcmp(type, "DELETED") == 0) {
        lock(w);
        if (type[0] == 'D') {
            if (w->sink.remove)
                w->sink.remove(w->sink.ctx, l->kind, obj);
        } else if (w->sink.upsert) {
            w->sink.upsert(w->sink.ctx, l->kind, obj);
        }
        l->st.events++;
        unlock_and_signal(w);
        set_rv(l, obj_rv(obj));
    } else if (strcmp(type, "BOOKMARK") == 0) {
        lock(w);
        l->st.bookmarks++;
        unlock_and_signal(w);
        set_rv(l, obj_rv(obj));
    } else if (strcmp(type, "ERROR") == 0) {
        json_t *code = json_object_get(obj, "code");
        json_t *msg = json_object_get(obj, "message");

        tpx_err_set(&l->serr, TPX_EAPI, "watch %s: ERROR event %lld: %s", base_path(l->kind),
                    json_is_integer(code) ? (long long)json_integer_value(code) : 0LL,
                    json_is_string(msg) ? json_string_value(msg) : "");
        l->serr.http_status = json_is_integer(code) ? (long)json_integer_value(code) : 0;
        if (l->serr.http_status == 410)
            l->expired = true;
        go_on = false;
    }
    /* Unknown types are skipped: newer servers may add some. */
    json_decref(ev);
    return go_on;
}

static bool on_data(void *ctx, const char *p, size_t n)
{
    struct kind_loop *l = ctx;
    struct kube_watch *w = l->w;
    struct tpx_err e = TPX_ERR_INIT;
    unsigned long before = l->st.events; /* only this thread changes it */
    enum tpx_code rc;

    l->got_bytes = true;
    rc = kube_watch_lines_feed(&l->lines, p, n, on_event, l, &e);
    if (l->st.events != before && w->sink.drained) {
        /* every event of this read is delivered: the burst ends here */
        lock(w);
        w->sink.drained(w->sink.ctx, l->kind);
        unlock_and_signal(w);
    }
    if (rc != TPX_OK) {
        tpx_err_set(&l->serr, e.code, "watch %s: %s", base_path(l->kind), e.msg);
        l->broken = true;
        return false;
    }
    return !l->broken && !l->expired && l->serr.code == TPX_OK;
}

static enum tpx_code do_watch(struct kind_loop *l, struct tpx_err *err)
{
    struct kube_watch *w = l->w;
    struct tpx_buf path;

    tpx_buf_init(&path, 8192);
    tpx_buf_addf(&path, err,
                 "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u&resourceVersion=",
                 base_path(l->kind), w->cfg.timeout_s);
    add_escaped(&path, l->rv, err);
    if (l->kind == KUBE_KIND_POD && w->pod_selector[0]) {
        tpx_buf_adds(&path, "&fieldSelector=", err);
        add_escaped(&path, w->pod_selector, err);
    }
    if (err->code != TPX_OK) {
        tpx_buf_release(&path);
        return err->code;
    }
    lock(w);
    l->st.watches++;
    unlock_and_signal(w);
    tpx_buf_reset(&l->lines.part);
    l->expired = false;
    l->broken = false;
    l->got_bytes = false;
    tpx_err_clear(&l->serr);
    /* The server ends the watch after timeoutSeconds; allow it a minute more before we do. */
    kube_stream(l->k, path.data, (long)(w->cfg.timeout_s + 60) * 1000L, on_data, l, err);
    tpx_buf_release(&path);
    if (l->serr.code != TPX_OK) {
        tpx_err_clear(err);
        tpx_err_set(err, l->serr.code, "%s", l->serr.msg);
        err->http_status = l->serr.http_status;
    }
    return err->code;
}

static void *run(void *arg)
{
    struct kind_loop *l = arg;
    struct kube_watch *w = l->w;
    unsigned fails = 0;
    bool absent_logged = false;

    while (!atomic_load(&w->stopping)) {
        struct tpx_err e = TPX_ERR_INIT;
        bool expired;

        if (!l->rv) {
            if (do_list(l, &e) == TPX_ENOENT) {
                /* 404: the kind is not served; look again later, quietly */
                struct timespec ts = tpx_deadline_ms(w->cfg.backoff_max_ms);

                if (!absent_logged)
                    TPX_LOG(TPX_INFO, "not served, watched as empty",
                            TPX_S("kind", kube_kind_name(l->kind)), TPX_S("err", e.msg));
                absent_logged = true;
                pthread_mutex_lock(&w->mu);
                tpx_cond_wait_stop(&w->cv, &w->mu, &ts, &w->stopping);
                pthread_mutex_unlock(&w->mu);
                continue;
            }
            if (e.code != TPX_OK) {
                if (atomic_load(&w->stopping))
                    break;
                note_failure(l, &e, e.http_status == 410);
                backoff(l, fails++);
                continue;
            }
            fails = 0;
            continue;
        }
        do_watch(l, &e);
        if (atomic_load(&w->stopping))
            break;
        expired = l->expired || (e.code == TPX_EAPI && e.http_status == 410);
        if (expired) {
            /* History is gone: start again from a fresh list, at once. */
            note_failure(l, &e, true);
            free(l->rv);
            l->rv = NULL;
            continue;
        }
        if (l->broken) {
            /* An event was lost: only a relist can make the view whole again. */
            note_failure(l, &e, false);
            free(l->rv);
            l->rv = NULL;
            backoff(l, fails++);
            continue;
        }
        if (e.code != TPX_OK) {
            note_failure(l, &e, false);
            backoff(l, fails++);
            continue;
        }
        if (!l->got_bytes) {
            /* A clean but empty end: do not spin against a server that closes at once. */
            backoff(l, 0);
            continue;
        }
        fails = 0;
    }
    return NULL;
}

/* ---- lifecycle -------------------------------------------------------------------------- */

struct kube_watch *kube_watch_start(const struct kube_config *kcfg,
                                    const struct kube_watch_config *wcfg,
                                    const struct kube_watch_sink *sink, struct tpx_err *err)
{
    struct kube_watch *w = calloc(1, sizeof(*w));
    pthread_mutexattr_t ma;

    if (!w) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory starting the watch");
        return NULL;
    }
    if (wcfg)
        w->cfg = *wcfg;
    if (sink)
        w->sink = *sink;
    if (!w->cfg.page_limit)
        w->cfg.page_limit = DEFAULT_PAGE_LIMIT;
    if (!w->cfg.timeout_s)
        w->cfg.timeout_s = DEFAULT_TIMEOUT_S;
    if (!w->cfg.max_event)
        w->cfg.max_event = DEFAULT_MAX_EVENT;
    if (!w->cfg.backoff_min_ms)
        w->cfg.backoff_min_ms = DEFAULT_BACKOFF_MIN_MS;
    if (!w->cfg.backoff_max_ms)
        w->cfg.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    w->pod_selector =
        strdup(w->cfg.pod_field_selector ? w->cfg.pod_field_selector : DEFAULT_POD_SELECTOR);
    w->cfg.pod_field_selector = NULL;
    atomic_init(&w->stopping, false);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&w->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_init(&w->cv, NULL);
    if (!w->pod_selector) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory starting the watch");
        goto fail;
    }
    for (int i = 0; i < KUBE_KIND_COUNT; i++) {
        struct kind_loop *l = &w->loops[i];

        l->w = w;
        l->kind = (enum kube_kind)i;
        kube_watch_lines_init(&l->lines, w->cfg.max_event);
        tpx_backoff_init(&l->retry, w->cfg.backoff_min_ms, w->cfg.backoff_max_ms, true);
        if ((i == KUBE_KIND_NODE && w->cfg.no_nodes) || (i == KUBE_KIND_POD && w->cfg.no_pods) ||
            (i == KUBE_KIND_PODGROUP && !w->cfg.podgroups) || (i >= KUBE_KIND_SLICE && !w->cfg.dra))
            continue;
        l->k = kube_client_new(kcfg, err);
        if (!l->k) {
            tpx_err_prefix(err, "watch %ss", kube_kind_name(l->kind));
            goto fail;
        }
        kube_set_cancel(l->k, is_stopping, w);
    }
    for (int i = 0; i < KUBE_KIND_COUNT; i++) {
        struct kind_loop *l = &w->loops[i];
        int rc;

        if (!l->k)
            continue;
        rc = pthread_create(&l->th, NULL, run, l);
        if (rc != 0) {
            tpx_err_errno(err, rc, "cannot start the %s watch thread", kube_kind_name(l->kind));
            goto fail;
        }
        l->started = true;
    }
    return w;
fail:
    kube_watch_stop(w);
    return NULL;
}

bool kube_watch_is_synced(struct kube_watch *w)
{
    bool ok = true;

    lock(w);
    for (int i = 0; i < KUBE_KIND_COUNT; i++) {
        if (w->loops[i].k && !w->loops[i].st.synced)
            ok = false;
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void kube_watch_get_stats(struct kube_watch *w, enum kube_kind kind, struct kube_watch_stats *out)
{
    lock(w);
    *out = w->loops[kind].st;
    pthread_mutex_unlock(&w->mu);
}

bool kube_watch_wait(struct kube_watch *w, bool (*pred)(void *ctx, struct kube_watch *w), void *ctx,
                     long timeout_ms)
{
    struct timespec ts;
    bool ok;

    ts = tpx_deadline_ms(timeout_ms > 0 ? (unsigned long)timeout_ms : 0);
    lock(w);
    while (!(ok = pred(ctx, w))) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0) {
            ok = pred(ctx, w);
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void kube_watch_stop(struct kube_watch *w)
{
    if (!w)
        return;
    lock(w);
    atomic_store(&w->stopping, true);
    unlock_and_signal(w);
    for (int i = 0; i < KUBE_KIND_COUNT; i++) {
        struct kind_loop *l = &w->loops[i];

        if (l->started)
            pthread_join(l->th, NULL);
        kube_client_free(l->k);
        kube_watch_lines_release(&l->lines);
        free(l->rv);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->pod_selector);
    free(w);
}
