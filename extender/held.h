/* SPDX-License-Identifier: Apache-2.0 */
/* extender/held.h - a held member's filter answer is its one held node (issue 20, item 2).
 *
 * Where topox holds room for a group (after its first bind, or a PodGroup gang's at a member's
 * filter), a later member's filter passes the held rack, and kube-scheduler then scores every
 * node of it, in-tree plugins and topox's prioritize, to pick the node topox already holds for
 * it. With one feasible node kube-scheduler skips scoring and the extenders' prioritize
 * altogether (schedulePod: "When only one node after predicate, just use it",
 * k8s.io/kubernetes v1.37.2, pkg/scheduler/schedule_one.go). Profiles with an extender get no
 * opportunistic batching (computeBatchablePlugins, framework/runtime/framework.go), so this is
 * the extender's own way to the same saving.
 *
 * So a member's answer keeps one node: the node of its own slot (a member with a pod index), or,
 * for one without, the last held slot among the candidates that pass (kube-scheduler's own
 * filters have already taken out the nodes its mates were assumed on in this cycle, and the
 * nominator gives the first slots to members that are not in a cycle). The other passing nodes
 * are left out of the answer, as --lean-filter leaves out unresolvable ones.
 *
 * Never twice for one pod: a pod given one node that is filtered again more than RETRY_S later
 * is in a new cycle (its last one failed: a Reserve or Permit plugin, a bind) and gets the whole
 * held rack, so a node that keeps failing for it cannot hold it back. Thread-safe. */
#ifndef TPX_EXTENDER_HELD_H
#define TPX_EXTENDER_HELD_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "extender/state.h"

struct ext_held; /* opaque: the pods given one node, and when */

struct ext_held *ext_held_new(struct tpx_err *err); /* NULL with *err when out of memory */
void ext_held_free(struct ext_held *h);             /* accepts NULL */

/* Narrow a filter's verdicts (v: names[0..n), as ext_state_filter_res gave them) for the pod
 * uid with workload wl: where wl is a member of a group st holds room for, more than one
 * candidate passes and one of them is held for it, every other passing candidate becomes
 * EXT_VERDICT_OMIT and v->nfit 1. now: tpx_mono_s(). Returns whether it narrowed. A NULL h
 * narrows nothing. */
bool ext_held_narrow(struct ext_held *h, struct ext_state *st, const char *uid,
                     const struct pol_workload *wl, const char *const *names, size_t n,
                     struct ext_state_verdicts *v, double now);

#endif
