/* SPDX-License-Identifier: Apache-2.0 */
/* extender/metrics.h - the extender's Prometheus metrics (text format 0.0.4): requests and latency
 * histograms per verb, filter verdicts by reason, and gauges read from the ledger (groups,
 * reservations, free capacity and the largest TP group placeable now, per rack). No HTTP.
 *
 * Threads: ext_metrics_* counters are updated with atomics and a small mutex; safe from any
 * thread. */
#ifndef TPX_EXTENDER_METRICS_H
#define TPX_EXTENDER_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "policy/policy.h"

enum ext_metrics_verb {
    EXT_METRICS_VERB_FILTER = 0,
    EXT_METRICS_VERB_PRIORITIZE,
    EXT_METRICS_VERB_BIND,
    EXT_METRICS_VERB_PREEMPT,
    EXT_METRICS_VERB_OTHER,
    EXT_METRICS_VERB_COUNT
};

/* "filter", "prioritize", "bind", "preempt", "other". */
const char *ext_metrics_verb_name(enum ext_metrics_verb v);

struct ext_metrics;

/* NULL with *err on failure. Free with ext_metrics_free(). */
struct ext_metrics *ext_metrics_new(struct tpx_err *err);
void ext_metrics_free(struct ext_metrics *m); /* accepts NULL */

/* One answered request: its HTTP status and how long it took. */
void ext_metrics_request(struct ext_metrics *m, enum ext_metrics_verb v, unsigned status,
                         double seconds);

/* count nodes got `verdict` ("fit", "fail", "unresolvable", "unknown") with `reason` (NULL for
 * fit). Reasons are kept verbatim up to a bounded number of distinct strings, then "other". */
void ext_metrics_verdict(struct ext_metrics *m, const char *verdict, const char *reason,
                         size_t count);

/* A group's layout was read (the certainty rule, docs/workloads.md): true the first time for
 * group_key (the pod's own key when the group is ""), false after, so the caller logs the layout
 * once per group; an uncertain one (certain false) is counted in
 * topox_uncertain_layouts_total{action} once per group. Remembers a bounded number of recent
 * groups (older ones may be logged and counted again). */
bool ext_metrics_layout_seen(struct ext_metrics *m, const char *group_key, bool certain,
                             const char *action);

/* The watch's DRA view (extender/state_feed.c) was built anew: topox_dra_view_rebuilds_total. */
void ext_metrics_dra_rebuild(struct ext_metrics *m);

/* A /bind answered: bound (the placement recorded, and with --bind-mode=api the Binding
 * created), refused (topox's own check said no: capacity, the group's rack, not for this
 * scheduler...) or failed (the API server said no; the placement was taken back).
 * topox_binds_total{result}. */
enum ext_metrics_bind {
    EXT_METRICS_BIND_BOUND = 0,
    EXT_METRICS_BIND_REFUSED,
    EXT_METRICS_BIND_FAILED
};
void ext_metrics_bind(struct ext_metrics *m, enum ext_metrics_bind result);

/* Append every counter and histogram in the text format. */
enum tpx_code ext_metrics_render(struct ext_metrics *m, struct tpx_buf *out, struct tpx_err *err);

/* Append the gauges that describe the ledger (call under ext_state_read()). */
enum tpx_code ext_metrics_render_ledger(const struct pol_ledger *l, size_t pods_seen,
                                        struct tpx_buf *out, struct tpx_err *err);

#endif
