/* SPDX-License-Identifier: Apache-2.0 */
/* policy/pack.h - private to policy/ (score.c): the fragmentation-aware order of the scopes a
 * group's first member may open (docs/simulate.md, "The scoring terms"). */
#ifndef TPX_POLICY_PACK_H
#define TPX_POLICY_PACK_H

#include "policy/ledger_int.h"

/* Per scope of x's kind: where it ranks for x's group (the rank, LED_PACK_RANK), or its absolute
 * score (the term, LED_PACK_TERM). Caller-allocated; led_pack_release(). */
struct led_pack {
    size_t ns;
    int *base; /* per scope: the score its nodes start from; -1: not ranked (the old score) */
    int *cap;  /* per scope: the most the node term may add */
};

/* Rank the scopes for the first member of x's group (x->e.group is TOPO_NONE; the scopes are
 * computed). A scope is ranked when the whole group fits there now; the ranks follow, in order:
 * fewest whole free interconnect domains the group has to open, not shrinking the largest group
 * the cluster can still place, holding a group of the same shape, fewest free accelerators left
 * (best fit). Nothing is ranked (p->base NULL) for a preferred or EP-spanning workload, or when
 * out of memory: the caller keeps the plain best-fit score. */
void led_pack_init(struct led_pack *p, const struct ctx *x);
void led_pack_release(struct led_pack *p);

/* The term (LED_PACK_TERM), for the first member of x's group: for each rack that can hold the
 * whole group now, base = 7 - round(7 x (left + loss) / the largest rack's capacity), at least 0,
 * where left is the rack's free accelerators after the group and loss what placing it costs the
 * live shapes there: the sum over the set of shapes of the live rack-scoped groups (each shape
 * once, whatever its count) and x's own, of pods x accelerators x (whole groups of that shape the
 * rack takes before - after; for x's shape, less the one it places). It reads only the rack's own
 * state, the set of live shapes and x's shape, so with a memo each rack's loss is kept in the
 * memo (led_memo_pack_cache) until the rack's change count (scope_gen) or the set of shapes
 * changes: a score costs O(live groups) for the set, the racks that changed and the candidates.
 * Nothing is scored (p->base NULL) in the cases led_pack_init leaves out. */
void led_pack_term_init(struct led_pack *p, const struct ctx *x);

/* The first member's score on node n from its scope's rank and the node term fit (0..3), or -1
 * when the scope is not ranked. */
int led_pack_score(const struct led_pack *p, const struct ctx *x, size_t n, int fit);

#endif
