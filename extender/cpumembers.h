/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cpumembers.h - the members of groups that ask for no accelerator (an LWS leader on
 * CPU, an MPI launcher, a Ray head), as serve sees them: each is a member of its group for the
 * gang, but takes no accelerator slot and no rank (DESIGN.md, the certainty rule). A worker's
 * filter sees only itself, so what its group's CPU members are is remembered from their own
 * filters and from the watch, and applied to the group's accelerator members
 * (pol_workload_skip_members). Thread-safe: one mutex. */
#ifndef TPX_EXTENDER_CPUMEMBERS_H
#define TPX_EXTENDER_CPUMEMBERS_H

#include <stdbool.h>

#include "policy/policy.h"

struct ext_cpu_members;

/* NULL when out of memory. Free with ext_cpu_members_free() (NULL is fine). A member only filters
 * have seen (no watch: --nodes, --cluster) is forgotten ttl_s after its last filter. */
struct ext_cpu_members *ext_cpu_members_new(double ttl_s);
void ext_cpu_members_free(struct ext_cpu_members *c);

/* wl, pod uid, was seen at now (monotonic seconds, tpx_mono_s()), by the watch (watched) or by a
 * filter: when it asks for no accelerator and belongs to a group whose size was written
 * (wl->size_explicit), it is remembered under that group, each uid once, at most
 * EXT_CPU_MEMBERS_MAX a group and EXT_CPU_GROUPS_MAX groups (past them it is not: its group's
 * members then count it, as before). Anything else is ignored. One the watch has seen goes only
 * when the watch drops it (ext_cpu_members_forget). */
#define EXT_CPU_MEMBERS_MAX POL_CPU_MEMBERS_MAX
#define EXT_CPU_GROUPS_MAX 65536
void ext_cpu_members_note(struct ext_cpu_members *c, const struct pol_workload *wl, const char *uid,
                          double now, bool watched);

/* wl, an accelerator member with an intent, with the remembered CPU members of its group taken
 * out of its size and index (pol_workload_skip_members), at now: a member only filters have seen,
 * and not for ttl_s, is forgotten first. */
void ext_cpu_members_skip(struct ext_cpu_members *c, struct pol_workload *wl, double now);

/* The pod uid is gone (deleted, finished): forgotten, if it was remembered. */
void ext_cpu_members_forget(struct ext_cpu_members *c, const char *uid);

#endif
