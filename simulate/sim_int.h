/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/sim_int.h - the state of one replay, shared by sim.c (placing and releasing groups,
 * counting, sampling) and queue.c (the queue of waiting groups and its metrics). Private to
 * simulate/. */
#ifndef TPX_SIMULATE_SIM_INT_H
#define TPX_SIMULATE_SIM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/map.h"
#include "policy/policy.h"
#include "simulate/sim.h"

#define SIM_TTL_S 600

/* A group of the replay. */
struct sim_group {
    const struct sim_event *ev; /* its arrival (borrowed from the trace) */
    size_t *nodes;              /* placed pods' nodes, ev->pods entries */
    unsigned placed;
    bool half;
    size_t rack; /* the fluid references: the rack it was counted in (TOPO_NONE: the cluster) */
};

struct sim_queue; /* queue.c */

/* The state of one replay. */
struct sim {
    const struct topo_cluster *c;
    struct pol_ledger *l;
    struct pol_scope_memo *memo;
    enum sim_policy policy;
    const struct sim_opts *o;
    size_t nn;
    size_t *cand;
    int *scores;
    struct pol_rack_summary *racks;
    struct sim_group *groups;
    size_t ngroups, groups_cap;
    size_t *free_groups;
    size_t nfree;
    struct tpx_map live; /* group name -> index in groups[] */
    unsigned half_held;  /* accelerators held by half-placed groups */
    size_t nracks;
    unsigned long *rack_free; /* per rack: free accelerators (scratch, or the fluid's counts) */
    unsigned long fluid_free; /* the fluid references: free accelerators of the cluster */
    struct sim_result *out;
    size_t samples_cap, shapes_cap;
    struct sim_queue *q; /* with o->queue */
};

/* The fluid references (no placement: counts of free accelerators). */
bool sim_fluid(const struct sim *s);
/* Free accelerators now, of the cluster and per rack (into s->rack_free unless fluid). */
unsigned long sim_free_counts(struct sim *s);
/* Place the pods of g from g->placed on, leader first, at now, until one finds no node. */
enum tpx_code sim_place_group(struct sim *s, struct sim_group *g, time_t now, struct tpx_err *err);
/* Release every placed pod of g (a leave, or an attempt of the queue that placed only some). */
void sim_release_group(struct sim *s, struct sim_group *g);
/* Count g once its arrival is done (placed, half-placed or rejected). */
enum tpx_code sim_classify(struct sim *s, struct sim_group *g, struct tpx_err *err);
/* The breakdown entry of e's shape, made on its first arrival; NULL when out of memory. */
struct sim_shape *sim_shape_of(struct sim *s, const struct sim_event *e);
void sim_shape_name(const struct sim_event *e, char *buf, size_t len);
/* A sample of the cluster after the events at t. */
enum tpx_code sim_push_sample(struct sim *s, double t, struct tpx_err *err);

/* anchors.c: the node for a group's first member under best-fit and the anchors' policies, among
 * those res passed; (size_t)-1 when none. sim_picks_first: the policies it answers. */
size_t sim_pick_first(struct sim *s, const struct sim_event *e,
                      const struct pol_filter_result *res);
static inline bool sim_picks_first(enum sim_policy p)
{
    return p == SIM_BEST_FIT || p == SIM_KUEUE_BEST_FIT || p == SIM_KUEUE_LEAST_FREE ||
           p == SIM_VOLCANO_BINPACK || p == SIM_SLURM_BLOCK;
}

/* queue.c: replay ev[0, n) with the queue of s->o; free what it holds (NULL-safe). */
enum tpx_code sim_queue_run(struct sim *s, const struct sim_event *ev, size_t n,
                            struct tpx_err *err);
void sim_queue_release(struct sim *s);

#endif
