/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state_feed.h - the watch's sink that feeds extender/state: Node objects become
 * ext_state_upsert_nodes()/ext_state_remove_node(), bound Pods (not Succeeded/Failed) become
 * ext_state_upsert_pod()/ext_state_remove_pod(), and the state turns ready once nodes and pods
 * have both been listed in full. A relist replaces what the state knew: objects missing from the
 * new list are removed. */
#ifndef TPX_EXTENDER_STATE_FEED_H
#define TPX_EXTENDER_STATE_FEED_H

#include <stddef.h>

#include "common/err.h"
#include "extender/state.h"
#include "kube/watch.h"
#include "topology/labels.h"

struct ext_state_feed; /* opaque */

/* A feed into st (borrowed: it must outlive the feed) reading labels with cfg (borrowed; NULL:
 * the defaults). Calls ext_state_require_sync(st), so /readyz waits for the first full sync.
 * NULL with *err set when out of memory. Free with ext_state_feed_free() after kube_watch_stop().
 */
struct ext_state_feed *ext_state_feed_new(struct ext_state *st, const struct topo_label_config *cfg,
                                          struct tpx_err *err);

/* The sink to hand to kube_watch_start(); its ctx is f. The watch serialises the calls, so the
 * feed has no lock of its own. */
void ext_state_feed_sink(struct ext_state_feed *f, struct kube_watch_sink *out);

/* Counters for tests and /debug/state. Not thread-safe against a running watch. */
struct ext_state_feed_stats {
    size_t nodes;          /* nodes the state got from the feed */
    size_t pods;           /* bound pods the state got from the feed */
    size_t pending;        /* bound pods waiting for their node to appear */
    unsigned long refused; /* objects that could not be read (logged) */
    unsigned long pruned;  /* bound pods a relist lacked that only our binds had booked */
};
void ext_state_feed_stats(const struct ext_state_feed *f, struct ext_state_feed_stats *out);

void ext_state_feed_free(struct ext_state_feed *f); /* accepts NULL */

#endif
