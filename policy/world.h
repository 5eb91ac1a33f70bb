/* SPDX-License-Identifier: Apache-2.0 */
/* policy/world.h - one communication world, one group: the part of pol_workload_infer() that
 * reads which pods talk in one collective world (policy/world.c), and other schedulers' topology
 * intent. Private to policy/. */
#ifndef TPX_POLICY_WORLD_H
#define TPX_POLICY_WORLD_H

#include <stdbool.h>

#include "policy/policy.h"

/* The pod's group from its topox.io/group annotation, its PodGroup or its controller's labels
 * (LeaderWorkerSet, JobSet, RoleBasedGroup v1alpha2): wl->group, wl->display and wl->gang, with
 * *grouped false when none names one and *by_rbg when an RBG instance did. */
void pol_world_group(const struct pol_pod_facts *f, struct pol_workload *wl, bool *grouped,
                     bool *by_rbg);

/* A world no group label names, from what the controller and the engine wrote: a StatefulSet of
 * --nnodes (nnodes, 0 when the engine says none) pods, a Kubeflow training job's WORLD_SIZE and
 * RANK. Sets wl->group and wl->display, *size and *index; false when nothing says one. */
bool pol_world_signals(const struct pol_pod_facts *f, unsigned nnodes, struct pol_workload *wl,
                       unsigned *size, int *index);

/* Another scheduler's topology annotations (Kueue, KAI): wl->sched_scoped and sched_scope, and
 * *prefer with the annotation that said it in *what when the group must only be preferred. */
void pol_world_schedulers(const struct pol_pod_facts *f, struct pol_workload *wl, bool *prefer,
                          const char **what);

/* The last literal value of env var name in f's env, as a count; false when absent or not one. */
bool pol_world_env_count(const struct pol_pod_facts *f, const char *name, unsigned *out);

#endif
