/* SPDX-License-Identifier: Apache-2.0 */
/* kube/watch.h - list+watch of nodes and pods on background threads, delivered to a consumer
 * (the state module) through callbacks: LIST with paging, WATCH from the list's resourceVersion
 * with bookmarks, events reassembled across chunk boundaries in a capped buffer, resume from the
 * last resourceVersion, 410 (status or ERROR event) -> relist, backoff with jitter, clean stop. */
#ifndef TPX_KUBE_WATCH_H
#define TPX_KUBE_WATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "kube/client.h"

/* What is watched. PodGroups (scheduling.k8s.io v1beta1, Kubernetes 1.37) only when
 * kube_watch_config.podgroups is set; the DRA kinds (resource.k8s.io, docs/dra.md) and NVIDIA's
 * ComputeDomains only when kube_watch_config.dra is set. The DRA kinds come last. */
enum kube_kind {
    KUBE_KIND_NODE = 0,
    KUBE_KIND_POD = 1,
    KUBE_KIND_PODGROUP = 2, /* podgroups.scheduling.k8s.io */
    KUBE_KIND_SLICE = 3,    /* resourceslices */
    KUBE_KIND_CLAIM = 4,    /* resourceclaims */
    KUBE_KIND_CLASS = 5,    /* deviceclasses */
    KUBE_KIND_DOMAIN = 6,   /* computedomains.resource.nvidia.com */
    KUBE_KIND_COUNT = 7
};

/* "node", "pod", "podgroup", "resourceslice", "resourceclaim", "deviceclass" or "computedomain". */
const char *kube_kind_name(enum kube_kind kind);

/* The collection's path: "/api/v1/nodes", "/apis/resource.k8s.io/v1/resourceslices", ... */
const char *kube_kind_path(enum kube_kind kind);

/*
 * What the watch tells its consumer. Every callback is optional (NULL: ignored). The json_t is
 * borrowed for the call only (json_incref it to keep it; do not modify it). Calls are serialised
 * by the watch (one at a time across both kinds, under one mutex), so a consumer needs no lock of
 * its own against the watch; it still needs one against its other readers.
 *
 * A (re)list is delivered as reset(kind), then upsert(kind, item) for every listed object as each
 * page is parsed (the page is freed before the next is fetched: a list never sits in memory
 * whole), then synced(kind) once the last page came back. A list that fails half way ends without
 * synced; the retry starts with reset again. So the consumer applies items as they come, remembers
 * what it saw since reset, and at synced removes what the list lacked. Watch events then arrive as
 * upsert (ADDED, MODIFIED) and remove (DELETED), and after the events of one read from the
 * stream have all been delivered, drained(kind) once: what the server sent together (a burst)
 * ends with one drained, so a consumer can do per burst what it need not do per event.
 * Bookmarks are not delivered. A PodGroup or DRA kind whose
 * LIST answers 404 (a server without scheduling.k8s.io/v1beta1 or resource.k8s.io/v1, or no
 * ComputeDomain CRD) is
 * delivered as an empty list (reset, synced) and listed again after backoff_max_ms. After each
 * completed list the watch calls malloc_trim(0) (glibc) to return the freed page memory to the OS.
 */
struct kube_watch_sink {
    void *ctx;
    void (*reset)(void *ctx, enum kube_kind kind);
    void (*upsert)(void *ctx, enum kube_kind kind, json_t *obj);
    void (*remove)(void *ctx, enum kube_kind kind, json_t *obj);
    void (*synced)(void *ctx, enum kube_kind kind);
    void (*drained)(void *ctx, enum kube_kind kind);
};

/* What to watch and how. Zero fields take the defaults. */
struct kube_watch_config {
    bool no_nodes;           /* skip nodes */
    bool no_pods;            /* skip pods */
    bool podgroups;          /* also PodGroups (scheduling.k8s.io v1beta1) */
    bool dra;                /* also resourceslices, resourceclaims, deviceclasses (resource.k8s.io
                              * v1) and computedomains (resource.nvidia.com v1beta1) */
    unsigned page_limit;     /* LIST page size, default KUBE_LIST_LIMIT (100) */
    unsigned timeout_s;      /* WATCH timeoutSeconds, default 300 (the client allows 60 more) */
    size_t max_event;        /* cap on one watch event line, default 64 MiB */
    unsigned backoff_min_ms; /* first delay after a failure, default 500 */
    unsigned backoff_max_ms; /* cap, default 30 000 */
    const char *pod_field_selector; /* default "status.phase!=Succeeded,status.phase!=Failed";
                                     * copied */
};

/* Counters per kind, for tests, /metrics and /debug/state. */
struct kube_watch_stats {
    unsigned long lists;   /* completed LISTs (all pages) */
    unsigned long watches; /* WATCH requests started */
    unsigned long events;  /* ADDED/MODIFIED/DELETED delivered */
    unsigned long bookmarks;
    unsigned long expired;  /* 410s, as status or ERROR event */
    unsigned long failures; /* other failed calls (each followed by a backoff) */
    bool synced;            /* a full list has been delivered at least once */
    bool absent;            /* the last LIST answered 404: the server does not serve the kind */
    char rv[128];           /* last resourceVersion seen ("" before the first list) */
    char last_error[256];   /* the latest failure's message, "" if none */
};

struct kube_watch; /* opaque */

/* Start one thread per watched kind, each with its own kube_client built from a copy of kcfg (the
 * caller keeps kcfg and wcfg). sink is copied; sink->ctx must outlive kube_watch_stop(). NULL with
 * *err set when a client or a thread cannot be created. */
struct kube_watch *kube_watch_start(const struct kube_config *kcfg,
                                    const struct kube_watch_config *wcfg,
                                    const struct kube_watch_sink *sink, struct tpx_err *err);

/* True once every watched kind has delivered its first full list (for /readyz). Thread-safe. */
bool kube_watch_is_synced(struct kube_watch *w);

/* Copy the counters of one kind. Thread-safe. */
void kube_watch_get_stats(struct kube_watch *w, enum kube_kind kind, struct kube_watch_stats *out);

/* Block until pred(ctx, w) is true or timeout_ms passes (tests; pred is checked after every
 * delivered callback and counter change, under the watch's mutex). Returns the last pred value. */
bool kube_watch_wait(struct kube_watch *w, bool (*pred)(void *ctx, struct kube_watch *w), void *ctx,
                     long timeout_ms);

/* Stop: cancel any call in flight (libcurl polls the cancel hook about once a second), join the
 * threads, free everything. No callback runs after it returns. Accepts NULL. */
void kube_watch_stop(struct kube_watch *w);

/* Split helper, public for tests: feed bytes of a watch stream; each complete line is handed to
 * on_line (without its '\n'; empty lines skipped). A line longer than cap fails with TPX_ETOOBIG.
 * Caller-allocated; release with kube_watch_lines_release(). */
struct kube_watch_lines {
    struct tpx_buf part; /* the start of a line whose end has not come yet */
};
void kube_watch_lines_init(struct kube_watch_lines *l, size_t cap);
enum tpx_code kube_watch_lines_feed(struct kube_watch_lines *l, const char *p, size_t n,
                                    bool (*on_line)(void *ctx, const char *line, size_t len),
                                    void *ctx, struct tpx_err *err);
void kube_watch_lines_release(struct kube_watch_lines *l);

#endif
