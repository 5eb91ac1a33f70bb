/* SPDX-License-Identifier: Apache-2.0 */
/* policy/pack.h - private to policy/ (score.c): the fragmentation-aware order of the scopes a
 * group's first member may open (docs/simulate.md, "The scoring terms"). */
#ifndef TPX_POLICY_PACK_H
#define TPX_POLICY_PACK_H

#include "policy/ledger_int.h"

/* Per scope of x's kind: where it ranks for x's group. Caller-allocated; led_pack_release(). */
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

/* The first member's score on node n from its scope's rank and the node term fit (0..3), or -1
 * when the scope is not ranked. */
int led_pack_score(const struct led_pack *p, const struct ctx *x, size_t n, int fit);

#endif
