/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/queue.c - `topox simulate --queue`: a group that cannot be placed waits, as a Pending
 * group does, instead of being counted rejected. It is retried when capacity is freed (a group
 * left), in arrival order, after a backoff that doubles per failed attempt (kube-scheduler's
 * scheduling queue: podInitialBackoffSeconds 1, podMaxBackoffSeconds 10); without --backfill the
 * first waiting group blocks the later ones (Kueue's StrictFIFO), with it a later group that fits
 * goes first (BestEffortFIFO, and what kube-scheduler's own queue does). A group is placed whole
 * through the same pol_filter, pol_score and pol_commit as without the queue, or not at all, and
 * lives as long as the trace says from the moment it was placed. The metrics of issue 22: waits
 * per shape, GPU-hours delivered up to the horizon, FGD's allocation rate at saturation, the share
 * of time each shape could be placed, the groups that gave up (docs/simulate.md "The queue"). */
#include "simulate/sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

/* One arrival of the trace under the queue. */
struct qgroup {
    struct sim_group g;
    double arrive_t;
    double life_s;  /* from placement to leave; < 0: it never leaves */
    double ready_t; /* its backoff ends */
    double wait_s;  /* set once placed, given up or left waiting at the end */
    unsigned attempts;
    bool moved;   /* capacity was freed since its last attempt (or it just arrived) */
    size_t shape; /* index in out->shapes */
};

struct leave {
    double t;
    size_t qi;
};

struct sim_queue {
    struct qgroup *g; /* every arrival, in trace order */
    size_t ng;
    size_t *wait; /* the waiting ones (indices into g), in arrival order */
    size_t nwait;
    struct leave *heap; /* the placed ones, by the time they leave */
    size_t nheap;
    double horizon;
    double *share;   /* per shape: time it was placeable, up to the horizon */
    bool *placeable; /* per shape, now */
    unsigned long *per_dom, *per_scope;
    size_t nscopes;
};

static bool leave_before(const struct leave *a, const struct leave *b)
{
    return a->t < b->t || (a->t == b->t && a->qi < b->qi);
}

static void heap_push(struct sim_queue *q, double t, size_t qi)
{
    size_t i = q->nheap++;

    q->heap[i] = (struct leave){t, qi};
    while (i > 0 && leave_before(&q->heap[i], &q->heap[(i - 1) / 2])) {
        struct leave tmp = q->heap[i];
        q->heap[i] = q->heap[(i - 1) / 2];
        q->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static struct leave heap_pop(struct sim_queue *q)
{
    struct leave top = q->heap[0];
    size_t i = 0;

    q->heap[0] = q->heap[--q->nheap];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->nheap && leave_before(&q->heap[l], &q->heap[m]))
            m = l;
        if (r < q->nheap && leave_before(&q->heap[r], &q->heap[m]))
            m = r;
        if (m == i)
            break;
        struct leave tmp = q->heap[i];
        q->heap[i] = q->heap[m];
        q->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* kube-scheduler's backoff after `attempts` failed attempts: initial x 2^(attempts-1), capped. */
static double backoff(const struct sim_opts *o, unsigned attempts)
{
    double d = o->backoff_initial_s;

    for (unsigned i = 1; i < attempts && d < o->backoff_max_s; i++)
        d *= 2;
    return d < o->backoff_max_s ? d : o->backoff_max_s;
}

/* The scope (rack or block) index of node i for a shape. */
static size_t scope_of(const struct sim *s, size_t i, bool block)
{
    size_t b;

    if (!block)
        return topo_cluster_node_rack(s->c, i);
    b = topo_cluster_node_block(s->c, i);
    return b == TOPO_NONE ? 0 : b;
}

/* Could a group of shape sh be placed now? Free accelerators per node give the pods of the shape
 * each node takes; a TP unit spanning pods needs them in one interconnect domain; the group needs
 * its units in one rack (or block). Blind needs the pods anywhere; the fluid references count
 * free accelerators only. */
static bool placeable_now(struct sim *s, const struct sim_shape *sh)
{
    struct sim_queue *q = s->q;
    unsigned long need = (unsigned long)sh->pods * sh->gpus;
    unsigned ppu = sh->tp > sh->gpus && sh->tp % sh->gpus == 0 ? sh->tp / sh->gpus : 1;
    unsigned long units = ppu > 1 && sh->pods % ppu == 0 ? sh->pods / ppu : sh->pods;
    size_t nd = topo_cluster_domain_count(s->c);

    if (ppu > 1 && sh->pods % ppu != 0)
        ppu = 1;
    if (s->policy == SIM_FLUID || (s->policy == SIM_FLUID_RACK && sh->block))
        return s->fluid_free >= need;
    if (s->policy == SIM_FLUID_RACK) {
        for (size_t r = 0; r < s->nracks; r++) {
            if (s->rack_free[r] >= need)
                return true;
        }
        return false;
    }
    memset(q->per_dom, 0, (nd + 1) * sizeof(*q->per_dom));
    memset(q->per_scope, 0, (q->nscopes + 1) * sizeof(*q->per_scope));
    for (size_t i = 0; i < s->nn; i++) {
        unsigned pods = pol_ledger_node_free(s->l, i) / sh->gpus;
        if (s->policy == SIM_BLIND)
            q->per_scope[0] += pods;
        else if (ppu == 1)
            q->per_scope[scope_of(s, i, sh->block)] += pods;
        else
            q->per_dom[topo_cluster_node_domain(s->c, i)] += pods;
    }
    if (s->policy == SIM_BLIND)
        return q->per_scope[0] >= sh->pods;
    if (ppu > 1) {
        for (size_t d = 0; d < nd; d++) {
            size_t nn;
            const size_t *nodes = topo_cluster_domain_nodes(s->c, d, &nn);
            if (nn > 0)
                q->per_scope[scope_of(s, nodes[0], sh->block)] += q->per_dom[d] / ppu;
        }
    }
    for (size_t k = 0; k < q->nscopes; k++) {
        if (q->per_scope[k] >= units)
            return true;
    }
    return false;
}

/* Integrate the state after the last sample over [from, to), cut at the horizon. */
static void account(struct sim *s, double from, double to)
{
    struct sim_queue *q = s->q;
    struct sim_counts *cn = &s->out->counts;
    const struct sim_sample *last = &s->out->samples[s->out->nsamples - 1];
    double end = to < q->horizon ? to : q->horizon, dt_h;

    if (end <= from)
        return;
    dt_h = (end - from) / 3600.0;
    cn->gpu_hours_used += last->used * dt_h;
    cn->gpu_hours_delivered += last->used * dt_h;
    cn->gpu_hours_stranded += last->stranded * dt_h;
    if (q->nwait > 0) {
        cn->saturated_hours += dt_h;
        cn->gpu_hours_idle_waiting += last->free * dt_h;
        cn->allocation_at_saturation +=
            s->out->accel_total ? (double)last->used / s->out->accel_total * dt_h : 0;
    }
    for (size_t k = 0; k < s->out->nshapes; k++)
        q->share[k] += q->placeable[k] ? end - from : 0;
}

/* Try to place the whole group now: true when every pod was placed (else none stays). */
static enum tpx_code try_place(struct sim *s, struct qgroup *g, double t, bool *ok,
                               struct tpx_err *err)
{
    const struct sim_event *e = g->g.ev;
    unsigned long need = (unsigned long)e->pods * e->gpus;
    enum tpx_code rc;

    *ok = false;
    if (!sim_fluid(s)) {
        /* cheap first: not enough free accelerators where the group's scope allows */
        unsigned long all = sim_free_counts(s), most = 0;
        for (size_t r = 0; r < s->nracks; r++)
            most = s->rack_free[r] > most ? s->rack_free[r] : most;
        if (all < need || (!e->block && s->policy != SIM_BLIND && most < need))
            return TPX_OK;
    }
    rc = sim_place_group(s, &g->g, (time_t)t, err);
    if (rc != TPX_OK)
        return rc;
    if (g->g.placed < e->pods) {
        sim_release_group(s, &g->g);
        pol_ledger_expire(s->l, (time_t)t); /* the group's holds go with its last pod */
        return TPX_OK;
    }
    *ok = true;
    return TPX_OK;
}

/* Every waiting group whose turn it is, in arrival order. */
static enum tpx_code attempt(struct sim *s, double t, struct tpx_err *err)
{
    struct sim_queue *q = s->q;
    size_t keep = 0;
    bool blocked = false;
    enum tpx_code rc = TPX_OK;

    for (size_t i = 0; i < q->nwait; i++) {
        struct qgroup *g = &q->g[q->wait[i]];
        bool ok = false;
        if (rc == TPX_OK && !blocked && g->moved && g->ready_t <= t) {
            rc = try_place(s, g, t, &ok, err);
            if (rc == TPX_OK && ok) {
                g->wait_s = t - g->arrive_t;
                if (g->life_s >= 0)
                    heap_push(q, t + g->life_s, q->wait[i]);
                rc = sim_classify(s, &g->g, err);
                continue;
            }
            g->attempts++;
            g->moved = false;
            g->ready_t = t + backoff(s->o, g->attempts);
        }
        blocked = blocked || !s->o->backfill;
        q->wait[keep++] = q->wait[i];
    }
    q->nwait = keep;
    return rc;
}

/* A group that is never placed is counted once, as the replay without the queue counts a
 * rejection (its wait is what it waited). */
static enum tpx_code unplaced(struct sim *s, struct qgroup *g, double t, bool gave_up)
{
    struct sim_shape *sh = &s->out->shapes[g->shape];
    struct sim_counts *cn = &s->out->counts;

    g->wait_s = t - g->arrive_t;
    cn->arrived++;
    cn->rejected++;
    sh->arrived++;
    sh->rejected++;
    cn->gave_up += gave_up;
    cn->never_placed += !gave_up;
    sh->gave_up += gave_up;
    return TPX_OK;
}

/* The earliest time after t when something happens without an event of the trace: a backoff
 * ends for a group that may go, or a group reaches its maximum wait. */
static double next_timer(const struct sim *s, double t)
{
    const struct sim_queue *q = s->q;
    double next = INFINITY;

    for (size_t i = 0; i < q->nwait; i++) {
        const struct qgroup *g = &q->g[q->wait[i]];
        if (g->moved && g->ready_t > t && g->ready_t < next)
            next = g->ready_t;
        if (s->o->max_wait_s > 0 && g->arrive_t + s->o->max_wait_s < next)
            next = g->arrive_t + s->o->max_wait_s;
        if (!s->o->backfill)
            break; /* only the head can go */
    }
    return next;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank of sorted v[0, n). */
static double rank(const double *v, size_t n, double p)
{
    size_t k = (size_t)(p * (double)n);

    k += (double)k < p * (double)n; /* the ceiling, without libm */

    return n == 0 ? 0 : v[k ? k - 1 : 0];
}

/* Per shape: the waits' percentiles and the placeable share. */
static enum tpx_code finish(struct sim *s, struct tpx_err *err)
{
    struct sim_queue *q = s->q;
    struct sim_counts *cn = &s->out->counts;

    for (size_t k = 0; k < s->out->nshapes; k++) {
        struct sim_shape *sh = &s->out->shapes[k];
        size_t m = 0;
        double sum = 0, *w = malloc((sh->arrived + 1) * sizeof(*w));
        if (!w)
            return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
        for (size_t i = 0; i < q->ng; i++) {
            if (q->g[i].shape == k && m < sh->arrived) {
                w[m++] = q->g[i].wait_s;
                sum += q->g[i].wait_s;
            }
        }
        qsort(w, m, sizeof(*w), cmp_double);
        sh->wait_p50_s = rank(w, m, 0.50);
        sh->wait_p95_s = rank(w, m, 0.95);
        sh->wait_max_s = m ? w[m - 1] : 0;
        sh->wait_mean_s = m ? sum / (double)m : 0;
        sh->placeable_share = q->horizon > 0 ? q->share[k] / q->horizon : 0;
        sh->waits = w;
        sh->nwaits = m;
    }
    cn->horizon_s = q->horizon;
    cn->allocation_at_saturation =
        cn->saturated_hours > 0 ? cn->allocation_at_saturation / cn->saturated_hours : 0;
    return TPX_OK;
}

/* The arrivals of ev[0, n) with their lifetimes, and the shapes in order of first arrival. */
static enum tpx_code load(struct sim *s, const struct sim_event *ev, size_t n, struct tpx_err *err)
{
    struct sim_queue *q = s->q;
    struct tpx_map open;
    enum tpx_code rc = TPX_OK;
    double prev = 0;

    tpx_map_init(&open);
    for (size_t i = 0; i < n && rc == TPX_OK; i++) {
        const struct sim_event *e = &ev[i];
        size_t qi;
        if (e->t < prev) {
            rc = tpx_err_set(err, TPX_EINVAL, "line %zu: time %g is before the previous %g",
                             e->line, e->t, prev);
            break;
        }
        prev = e->t;
        if (!e->arrive) {
            if (tpx_map_get_num(&open, e->group, &qi)) {
                q->g[qi].life_s = e->t - q->g[qi].arrive_t;
                tpx_map_del(&open, e->group, NULL);
            }
            continue;
        }
        if (tpx_map_find(&open, e->group)) {
            rc = tpx_err_set(err, TPX_EINVAL, "line %zu: group '%s' arrives again before it leaves",
                             e->line, e->group);
            break;
        }
        qi = q->ng++;
        memset(&q->g[qi], 0, sizeof(q->g[qi]));
        q->g[qi].g.ev = e;
        q->g[qi].g.rack = TOPO_NONE;
        q->g[qi].g.nodes = calloc(e->pods + 1, sizeof(size_t));
        q->g[qi].arrive_t = e->t;
        q->g[qi].life_s = -1;
        q->horizon = e->t;
        struct sim_shape *sh = sim_shape_of(s, e);
        if (!q->g[qi].g.nodes || !sh) {
            rc = tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
            break;
        }
        q->g[qi].shape = (size_t)(sh - s->out->shapes);
        rc = tpx_map_put_num(&open, e->group, qi, err);
    }
    tpx_map_release(&open);
    return rc;
}

static enum tpx_code setup(struct sim *s, const struct sim_event *ev, size_t n, struct tpx_err *err)
{
    struct sim_queue *q = calloc(1, sizeof(*q));
    size_t nd = topo_cluster_domain_count(s->c), nb = topo_cluster_block_count(s->c);
    enum tpx_code rc;

    if (!q)
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    s->q = q;
    q->nscopes = s->nracks > nb ? s->nracks : nb;
    q->g = calloc(n + 1, sizeof(*q->g));
    q->wait = malloc((n + 1) * sizeof(*q->wait));
    q->heap = malloc((n + 1) * sizeof(*q->heap));
    q->per_dom = malloc((nd + 1) * sizeof(*q->per_dom));
    q->per_scope = malloc((q->nscopes + 1) * sizeof(*q->per_scope));
    if (!q->g || !q->wait || !q->heap || !q->per_dom || !q->per_scope)
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    rc = load(s, ev, n, err);
    if (rc != TPX_OK)
        return rc;
    q->share = calloc(s->out->nshapes + 1, sizeof(*q->share));
    q->placeable = calloc(s->out->nshapes + 1, sizeof(*q->placeable));
    if (!q->share || !q->placeable)
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    return TPX_OK;
}

enum tpx_code sim_queue_run(struct sim *s, const struct sim_event *ev, size_t n,
                            struct tpx_err *err)
{
    struct sim_queue *q;
    size_t next_arrival = 0;
    double t = 0;
    enum tpx_code rc = setup(s, ev, n, err);

    q = s->q;
    for (size_t k = 0; rc == TPX_OK && k < s->out->nshapes; k++)
        q->placeable[k] = placeable_now(s, &s->out->shapes[k]);
    while (rc == TPX_OK) {
        double next = next_timer(s, t);
        bool freed = false;
        if (next_arrival < q->ng && q->g[next_arrival].arrive_t < next)
            next = q->g[next_arrival].arrive_t;
        if (q->nheap && q->heap[0].t < next)
            next = q->heap[0].t;
        /* past the last arrival with nobody waiting, nothing more is measured */
        if (next == INFINITY || (next_arrival == q->ng && q->nwait == 0))
            break;
        account(s, t, next);
        t = next;
        pol_ledger_expire(s->l, (time_t)t);
        while (q->nheap && q->heap[0].t <= t) {
            struct leave lv = heap_pop(q);
            sim_release_group(s, &q->g[lv.qi].g);
            freed = true;
        }
        for (size_t i = 0; i < q->nwait; i++)
            q->g[q->wait[i]].moved = q->g[q->wait[i]].moved || freed;
        if (s->o->max_wait_s > 0) {
            size_t keep = 0;
            for (size_t i = 0; i < q->nwait && rc == TPX_OK; i++) {
                struct qgroup *g = &q->g[q->wait[i]];
                if (t - g->arrive_t >= s->o->max_wait_s)
                    rc = unplaced(s, g, t, true);
                else
                    q->wait[keep++] = q->wait[i];
            }
            q->nwait = keep;
        }
        while (next_arrival < q->ng && q->g[next_arrival].arrive_t <= t) {
            struct qgroup *g = &q->g[next_arrival];
            g->moved = true;
            g->ready_t = t;
            q->wait[q->nwait++] = next_arrival++;
        }
        if (rc == TPX_OK)
            rc = attempt(s, t, err);
        if (rc == TPX_OK)
            rc = sim_push_sample(s, t, err);
        for (size_t k = 0; rc == TPX_OK && k < s->out->nshapes; k++)
            q->placeable[k] = placeable_now(s, &s->out->shapes[k]);
    }
    for (size_t i = 0; rc == TPX_OK && i < q->nwait; i++)
        rc = unplaced(s, &q->g[q->wait[i]], t, false);
    q->nwait = 0;
    return rc == TPX_OK ? finish(s, err) : rc;
}

void sim_queue_release(struct sim *s)
{
    struct sim_queue *q = s->q;

    if (!q)
        return;
    for (size_t i = 0; i < q->ng; i++)
        free(q->g[i].g.nodes);
    free(q->g);
    free(q->wait);
    free(q->heap);
    free(q->share);
    free(q->placeable);
    free(q->per_dom);
    free(q->per_scope);
    free(q);
    s->q = NULL;
}
