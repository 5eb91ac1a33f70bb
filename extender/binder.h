/* SPDX-License-Identifier: Apache-2.0 */
/* extender/binder.h - `topox serve --bind-mode=api`: creating the Binding through the API server
 * from the MHD worker threads (a small pool of kube_client clients, one per bind in flight), and
 * sending Events off the request path (a bounded queue drained by one thread with its own client,
 * retried with backoff while the API server is away). Warnings about rejected groups are
 * deduplicated per group and reason. No HTTP server, no JSON here: kube.c speaks to the API.
 *
 * Threads: every function is thread-safe. */
#ifndef TPX_EXTENDER_BINDER_H
#define TPX_EXTENDER_BINDER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "kube/bodies.h"
#include "extender/state.h"

/* Zero fields take the defaults. */
struct ext_binder_config {
    unsigned clients;         /* binds in flight at once (one API client each); default 4 */
    long bind_timeout_ms;     /* whole Binding POST; default 4 000 (the scheduler waits 5 s) */
    bool no_events;           /* send no Events at all */
    size_t event_queue;       /* events waiting at most; default 1 024 (the oldest is dropped) */
    unsigned event_max_age_s; /* an event not delivered after this is dropped; default 600 */
    unsigned dedupe_s;        /* one Warning per group and reason per this; default 3 600 */
    const char *component;    /* Event source; NULL: "topox" (copied) */
};

struct ext_binder; /* opaque */

/* A binder talking to the API server of kcfg (copied; the caller keeps kcfg and cfg; cfg may be
 * NULL). Creates one client at once, so a bad token or TLS setup fails here, and starts the
 * event thread. NULL with *err set. Free with ext_binder_free(). */
struct ext_binder *ext_binder_new(const struct kube_config *kcfg,
                                  const struct ext_binder_config *cfg, struct tpx_err *err);

/* Stop the event thread, after giving queued events up to 2 s to go out (then an event in
 * flight is cancelled within about a second; events still queued are dropped and counted in the
 * log), free the clients. Accepts NULL. No bind may be in
 * flight (stop the HTTP server first). */
void ext_binder_free(struct ext_binder *b);

/* POST the Binding of pod ns/name (uid as precondition) to node, with the annotations
 * topox.io/rack, topox.io/domain and topox.io/stage when where->intent (where may be NULL).
 * Blocks while every client is busy. TPX_EAPI with kube.c's clear texts for 409, 404 and 403
 * (err->http_status set), TPX_EIO / TPX_ETIMEOUT when the API server cannot be reached. */
enum tpx_code ext_binder_bind(struct ext_binder *b, const char *ns, const char *name,
                              const char *uid, const char *node,
                              const struct ext_state_bind_out *where, struct tpx_err *err);

/* Queue a Normal "Placed" event on the pod: "placed replica vllm/0 stage 1 in rack r3, domain
 * n12" (the replica is read from where->display, see ext_binder_replica_name()). Nothing for a
 * pod without intent. Never blocks on the API server; a full queue drops its oldest event. */
void ext_binder_placed(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                       const struct ext_state_bind_out *where);

/* Queue a Warning "GroupRejected" event on the pod with reason as its message, unless the same
 * group (group_key, or the pod's ns/name when empty) got the same reason within dedupe_s.
 * Returns true when an event was queued. */
bool ext_binder_rejected(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                         const char *group_key, const char *reason);

/* The same, as a Warning "UncertainLayout": the group's layout could not be read for certain and
 * is placed as the `uncertain` setting says; message says what was read and why. */
bool ext_binder_uncertain(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                          const char *group_key, const char *message);

/* The same, as a Warning "CrossNodeParallelism": the group's TP or EP group spans nodes because
 * its traffic allows it (EP, DP-attention) or its owner does (topox.io/cross-node-tp: allow),
 * and is placed in the tightest scope (docs/workloads.md). */
bool ext_binder_cross_node(struct ext_binder *b, const char *ns, const char *pod, const char *uid,
                           const char *group_key, const char *message);

/* "llm/vllm group 0" -> "vllm/0"; any other text is copied as it is. Cannot fail; truncates to
 * len - 1 bytes. Public for tests. */
void ext_binder_replica_name(const char *display, char *out, size_t len);

/* Counters for /metrics and tests. */
struct ext_binder_stats {
    unsigned long binds;          /* Binding POSTs that succeeded */
    unsigned long bind_failures;  /* ... and that failed */
    unsigned long events_sent;    /* Events the API server accepted */
    unsigned long events_retried; /* failed tries that were retried */
    unsigned long events_dropped; /* given up (too old, queue full, shutdown) */
    unsigned long warnings_deduped;
    size_t events_queued; /* waiting now */
};
void ext_binder_get_stats(struct ext_binder *b, struct ext_binder_stats *out);

#endif
