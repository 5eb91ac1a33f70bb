/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state_feed.h - the watch's sink that feeds extender/state: Node objects become
 * ext_state_upsert_nodes()/ext_state_remove_node(), bound Pods (not Succeeded/Failed) become
 * ext_state_upsert_pod()/ext_state_remove_pod(), ResourceSlices, ResourceClaims, DeviceClasses
 * and ComputeDomains change nodes' capacity and pods' demand (objects/dra.c: the view is built
 * anew after each list and each burst of watch events, not per event), and the state turns
 * ready once every watched kind has been listed in full. A relist replaces what the state knew:
 * objects missing from the new list are removed. */
#ifndef TPX_EXTENDER_STATE_FEED_H
#define TPX_EXTENDER_STATE_FEED_H

#include <stddef.h>

#include "common/err.h"
#include "extender/metrics.h"
#include "extender/nominate.h"
#include "extender/state.h"
#include "kube/watch.h"
#include "topology/labels.h"

struct ext_cpu_members;
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

/* Watch the DRA kinds too (kube_watch_config.dra): call before the watch starts. A node's
 * capacity is then the GPUs of its ResourceSlices when it has any (docs/dra.md); the devices
 * allocated claims hold are booked on their node, except those of the claims a bound pod counts
 * (its claims' requests, or the claim behind its extended resource); and readiness waits for the
 * DRA kinds' first lists as well. */
void ext_state_feed_watch_dra(struct ext_state_feed *f, bool on);

/* PodGroups are watched (kube_watch_config.podgroups): readiness waits for their first
 * list too (a server without scheduling.k8s.io/v1beta1 answers 404, an empty list). Whether
 * watched or not, the PodGroups the feed got give the pods that name one their gang's minCount and
 * topology level (ext_state_feed_pod_facts; docs/serve.md, PodGroups). Call before the watch
 * starts. */
void ext_state_feed_watch_podgroups(struct ext_state_feed *f, bool on);

/* Pending pods that are members of a group (as /filter reads them) go to n
 * (ext_nominator_pending; borrowed, it must outlive the feed; NULL: none), and are forgotten
 * there when bound, deleted or missing from a relist. Call before the watch starts. */
void ext_state_feed_set_nominator(struct ext_state_feed *f, struct ext_nominator *n);

/* Bound members of groups that ask for no accelerator (an LWS leader on CPU) go to c
 * (ext_cpu_members_note; borrowed, it must outlive the feed; NULL: none). Call before the watch
 * starts. */
void ext_state_feed_set_cpu_members(struct ext_state_feed *f, struct ext_cpu_members *c);

/* Count each rebuild of the DRA view in m (topox_dra_view_rebuilds_total; borrowed, it must
 * outlive the feed; NULL: none). Call before the watch starts. */
void ext_state_feed_set_metrics(struct ext_state_feed *f, struct ext_metrics *m);

/* The ext_codec_opts.pod_facts hook (ctx: the feed): the minCount and topology level of the
 * PodGroup the pod names (unknown while the PodGroup is not seen: no gang), and a pod's claim
 * demand, from the claims and DeviceClasses watched, added to its facts as `plan` adds it
 * (obj_dra_facts_demand()). A claim not seen yet counts nothing. Thread-safe against the
 * watch. */
void ext_state_feed_pod_facts(void *ctx, const void *pod, struct pol_pod_facts *facts, char *res,
                              size_t res_len);

/* The ext_codec_opts.pod_workload hook (ctx: the feed): a pod that claims a ComputeDomain's
 * channel template becomes a member of the domain's group, which must share one multi-node
 * NVLink domain (clique): placed whole, the rest reserved as for LWS, rejected with the shortfall
 * when no clique has room (obj_dra_domain_member(), as plan does). The group has the domain's
 * numNodes pods, or the pod's own group size; with neither it is left alone. Thread-safe. */
void ext_state_feed_pod_workload(void *ctx, const void *pod, struct pol_workload *wl);

/* Counters for tests and /debug/state. Not thread-safe against a running watch. */
struct ext_state_feed_stats {
    size_t nodes;           /* nodes the state got from the feed */
    size_t pods;            /* bound pods the state got from the feed */
    size_t pending;         /* bound pods waiting for their node to appear */
    unsigned long refused;  /* objects that could not be read (logged) */
    unsigned long pruned;   /* bound pods a relist lacked that only our binds had booked */
    size_t dra_objects;     /* ResourceSlices, ResourceClaims, DeviceClasses, ComputeDomains kept */
    size_t dra_devices;     /* devices of the slices */
    size_t dra_pods;        /* bound pods with claims */
    unsigned long dra_held; /* devices that allocated claims hold and no bound pod counts */
    unsigned long dra_refreshes;
};
void ext_state_feed_stats(const struct ext_state_feed *f, struct ext_state_feed_stats *out);

void ext_state_feed_free(struct ext_state_feed *f); /* accepts NULL */

#endif
