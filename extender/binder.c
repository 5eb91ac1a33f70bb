/* SPDX-License-Identifier: Apache-2.0 */
/* extender/binder.c - Binding POSTs from a pool of API clients, and Events from a queue.
 *
 * Why a pool and not one client per MHD thread: MHD does not tell a handler which pool thread
 * runs it, and binds are rare next to filters; a few clients behind a mutex cost nothing and keep
 * curl's connection reuse. Why a queue for events: bind sits on the scheduler's 5 s timeout, and
 * an Event is only information, so it must never hold a bind up; while the API server is away the
 * queue keeps the events and the thread retries them in order. */
#include "extender/binder.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/utf8.h"

#define DEFAULT_CLIENTS 4
#define MAX_CLIENTS 64
#define DEFAULT_BIND_TIMEOUT_MS 4000
#define DEFAULT_EVENT_QUEUE 1024
#define DEFAULT_EVENT_MAX_AGE_S 600
#define DEFAULT_DEDUPE_S 3600
#define DEDUPE_SLOTS 1024
#define EVENT_BACKOFF_MS 250
#define EVENT_BACKOFF_MAX_MS 5000
#define SHUTDOWN_FLUSH_S 2

struct event {
    char *ns;
    char *pod;
    char *uid;
    char *type;
    char *reason;
    char *message;
    char *name; /* metadata.name: POD.<hex>, the same on every try */
    time_t born;
    struct event *next;
};

struct seen {
    uint64_t hash;
    time_t at;
};

struct ext_binder {
    struct ext_binder_config cfg;
    char *component;
    struct kube_config kcfg; /* for binds: the caller's, with the bind timeout */

    pthread_mutex_t pool_mu; /* clients, busy, nclients */
    pthread_cond_t pool_cv;
    struct kube_client *clients[MAX_CLIENTS];
    bool busy[MAX_CLIENTS];
    unsigned nclients;

    pthread_mutex_t mu; /* the queue, the dedupe table, the counters */
    pthread_cond_t cv;
    struct event *head;
    struct event *tail;
    struct event *sending; /* the head while the thread sends it without the lock */
    size_t queued;
    struct seen seen[DEDUPE_SLOTS];
    struct ext_binder_stats st;
    atomic_bool stopping;
    atomic_uint_fast64_t event_seq; /* keeps event names apart within one nanosecond */
    struct kube_client *ev_client;
    pthread_t th;
    bool started;
};

/* ---- events ----------------------------------------------------------------------------- */

static void event_free(struct event *e)
{
    if (!e)
        return;
    free(e->ns);
    free(e->pod);
    free(e->uid);
    free(e->type);
    free(e->reason);
    free(e->message);
    free(e->name);
    free(e);
}

/* POD.<hex nanoseconds>, as client-go's recorder names events, with the pod part cut so the
 * whole fits the 253 characters of an object name. */
static char *event_name(struct ext_binder *b, const char *pod)
{
    struct timespec ts;
    uint64_t id;
    char *out = malloc(254);

    if (!out)
        return NULL;
    clock_gettime(CLOCK_REALTIME, &ts);
    id = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec +
         atomic_fetch_add(&b->event_seq, 1);
    snprintf(out, 254, "%.236s.%016llx", pod, (unsigned long long)id);
    return out;
}

static bool is_stopping(void *ctx)
{
    struct ext_binder *b = ctx;

    return atomic_load(&b->stopping);
}

/* Wait ms or until stop; returns true when stopping. mu held. */
static bool wait_ms(struct ext_binder *b, unsigned long ms)
{
    struct timespec ts = tpx_deadline_ms(ms);

    return tpx_cond_wait_stop(&b->cv, &b->mu, &ts, &b->stopping);
}

static void *event_loop(void *arg)
{
    struct ext_binder *b = arg;
    struct tpx_backoff retry;
    unsigned tries = 0;

    tpx_backoff_init(&retry, EVENT_BACKOFF_MS, EVENT_BACKOFF_MAX_MS, false);

    pthread_mutex_lock(&b->mu);
    while (!atomic_load(&b->stopping)) {
        struct event *e = b->head;
        struct kube_event ev;
        struct tpx_err err = TPX_ERR_INIT;
        enum tpx_code rc;

        if (!e) {
            pthread_cond_wait(&b->cv, &b->mu);
            continue;
        }
        /* The head stays queued while it is sent, so events keep their order across retries;
         * `sending` keeps enqueue() from dropping it meanwhile. */
        ev = (struct kube_event){e->ns,      e->pod,       e->uid,  e->type, e->reason,
                                 e->message, b->component, e->name, e->born};
        b->sending = e;
        pthread_mutex_unlock(&b->mu);
        rc = kube_event(b->ev_client, &ev, &err);
        pthread_mutex_lock(&b->mu);
        b->sending = NULL;
        if (rc == TPX_OK || time(NULL) - e->born > (time_t)b->cfg.event_max_age_s ||
            (rc == TPX_EAPI && err.http_status >= 400 && err.http_status < 500 &&
             err.http_status != 429 && err.http_status != 401)) {
            /* delivered, too old, or refused for good (403, 404, 422): next one */
            if (rc == TPX_OK) {
                b->st.events_sent++;
            } else {
                b->st.events_dropped++;
                TPX_LOG(TPX_WARN, "event dropped", TPX_S("pod", e->pod), TPX_S("ns", e->ns),
                        TPX_S("reason", e->reason), TPX_S("err", err.msg));
            }
            b->head = e->next;
            if (!b->head)
                b->tail = NULL;
            b->queued--;
            event_free(e);
            tries = 0;
            pthread_cond_broadcast(&b->cv); /* ext_binder_free() may wait for the queue */
            continue;
        }
        if (atomic_load(&b->stopping))
            break;
        b->st.events_retried++;
        if (tries == 0)
            TPX_LOG(TPX_WARN, "event not delivered, will retry", TPX_S("pod", e->pod),
                    TPX_S("ns", e->ns), TPX_S("err", err.msg));
        wait_ms(b, tpx_backoff_ms(&retry, tries++));
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* A copy that is valid UTF-8 (each bad byte becomes the 3-byte U+FFFD), so jansson never refuses
 * the Event: a message cut inside a character would otherwise be retried until it expires. */
static char *dup_utf8(const char *s)
{
    size_t n = strlen(s ? s : "");
    char *d = n < SIZE_MAX / 3 ? malloc(3 * n + 1) : NULL;

    if (d)
        tpx_utf8_clean(d, 3 * n + 1, s ? s : "");
    return d;
}

/* Queue one event; false when out of memory. */
static bool enqueue(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                    const char *type, const char *reason, const char *message)
{
    struct event *e = calloc(1, sizeof(*e));

    if (!e)
        return false;
    e->ns = dup_or_empty(ns);
    e->pod = dup_or_empty(pod);
    e->uid = uid && *uid ? strdup(uid) : NULL;
    e->type = dup_or_empty(type);
    e->reason = dup_utf8(reason);
    e->message = dup_utf8(message);
    e->name = event_name(b, e->pod ? e->pod : "");
    e->born = time(NULL);
    if (!e->ns || !e->pod || (uid && *uid && !e->uid) || !e->type || !e->reason || !e->message ||
        !e->name) {
        event_free(e);
        return false;
    }
    pthread_mutex_lock(&b->mu);
    if (b->queued >= b->cfg.event_queue && b->head && (b->head != b->sending || b->head->next)) {
        /* Full: the oldest goes, or the one after it when the oldest is being sent. */
        struct event **pp = b->head == b->sending ? &b->head->next : &b->head;
        struct event *old = *pp;

        *pp = old->next;
        if (b->tail == old)
            b->tail = pp == &b->head ? NULL : b->head;
        b->queued--;
        b->st.events_dropped++;
        TPX_LOG(TPX_WARN, "event queue full, oldest event dropped", TPX_S("pod", old->pod),
                TPX_S("ns", old->ns));
        event_free(old);
    }
    if (b->tail)
        b->tail->next = e;
    else
        b->head = e;
    b->tail = e;
    b->queued++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return true;
}

void ext_binder_replica_name(const char *display, char *out, size_t len)
{
    const char *slash = display ? strchr(display, '/') : NULL;
    const char *sep = slash ? strstr(slash, " group ") : NULL;

    if (!len)
        return;
    if (slash && sep && sep > slash + 1 && sep[7]) {
        snprintf(out, len, "%.*s/%s", (int)(sep - slash - 1), slash + 1, sep + 7);
        return;
    }
    snprintf(out, len, "%s", display ? display : "");
}

void ext_binder_placed(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                       const struct ext_state_bind_out *where)
{
    char replica[POL_KEY_MAX];
    char msg[4 * POL_KEY_MAX];

    if (b->cfg.no_events || !where || !where->intent)
        return;
    ext_binder_replica_name(where->display, replica, sizeof(replica));
    snprintf(msg, sizeof(msg), "placed replica %s stage %u in rack %s, domain %s", replica,
             where->stage, where->rack, where->domain);
    if (!enqueue(b, ns, pod, uid, "Normal", "Placed", msg))
        TPX_LOG(TPX_WARN, "event lost: out of memory", TPX_S("pod", pod ? pod : ""));
}

static bool warn_once(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                      const char *group_key, const char *event_reason, const char *reason)
{
    const struct tpx_hash_key *key = tpx_hash_process_key(); /* seeded: pod names are chosen */
    uint64_t h = 0;
    time_t now = time(NULL);
    size_t free_slot = DEDUPE_SLOTS, oldest = 0;
    bool dup = false;

    if (b->cfg.no_events)
        return false;
    if (group_key && *group_key) {
        h = tpx_hash_step(key, h, group_key);
    } else {
        h = tpx_hash_step(key, h, ns);
        h = tpx_hash_step(key, h, pod);
    }
    h = tpx_hash_step(key, h, reason);
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < DEDUPE_SLOTS; i++) {
        struct seen *s = &b->seen[i];

        if (s->hash == h && now - s->at < (time_t)b->cfg.dedupe_s) {
            dup = true;
            break;
        }
        if (s->hash == 0 || now - s->at >= (time_t)b->cfg.dedupe_s) {
            if (free_slot == DEDUPE_SLOTS)
                free_slot = i;
        } else if (s->at < b->seen[oldest].at) {
            oldest = i;
        }
    }
    if (dup) {
        b->st.warnings_deduped++;
    } else {
        size_t slot = free_slot != DEDUPE_SLOTS ? free_slot : oldest;

        b->seen[slot].hash = h;
        b->seen[slot].at = now;
    }
    pthread_mutex_unlock(&b->mu);
    if (dup)
        return false;
    return enqueue(b, ns, pod, uid, "Warning", event_reason, reason);
}

bool ext_binder_rejected(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                         const char *group_key, const char *reason)
{
    return warn_once(b, ns, pod, uid, group_key, "GroupRejected", reason);
}

bool ext_binder_uncertain(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                          const char *group_key, const char *message)
{
    return warn_once(b, ns, pod, uid, group_key, "UncertainLayout", message);
}

bool ext_binder_cross_node(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                           const char *group_key, const char *message)
{
    return warn_once(b, ns, pod, uid, group_key, "CrossNodeParallelism", message);
}

/* ---- binds ------------------------------------------------------------------------------ */

/* Take a free client, creating one if the pool is not full; blocks while all are busy. A client
 * is built under the lock: that is a curl handle and a token file read, and happens at most
 * `clients` times. */
static struct kube_client *acquire(struct ext_binder *b, unsigned *slot, struct tpx_err *err)
{
    struct kube_client *k = NULL;

    pthread_mutex_lock(&b->pool_mu);
    for (;;) {
        for (unsigned i = 0; i < b->nclients; i++) {
            if (!b->busy[i]) {
                b->busy[i] = true;
                *slot = i;
                k = b->clients[i];
                goto out;
            }
        }
        if (b->nclients < b->cfg.clients)
            break;
        pthread_cond_wait(&b->pool_cv, &b->pool_mu);
    }
    k = kube_client_new(&b->kcfg, err);
    if (k) {
        *slot = b->nclients++;
        b->clients[*slot] = k;
        b->busy[*slot] = true;
    }
out:
    pthread_mutex_unlock(&b->pool_mu);
    return k;
}

static void release(struct ext_binder *b, unsigned slot)
{
    pthread_mutex_lock(&b->pool_mu);
    b->busy[slot] = false;
    pthread_cond_signal(&b->pool_cv);
    pthread_mutex_unlock(&b->pool_mu);
}

enum tpx_code ext_binder_bind(struct ext_binder *b, const char *ns, const char *name,
                              const char *uid, const char *node,
                              const struct ext_state_bind_out *where, struct tpx_err *err)
{
    char stage[16];
    struct kube_kv ann[3];
    size_t nann = 0;
    struct kube_client *k;
    unsigned slot = 0;
    enum tpx_code rc;

    if (!ns || !*ns || !name || !*name || !node || !*node)
        return tpx_err_set(err, TPX_EINVAL, "bind: pod namespace, name and node are required");
    if (where && where->intent) {
        snprintf(stage, sizeof(stage), "%u", where->stage);
        ann[nann++] = (struct kube_kv){"topox.io/rack", where->rack};
        ann[nann++] = (struct kube_kv){"topox.io/domain", where->domain};
        ann[nann++] = (struct kube_kv){"topox.io/stage", stage};
    }
    k = acquire(b, &slot, err);
    if (!k) {
        tpx_err_prefix(err, "bind '%s/%s'", ns, name);
        return err->code;
    }
    rc = kube_bind(k, ns, name, uid, node, ann, nann, err);
    release(b, slot);
    pthread_mutex_lock(&b->mu);
    if (rc == TPX_OK)
        b->st.binds++;
    else
        b->st.bind_failures++;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

/* ---- lifecycle -------------------------------------------------------------------------- */

struct ext_binder *ext_binder_new(const struct kube_config *kcfg,
                                  const struct ext_binder_config *cfg, struct tpx_err *err)
{
    struct ext_binder *b = calloc(1, sizeof(*b));
    unsigned slot = 0;
    int rc;

    if (!b) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the binder");
        return NULL;
    }
    if (cfg)
        b->cfg = *cfg;
    if (!b->cfg.clients)
        b->cfg.clients = DEFAULT_CLIENTS;
    if (b->cfg.clients > MAX_CLIENTS)
        b->cfg.clients = MAX_CLIENTS;
    if (!b->cfg.bind_timeout_ms)
        b->cfg.bind_timeout_ms = DEFAULT_BIND_TIMEOUT_MS;
    if (!b->cfg.event_queue)
        b->cfg.event_queue = DEFAULT_EVENT_QUEUE;
    if (!b->cfg.event_max_age_s)
        b->cfg.event_max_age_s = DEFAULT_EVENT_MAX_AGE_S;
    if (!b->cfg.dedupe_s)
        b->cfg.dedupe_s = DEFAULT_DEDUPE_S;
    b->component = strdup(b->cfg.component ? b->cfg.component : "topox");
    b->cfg.component = NULL;
    pthread_mutex_init(&b->pool_mu, NULL);
    pthread_cond_init(&b->pool_cv, NULL);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    atomic_init(&b->stopping, false);
    atomic_init(&b->event_seq, 0);
    if (!b->component) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the binder");
        goto fail;
    }
    if (kube_config_copy(&b->kcfg, kcfg, err) != TPX_OK)
        goto fail;
    b->kcfg.timeout_ms = b->cfg.bind_timeout_ms;
    if (!b->kcfg.connect_timeout_ms || b->kcfg.connect_timeout_ms > b->cfg.bind_timeout_ms)
        b->kcfg.connect_timeout_ms = b->cfg.bind_timeout_ms / 2;
    /* one client now: a bad token file or certificate fails at startup, not at the first bind */
    if (!acquire(b, &slot, err))
        goto fail;
    release(b, slot);
    b->ev_client = kube_client_new(kcfg, err);
    if (!b->ev_client)
        goto fail;
    kube_set_cancel(b->ev_client, is_stopping, b);
    rc = pthread_create(&b->th, NULL, event_loop, b);
    if (rc != 0) {
        tpx_err_errno(err, rc, "cannot start the event thread");
        goto fail;
    }
    b->started = true;
    return b;
fail:
    tpx_err_prefix(err, "API binder");
    ext_binder_free(b);
    return NULL;
}

void ext_binder_free(struct ext_binder *b)
{
    size_t left;

    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    if (b->started && b->queued) {
        /* a short grace period, so events of the last binds are not lost on a clean stop */
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += SHUTDOWN_FLUSH_S;
        while (b->queued && pthread_cond_timedwait(&b->cv, &b->mu, &ts) == 0)
            ;
    }
    atomic_store(&b->stopping, true);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (b->started)
        pthread_join(b->th, NULL);
    left = b->queued;
    while (b->head) {
        struct event *e = b->head;

        b->head = e->next;
        event_free(e);
    }
    if (left)
        TPX_LOG(TPX_WARN, "events not delivered at shutdown", TPX_I("count", left));
    for (unsigned i = 0; i < b->nclients; i++)
        kube_client_free(b->clients[i]);
    kube_client_free(b->ev_client);
    kube_config_release(&b->kcfg);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->pool_cv);
    pthread_mutex_destroy(&b->pool_mu);
    free(b->component);
    free(b);
}

void ext_binder_get_stats(struct ext_binder *b, struct ext_binder_stats *out)
{
    pthread_mutex_lock(&b->mu);
    *out = b->st;
    out->events_queued = b->queued;
    pthread_mutex_unlock(&b->mu);
}
