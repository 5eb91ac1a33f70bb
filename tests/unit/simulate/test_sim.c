/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_sim.c - `topox simulate`'s core: the generator (same seed, same trace;
 * the shapes and order it promises; bad specs), and the replay's counters on small traces under
 * the three policies: whole, cross-rack, TP split, half-placed, rejected (with room or without),
 * the GPU-hours and the fragmentation samples. */
#include "simulate/sim.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/synthetic.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct topo_cluster *cl;

static void setup(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = topo_cluster_synthetic(spec, &err);
    cr_assert_not_null(cl, "%s", err.msg);
}

static void teardown(void)
{
    topo_cluster_free(cl);
    cl = NULL;
}

static struct sim_event arr(double t, const char *g, unsigned pods, unsigned gpus, unsigned tp,
                            unsigned pp)
{
    struct sim_event e = {.t = t, .arrive = true, .pods = pods, .gpus = gpus, .tp = tp, .pp = pp};
    snprintf(e.group, sizeof(e.group), "%s", g);
    return e;
}

static struct sim_event lv(double t, const char *g)
{
    struct sim_event e = {.t = t, .arrive = false};
    snprintf(e.group, sizeof(e.group), "%s", g);
    return e;
}

static struct sim_counts run(const struct sim_event *ev, size_t n, enum sim_policy p,
                             struct sim_result *keep)
{
    struct sim_result r;
    struct sim_counts c;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(sim_run(cl, ev, n, p, &r, &err), TPX_OK, "%s", err.msg);
    c = r.counts;
    if (keep)
        *keep = r;
    else
        sim_result_release(&r);
    return c;
}

Test(sim_gen, same_seed_same_trace_other_seed_other_trace)
{
    struct sim_gen g;
    struct sim_event *a, *b, *c;
    size_t na, nb, nc;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(sim_gen_parse("seed=42,groups=200", &g, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(sim_gen_run(&g, &a, &na, &err), TPX_OK);
    cr_assert_eq(sim_gen_run(&g, &b, &nb, &err), TPX_OK);
    cr_assert_eq(na, 400);
    cr_assert_eq(nb, na);
    cr_expect_eq(memcmp(a, b, na * sizeof(*a)), 0, "the same seed gives the same events");
    g.seed = 43;
    cr_assert_eq(sim_gen_run(&g, &c, &nc, &err), TPX_OK);
    cr_assert_eq(nc, na);
    cr_expect_neq(memcmp(a, c, na * sizeof(*a)), 0, "another seed gives another trace");
    free(a);
    free(b);
    free(c);
}

Test(sim_gen, shapes_order_and_one_leave_per_arrival)
{
    struct sim_gen g;
    struct sim_event *ev;
    size_t n, arrivals = 0, leaves = 0, tp16 = 0, pods4 = 0;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(sim_gen_parse("seed=3,groups=500,load=0.8,life=2", &g, &err), TPX_OK);
    cr_expect_eq(g.seed, 3);
    cr_expect_eq(g.groups, 500);
    cr_expect(g.load == 0.8 && g.life_h == 2);
    cr_expect_eq(g.gpus, 512, "the default");
    cr_assert_eq(sim_gen_run(&g, &ev, &n, &err), TPX_OK);
    cr_assert_eq(n, 1000);
    for (size_t i = 0; i < n; i++) {
        const struct sim_event *e = &ev[i];
        if (i > 0)
            cr_expect(e->t >= ev[i - 1].t, "event %zu goes back in time", i);
        cr_expect(e->pods >= 1 && e->pods <= 4, "event %zu: %u pods", i, e->pods);
        cr_expect(e->gpus == 4 || e->gpus == 8, "event %zu: %u gpus", i, e->gpus);
        cr_expect(e->tp == 4 || e->tp == 8 || e->tp == 16, "event %zu: tp %u", i, e->tp);
        cr_expect(e->pp >= 1 && e->pp <= 4, "event %zu: pp %u", i, e->pp);
        cr_expect_eq(e->pods * e->gpus % (e->tp * e->pp), 0, "event %zu adds up", i);
        arrivals += e->arrive;
        leaves += !e->arrive;
        tp16 += e->arrive && e->tp == 16;
        pods4 += e->arrive && e->pods == 4;
        if (!e->arrive) {
            /* its arrival came before */
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                seen = ev[k].arrive && strcmp(ev[k].group, e->group) == 0;
            cr_expect(seen, "leave of %s before its arrival", e->group);
        }
    }
    cr_expect_eq(arrivals, 500);
    cr_expect_eq(leaves, 500);
    cr_expect(tp16 > 0 && pods4 > 0, "the mix has TP 16 and 4-pod groups");
    free(ev);
}

/* The mixes: each shape from its table (docs/simulate.md "Workload mixes"), the fleet's node
 * size, training gangs of 8-64 nodes in block scope, the cluster size of the fleet's shape as the
 * default, and the same seed giving the same trace. */
Test(sim_gen, mixes_draw_their_shapes_for_their_fleet)
{
    static const struct {
        const char *spec;
        unsigned gpus_default, max_pod_gpus;
        bool serving, training;
    } cases[] = {
        {"mix=llm-serving,fleet=hgx", 1024, 8, true, false},
        {"mix=llm-serving,fleet=gb200", 576, 4, true, false},
        {"mix=training,fleet=hgx", 1024, 8, false, true},
        {"mix=mixed,fleet=mixed", 928, 8, true, true},
    };

    for (size_t c = 0; c < NELEM(cases); c++) {
        struct sim_gen g;
        struct sim_event *ev, *again;
        size_t n, n2, serving = 0, training = 0, cd = 0;
        char spec[96];
        struct tpx_err err = TPX_ERR_INIT;
        snprintf(spec, sizeof(spec), "seed=5,groups=300,%s", cases[c].spec);
        cr_assert_eq(sim_gen_parse(spec, &g, &err), TPX_OK, "%s", err.msg);
        cr_expect_eq(g.gpus, cases[c].gpus_default, "%s", spec);
        cr_assert_eq(sim_gen_run(&g, &ev, &n, &err), TPX_OK);
        cr_assert_eq(sim_gen_run(&g, &again, &n2, &err), TPX_OK);
        cr_assert_eq(n, 600);
        cr_expect(n2 == n && memcmp(ev, again, n * sizeof(*ev)) == 0, "%s: deterministic", spec);
        for (size_t i = 0; i < n; i++) {
            const struct sim_event *e = &ev[i];
            if (!e->arrive)
                continue;
            cr_expect(e->gpus <= cases[c].max_pod_gpus, "%s: %u GPUs a pod", spec, e->gpus);
            cr_expect_eq(e->pods * e->gpus % (e->tp * e->pp), 0, "%s: adds up", spec);
            if (e->block) {
                training++;
                cr_expect(e->pods >= 8 && e->pods <= 64, "%s: a gang of %u", spec, e->pods);
            } else {
                serving++;
                cd += e->tp > 16; /* a ComputeDomain of 8-18 NVL72 nodes */
            }
        }
        cr_expect_eq(serving > 0, cases[c].serving, "%s: %zu serving", spec, serving);
        cr_expect_eq(training > 0, cases[c].training, "%s: %zu gangs", spec, training);
        if (strstr(spec, "gb200"))
            cr_expect(cd > 0, "%s: ComputeDomains", spec);
        free(ev);
        free(again);
    }
}

Test(sim_gen, bad_specs_name_the_key)
{
    static const struct {
        const char *spec, *msg;
    } cases[] = {
        {"seed", "'seed' is not key=value"},
        {"colour=3", "unknown key 'colour'"},
        {"groups=0", "key 'groups': '0' is not a number in [1, 1e+06]"},
        {"load=x", "key 'load': 'x' is not a number"},
        {"life=", "key 'life': bad value"},
        {"seed=-1", "key 'seed'"},
    };
    struct sim_gen g;

    for (size_t i = 0; i < NELEM(cases); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        cr_expect_eq(sim_gen_parse(cases[i].spec, &g, &err), TPX_EINVAL, "%s", cases[i].spec);
        cr_expect(strstr(err.msg, cases[i].msg) != NULL, "'%s' lacks '%s'", err.msg, cases[i].msg);
    }
}

/* Fleets: parts joined with '+' keep their racks, blocks and domains apart; named shapes. */
Test(sim_fleet, parts_and_named_shapes)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c =
        sim_cluster_new("racks=2,nodes-per-rack=2,gpus-per-node=8,blocks=1+racks=1,nodes-per-rack="
                        "4,gpus-per-node=4,domain-nodes=4,blocks=1",
                        &err);

    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_eq(topo_cluster_node_count(c), 8);
    cr_expect_eq(topo_cluster_rack_count(c), 3, "r01 and r02 of part 1 are not r01 of part 2");
    cr_expect_eq(topo_cluster_block_count(c), 2);
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, 7)), 16);
    cr_expect_neq(topo_cluster_node_rack(c, 0), topo_cluster_node_rack(c, 4));
    topo_cluster_free(c);
    c = sim_cluster_new("gb200", &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_eq(topo_cluster_node_count(c), 144);
    cr_expect_eq(topo_cluster_rack_count(c), 8);
    topo_cluster_free(c);
    cr_expect_null(sim_cluster_new("racks=2+", &err));
    cr_expect_null(sim_cluster_new("racks=x", &err));
}

Test(sim, policy_names_round_trip)
{
    enum sim_policy p;

    cr_expect(sim_policy_parse("best-fit", &p) && p == SIM_BEST_FIT);
    cr_expect(sim_policy_parse("blind", &p) && p == SIM_BLIND);
    cr_expect(sim_policy_parse("topox", &p) && p == SIM_TOPOX);
    cr_expect(sim_policy_parse("pack", &p) && p == SIM_PACK);
    cr_expect(sim_policy_parse("fluid", &p) && p == SIM_FLUID);
    cr_expect(sim_policy_parse("fluid-rack", &p) && p == SIM_FLUID_RACK);
    cr_expect_str_eq(sim_policy_name(SIM_FLUID_RACK), "fluid-rack");
    cr_expect(!sim_policy_parse("random", &p));
    cr_expect_str_eq(sim_policy_name(SIM_BEST_FIT), "best-fit");
}

/* Two racks of two 8-GPU nodes: a 2-pod group fills a rack, a third finds no room. */
Test(sim, whole_and_rejected_groups_and_the_gpu_hours, .fini = teardown)
{
    const struct sim_event ev[] = {
        arr(0, "a", 2, 8, 8, 2), arr(0, "b", 2, 8, 8, 2),    arr(3600, "c", 1, 8, 8, 1),
        lv(7200, "a"),           arr(7200, "d", 1, 8, 8, 1), lv(10800, "b"),
        lv(10800, "d"),
    };
    enum sim_policy ps[] = {SIM_TOPOX, SIM_BEST_FIT, SIM_BLIND, SIM_PACK};

    setup("racks=2,nodes-per-rack=2,gpus-per-node=8");
    for (size_t i = 0; i < NELEM(ps); i++) {
        struct sim_result r;
        struct sim_counts c = run(ev, NELEM(ev), ps[i], &r);
        cr_expect_eq(c.arrived, 4, "%s", sim_policy_name(ps[i]));
        cr_expect_eq(c.whole, 3, "%s", sim_policy_name(ps[i]));
        cr_expect_eq(c.rejected, 1, "%s: c finds the cluster full", sim_policy_name(ps[i]));
        cr_expect_eq(c.rejected_with_room, 0, "%s", sim_policy_name(ps[i]));
        cr_expect_eq(c.whole_gpus, 40);
        /* 32 GPUs for 2 h, then 16 + 8 for 1 h */
        cr_expect(c.gpu_hours_used > 87.99 && c.gpu_hours_used < 88.01, "%s: %f",
                  sim_policy_name(ps[i]), c.gpu_hours_used);
        cr_expect(c.gpu_hours_stranded < 0.01, "%s: %f", sim_policy_name(ps[i]),
                  c.gpu_hours_stranded);
        cr_expect_eq(r.accel_total, 32);
        cr_assert_eq(r.nsamples, 4, "one sample per event time: 0, 1 h, 2 h, 3 h");
        cr_expect_eq(r.samples[0].used, 32);
        cr_expect(r.samples[1].t == 3600);
        cr_expect_eq(r.samples[r.nsamples - 1].used, 0, "everything left");
        cr_expect_eq(r.samples[r.nsamples - 1].free_whole, 32);
        sim_result_release(&r);
    }
}

/* One pod per rack first; then a 2-pod pipeline: blind splits it over the racks, the rules keep it
 * in one. */
Test(sim, blind_goes_cross_rack_and_the_rules_do_not, .fini = teardown)
{
    const struct sim_event ev[] = {
        arr(0, "a", 1, 8, 8, 1),
        arr(1, "b", 2, 8, 8, 2),
    };
    struct sim_counts c;

    setup("racks=2,nodes-per-rack=2,gpus-per-node=8");
    c = run(ev, NELEM(ev), SIM_BLIND, NULL);
    cr_expect_eq(c.whole, 1);
    cr_expect_eq(c.cross_rack, 1, "blind: r01-n02 and r02-n01");
    c = run(ev, NELEM(ev), SIM_TOPOX, NULL);
    cr_expect_eq(c.whole, 2, "topox: b takes rack r02");
    cr_expect_eq(c.cross_rack, 0);
    c = run(ev, NELEM(ev), SIM_BEST_FIT, NULL);
    cr_expect_eq(c.whole, 2);
}

/* One rack of two nodes, one taken: a 2-pod group cannot fit. Blind places its leader and strands
 * 8 GPUs until the group leaves; the gang rule rejects it whole. */
Test(sim, blind_half_places_and_strands_the_rules_reject, .fini = teardown)
{
    const struct sim_event ev[] = {
        arr(0, "a", 1, 8, 8, 1),
        arr(0, "b", 2, 8, 8, 2),
        lv(3600, "b"),
        lv(3600, "a"),
    };
    struct sim_result r;
    struct sim_counts c;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    c = run(ev, NELEM(ev), SIM_BLIND, &r);
    cr_expect_eq(c.half, 1);
    cr_expect_eq(c.rejected, 0);
    cr_expect(c.gpu_hours_stranded > 7.99 && c.gpu_hours_stranded < 8.01, "%f",
              c.gpu_hours_stranded);
    cr_expect_eq(r.samples[0].stranded, 8);
    sim_result_release(&r);
    c = run(ev, NELEM(ev), SIM_TOPOX, NULL);
    cr_expect_eq(c.half, 0);
    cr_expect_eq(c.rejected, 1);
    cr_expect_eq(c.rejected_with_room, 0, "8 free GPUs, the group needs 16");
    cr_expect(c.gpu_hours_stranded < 0.01);
}

/* TP 16 on 8-GPU nodes: the rules reject it (all-reduce would cross nodes), blind splits it. */
Test(sim, tp_split_and_rejected_with_room, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 2, 8, 16, 1)};
    struct sim_counts c;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    c = run(ev, NELEM(ev), SIM_BLIND, NULL);
    cr_expect_eq(c.tp_split, 1);
    cr_expect_eq(c.whole, 0);
    c = run(ev, NELEM(ev), SIM_TOPOX, NULL);
    cr_expect_eq(c.rejected, 1);
    cr_expect_eq(c.rejected_with_room, 1, "16 GPUs free, no 16-GPU domain");
    teardown();
    /* on two-node NVLink domains it is whole */
    setup("racks=1,nodes-per-rack=2,gpus-per-node=8,domain-nodes=2");
    c = run(ev, NELEM(ev), SIM_TOPOX, NULL);
    cr_expect_eq(c.whole, 1);
}

/* A 4-GPU pod on an empty 8-GPU node leaves 4 of 12 free GPUs outside whole domains. */
Test(sim, fragmentation_samples, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 1, 4, 4, 1), arr(1, "b", 1, 4, 4, 1)};
    struct sim_result r;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    run(ev, NELEM(ev), SIM_TOPOX, &r);
    cr_assert_eq(r.nsamples, 2);
    cr_expect_eq(r.samples[0].free, 12);
    cr_expect_eq(r.samples[0].free_whole, 8);
    cr_expect_eq(r.samples[0].stranded, 4);
    cr_expect(r.samples[0].frag > 0.33 && r.samples[0].frag < 0.34);
    cr_expect_eq(r.samples[1].free_whole, 8, "b fills a's node, not the empty one");
    cr_expect(r.samples[1].frag == 0.0);
    sim_result_release(&r);
}

Test(sim, events_out_of_order_are_refused, .fini = teardown)
{
    const struct sim_event ev[] = {arr(10, "a", 1, 8, 8, 1), arr(5, "b", 1, 8, 8, 1)};
    struct sim_result r;
    struct tpx_err err = TPX_ERR_INIT;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    cr_expect_eq(sim_run(cl, ev, NELEM(ev), SIM_TOPOX, &r, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "before the previous") != NULL, "%s", err.msg);
    cr_expect_null(r.samples);
}

/* The breakdown entry of a shape (pods x gpus, tp, pp); fails the test when there is none. */
static const struct sim_shape *shape(const struct sim_result *r, unsigned pods, unsigned gpus,
                                     unsigned tp, unsigned pp)
{
    for (size_t i = 0; i < r->nshapes; i++) {
        const struct sim_shape *sh = &r->shapes[i];
        if (sh->pods == pods && sh->gpus == gpus && sh->tp == tp && sh->pp == pp)
            return sh;
    }
    cr_assert_fail("no shape %ux%u tp%u pp%u", pods, gpus, tp, pp);
    return NULL;
}

/* Two one-node racks: three 4-GPU pods, the first leaves, so 4 GPUs are free in each rack. An
 * 8-GPU pod then fits by count in the cluster (fluid admits it) but in no rack (fluid-rack and
 * best-fit reject it with room); a second one finds nothing free even by count: fluid rejects it
 * too, without room. The bound admits what fits by count, never more. */
Test(sim, fluid_admits_what_fits_by_count_and_never_more, .fini = teardown)
{
    const struct sim_event ev[] = {
        arr(0, "a", 1, 4, 4, 1), arr(1, "b", 1, 4, 4, 1), arr(2, "c", 1, 4, 4, 1), lv(3, "a"),
        arr(4, "d", 1, 8, 8, 1), arr(5, "e", 1, 8, 8, 1), lv(3600, "b"),           lv(3600, "c"),
        lv(3600, "d"),           lv(3600, "e"),
    };
    struct sim_result r;
    struct sim_counts c;
    const struct sim_shape *sh;

    setup("racks=2,nodes-per-rack=1,gpus-per-node=8");
    c = run(ev, NELEM(ev), SIM_FLUID, &r);
    cr_expect_eq(c.whole, 4, "a, b, c and d: 8 GPUs free when d came");
    cr_expect_eq(c.rejected, 1, "e: every GPU taken");
    cr_expect_eq(c.rejected_with_room, 0);
    cr_expect_eq(c.whole_gpus, 20);
    cr_expect_eq(r.samples[r.nsamples - 2].used, 16, "after d and e: full, not over-full");
    cr_expect_eq(r.samples[r.nsamples - 2].stranded, 0, "fluid strands nothing");
    sh = shape(&r, 1, 8, 8, 1);
    cr_expect_eq(sh->arrived, 2);
    cr_expect_eq(sh->whole, 1);
    cr_expect_eq(sh->with_room, 0);
    sim_result_release(&r);
    for (int p = 0; p < 2; p++) {
        enum sim_policy pol = p ? SIM_BEST_FIT : SIM_FLUID_RACK;
        c = run(ev, NELEM(ev), pol, &r);
        cr_expect_eq(c.whole, 3, "%s: d and e find 4 + 4 free", sim_policy_name(pol));
        cr_expect_eq(c.rejected, 2, "%s", sim_policy_name(pol));
        cr_expect_eq(c.rejected_with_room, 2, "%s", sim_policy_name(pol));
        sh = shape(&r, 1, 8, 8, 1);
        cr_expect_eq(sh->rejected, 2, "%s", sim_policy_name(pol));
        cr_expect_eq(sh->with_room, 2, "%s", sim_policy_name(pol));
        cr_expect_eq(sh->with_rack_room, 0, "%s: 4 free in each rack", sim_policy_name(pol));
        cr_expect_eq(shape(&r, 1, 4, 4, 1)->whole, 3);
        sim_result_release(&r);
    }
}

/* One rack of two nodes with 4 GPUs free on each: an 8-GPU pod fits the rack by count, not a
 * node. best-fit rejects it with room in the rack; fluid-rack admits it. */
Test(sim, rejections_with_room_in_a_rack_are_counted_per_shape, .fini = teardown)
{
    const struct sim_event ev[] = {
        arr(0, "a", 1, 4, 4, 1), arr(1, "b", 1, 4, 4, 1), arr(2, "c", 1, 4, 4, 1), lv(3, "a"),
        arr(4, "d", 1, 8, 8, 1),
    };
    struct sim_result r;
    struct sim_counts c;
    const struct sim_shape *sh;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    c = run(ev, NELEM(ev), SIM_BEST_FIT, &r);
    cr_expect_eq(c.rejected_with_room, 1);
    sh = shape(&r, 1, 8, 8, 1);
    cr_expect_eq(sh->with_room, 1);
    cr_expect_eq(sh->with_rack_room, 1, "the rack had 8 free, on two nodes");
    cr_expect_eq(r.nshapes, 2);
    sim_result_release(&r);
    c = run(ev, NELEM(ev), SIM_FLUID_RACK, NULL);
    cr_expect_eq(c.whole, 4, "a, b, c and d");
    cr_expect_eq(c.rejected, 0);
}

/* --queue: replay with the queue, the result kept. */
static void run_q(const struct sim_event *ev, size_t n, enum sim_policy p, bool backfill,
                  double max_wait, struct sim_result *r)
{
    struct sim_opts o = SIM_OPTS_INIT;
    struct tpx_err err = TPX_ERR_INIT;

    o.queue = true;
    o.backfill = backfill;
    o.max_wait_s = max_wait;
    cr_assert_eq(sim_run_opts(cl, ev, n, p, &o, r, &err), TPX_OK, "%s", err.msg);
}

static const struct sim_shape *shape_named(const struct sim_result *r, const char *name)
{
    for (size_t k = 0; k < r->nshapes; k++) {
        if (strcmp(r->shapes[k].name, name) == 0)
            return &r->shapes[k];
    }
    cr_assert_fail("no shape %s", name);
    return NULL;
}

/* One rack of two 8-GPU nodes. a (2 nodes, 2 h) fills it; b arrives at 1 h, waits until a leaves
 * at 2 h, then lives its 1 h from there; c arrives at 2.5 h and goes at once. Every policy alike:
 * nothing rejected, b waited 1 h, the GPU-hours up to the last arrival (2.5 h) are 16 x 2 + 8 x
 * 0.5, saturated for the hour b waited with the cluster full, and one 8-GPU node was free (the
 * 1 x 8 shape placeable) only from 2 h to 2.5 h: a fifth of the horizon. */
Test(sim_queue, a_group_that_does_not_fit_waits_until_capacity_is_freed, .fini = teardown)
{
    const struct sim_event ev[] = {
        arr(0, "a", 2, 8, 8, 2), arr(3600, "b", 1, 8, 8, 1), lv(7200, "a"),
        lv(7200, "b"),           arr(9000, "c", 1, 8, 8, 1), lv(9500, "c")};
    enum sim_policy ps[] = {SIM_TOPOX, SIM_BEST_FIT, SIM_BLIND, SIM_FLUID};

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    for (size_t i = 0; i < NELEM(ps); i++) {
        struct sim_result r;
        const char *name = sim_policy_name(ps[i]);
        run_q(ev, NELEM(ev), ps[i], false, 0, &r);
        const struct sim_shape *one = shape_named(&r, "tp8xpp1-1x8");
        const struct sim_shape *two = shape_named(&r, "tp8xpp2-2x8");
        cr_expect_eq(r.counts.rejected, 0, "%s", name);
        cr_expect_eq(r.counts.whole, 3, "%s", name);
        cr_expect_eq(r.counts.gave_up, 0, "%s", name);
        cr_assert_eq(one->nwaits, 2, "%s", name);
        cr_expect(one->waits[0] == 0 && one->waits[1] == 3600, "%s: %f %f", name, one->waits[0],
                  one->waits[1]);
        cr_expect(one->wait_p50_s == 0 && one->wait_p95_s == 3600 && one->wait_max_s == 3600, "%s",
                  name);
        cr_expect(two->wait_max_s == 0, "%s", name);
        cr_expect(r.counts.horizon_s == 9000, "%s", name);
        cr_expect(r.counts.gpu_hours_delivered > 35.99 && r.counts.gpu_hours_delivered < 36.01,
                  "%s: %f", name, r.counts.gpu_hours_delivered);
        cr_expect(r.counts.saturated_hours > 0.99 && r.counts.saturated_hours < 1.01, "%s: %f",
                  name, r.counts.saturated_hours);
        cr_expect(r.counts.allocation_at_saturation > 0.999, "%s: %f", name,
                  r.counts.allocation_at_saturation);
        cr_expect(one->placeable_share > 0.199 && one->placeable_share < 0.201, "%s: %f", name,
                  one->placeable_share);
        cr_expect(two->placeable_share < 0.001, "%s: %f", name, two->placeable_share);
        sim_result_release(&r);
    }
}

/* a holds one of two nodes; big (both nodes) waits from 100 s; small (one node, 1000 s) comes at
 * 200 s. Strict FIFO: small waits behind big until big has run (7200 + 3600). Backfill: small
 * goes at once. big waits 7100 s either way (small is gone long before a leaves). */
Test(sim_queue, strict_fifo_blocks_behind_the_head_and_backfill_does_not, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 1, 8, 8, 1),
                                   arr(100, "big", 2, 8, 8, 2),
                                   arr(200, "small", 1, 8, 8, 1),
                                   lv(1200, "small"),
                                   lv(3700, "big"),
                                   lv(7200, "a")};

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    for (int backfill = 0; backfill < 2; backfill++) {
        struct sim_result r;
        run_q(ev, NELEM(ev), SIM_TOPOX, backfill, 0, &r);
        const struct sim_shape *one = shape_named(&r, "tp8xpp1-1x8");
        const struct sim_shape *two = shape_named(&r, "tp8xpp2-2x8");
        cr_expect(two->wait_max_s == 7100, "backfill %d: %f", backfill, two->wait_max_s);
        cr_expect(one->wait_max_s == (backfill ? 0 : 10600), "backfill %d: %f", backfill,
                  one->wait_max_s);
        cr_expect_eq(r.counts.whole, 3);
        sim_result_release(&r);
    }
}

/* The same with --max-wait 1 h under strict FIFO: big gives up at 3700 s (counted, its wait the
 * hour), and small behind it goes then. */
Test(sim_queue, max_wait_gives_up_and_is_counted, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 1, 8, 8, 1),
                                   arr(100, "big", 2, 8, 8, 2),
                                   arr(200, "small", 1, 8, 8, 1),
                                   lv(1200, "small"),
                                   lv(3700, "big"),
                                   lv(7200, "a")};
    struct sim_result r;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    run_q(ev, NELEM(ev), SIM_BEST_FIT, false, 3600, &r);
    cr_expect_eq(r.counts.gave_up, 1);
    cr_expect_eq(r.counts.rejected, 1);
    cr_expect_eq(shape_named(&r, "tp8xpp2-2x8")->gave_up, 1);
    cr_expect(shape_named(&r, "tp8xpp2-2x8")->wait_max_s == 3600);
    cr_expect(shape_named(&r, "tp8xpp1-1x8")->wait_max_s == 3500, "%f",
              shape_named(&r, "tp8xpp1-1x8")->wait_max_s);
    sim_result_release(&r);
}

/* kube-scheduler's backoff: b fails at 5 s (1 s of backoff); a leaves at 5.5 s, but b is retried
 * only when its backoff ends, at 6 s. */
Test(sim_queue, a_retry_waits_for_the_backoff, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 1, 8, 8, 1), arr(5, "b", 1, 8, 8, 1), lv(5.5, "a"),
                                   lv(100, "b")};
    struct sim_result r;

    setup("racks=1,nodes-per-rack=1,gpus-per-node=8");
    run_q(ev, NELEM(ev), SIM_TOPOX, false, 0, &r);
    cr_expect(shape_named(&r, "tp8xpp1-1x8")->wait_max_s == 1.0, "%f",
              shape_named(&r, "tp8xpp1-1x8")->wait_max_s);
    sim_result_release(&r);
}

/* The anchors' first-member rules inside a rack of two 8-GPU nodes: a (4 GPUs) goes to the first
 * node under all; then b (4 GPUs): best fit and Kueue's LeastFreeCapacity fill that node and keep
 * the second whole, Kueue's BestFit starts from the node with the most room (the whole one). */
Test(sim_anchors, the_first_member_node_of_each_anchor, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 1, 4, 4, 1), arr(10, "b", 1, 4, 4, 1)};
    const struct {
        enum sim_policy p;
        unsigned free_whole;
    } cases[] = {{SIM_BEST_FIT, 8},
                 {SIM_KUEUE_LEAST_FREE, 8},
                 {SIM_KUEUE_BEST_FIT, 0},
                 {SIM_VOLCANO_BINPACK, 8},
                 {SIM_SLURM_BLOCK, 8}};

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct sim_result r;
        struct sim_counts c = run(ev, NELEM(ev), cases[i].p, &r);
        cr_expect_eq(c.whole, 2, "%s", sim_policy_name(cases[i].p));
        cr_expect_eq(r.samples[r.nsamples - 1].free_whole, cases[i].free_whole, "%s: %u",
                     sim_policy_name(cases[i].p), r.samples[r.nsamples - 1].free_whole);
        sim_result_release(&r);
    }
}

/* Whole or nothing: a takes 4 GPUs of the first node; b (two 6-GPU pods, 12 GPUs: as many as are
 * free) gets its first pod on the second node and finds no node for the second. The queue takes
 * the first back (the cluster holds only a's 4 GPUs after 10 s) and b waits until a leaves at
 * 100 s: never half-placed. */
Test(sim_queue, an_attempt_that_places_some_pods_takes_them_back, .fini = teardown)
{
    const struct sim_event ev[] = {arr(0, "a", 1, 4, 4, 1),
                                   arr(10, "b", 2, 6, 6, 2),
                                   lv(100, "a"),
                                   arr(150, "c", 1, 4, 4, 1),
                                   lv(200, "b"),
                                   lv(300, "c")};
    struct sim_result r;

    setup("racks=1,nodes-per-rack=2,gpus-per-node=8");
    run_q(ev, NELEM(ev), SIM_BLIND, false, 0, &r);
    cr_expect_eq(r.counts.half, 0);
    cr_expect_eq(r.counts.whole + r.counts.cross_rack + r.counts.tp_split, 3);
    cr_assert(r.nsamples >= 3);
    cr_expect(r.samples[1].t == 10 && r.samples[1].used == 4, "after b's attempt: %u used",
              r.samples[1].used);
    cr_expect(shape_named(&r, "tp6xpp2-2x6")->wait_max_s == 90, "%f",
              shape_named(&r, "tp6xpp2-2x6")->wait_max_s);
    sim_result_release(&r);
}
