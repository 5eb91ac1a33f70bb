/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_plan.c - the whole-job planner: replicas placed whole through the same
 * filter/score/commit, best fit across racks, rejections with reasons and roll-back, estimates. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "topology/synthetic.h"

#define NOW 5000

static struct topo_cluster *cl;
static struct pol_ledger *led;

static void setup_spec(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = topo_cluster_synthetic(spec, &err);
    cr_assert_not_null(cl, "%s", err.msg);
    led = pol_ledger_new(cl, &err);
    cr_assert_not_null(led, "%s", err.msg);
}

static void teardown(void)
{
    pol_ledger_free(led);
    topo_cluster_free(cl);
}

/* Replica r of an LWS-like job: the leader with flags, workers with defaults, as the plan
 * adapter builds them (it copies the leader's parallelism to the workers). */
struct job_store {
    struct pol_workload wl[64][16];
    struct pol_job_replica rep[64];
};

static void build_job(struct job_store *s, struct pol_job *job, const char *name, size_t nrep,
                      unsigned tp, unsigned pp, unsigned g, unsigned n, unsigned ub,
                      unsigned layers)
{
    cr_assert(nrep <= 64 && n <= 16);
    for (size_t r = 0; r < nrep; r++) {
        for (unsigned k = 0; k < n; k++) {
            struct pol_workload *w = &s->wl[r][k];
            memset(w, 0, sizeof(*w));
            w->has_intent = true;
            w->tp = tp;
            w->pp = pp;
            w->dp = 1;
            w->accel_per_pod = g;
            w->group_size = n;
            w->pod_index = (int)k;
            w->tp_explicit = true;
            w->tp_source = "vllm flag";
            w->num_ubatches = ub;
            w->model_layers = layers;
            snprintf(w->resource, sizeof(w->resource), "nvidia.com/gpu");
            snprintf(w->group, sizeof(w->group), "%s/%zu", name, r);
            snprintf(w->display, sizeof(w->display), "%s group %zu", name, r);
        }
        s->rep[r] = (struct pol_job_replica){s->wl[r], NULL, n, NULL, NULL};
    }
    *job = (struct pol_job){name, s->rep, nrep};
}

static unsigned total_free(void)
{
    unsigned f = 0;
    for (size_t i = 0; i < topo_cluster_node_count(cl); i++)
        f += pol_ledger_node_free(led, i);
    return f;
}

Test(pol_plan, four_replicas_tp8_pp2_pack_two_racks, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("example");
    build_job(&s, &job, "llm/vllm", 4, 8, 2, 8, 2, 32, 126);
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(res.npods, 8);
    cr_expect_eq(res.nrejected, 0);
    cr_assert_eq(res.nestimates, 4);
    for (size_t i = 0; i < res.npods; i += 2) {
        cr_expect_eq(res.pods[i].replica, res.pods[i + 1].replica);
        cr_expect_str_eq(res.pods[i].where.rack, res.pods[i + 1].where.rack, "replica in a rack");
        cr_expect_eq(res.pods[i].where.stage, 0);
        cr_expect_eq(res.pods[i + 1].where.stage, 1);
    }
    /* best fit: two replicas fill a rack before the next rack is opened */
    cr_expect_str_eq(res.pods[0].where.rack, res.pods[2].where.rack);
    cr_expect_str_eq(res.pods[4].where.rack, res.pods[6].where.rack);
    cr_expect_str_neq(res.pods[0].where.rack, res.pods[4].where.rack);
    cr_expect_str_eq(res.pods[1].pod_name, "llm/vllm-0-1");
    cr_expect_eq(res.estimates[0].nodes, 2);
    cr_expect_eq(res.estimates[0].accel, 16);
    cr_expect_eq(res.estimates[0].tp_fabric, TOPO_FABRIC_NVSWITCH);
    cr_expect_not(res.estimates[0].tp_multinode);
    cr_expect(fabs(res.estimates[0].bubble - 1.0 / 33.0) < 1e-9);
    cr_expect(fabs(res.estimates[0].stage_imbalance) < 1e-9);
    cr_expect_eq(total_free(), 128 - 64);
    pol_plan_result_release(&res);
}

Test(pol_plan, rejection_names_the_best_rack_and_rolls_back, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=3,nodes-per-rack=3");
    build_job(&s, &job, "vllm", 4, 8, 2, 8, 2, 0, 0);
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(res.npods, 6);
    cr_assert_eq(res.nrejected, 1);
    cr_expect_eq(res.rejected[0].replica, 3);
    cr_expect_str_eq(res.rejected[0].reason,
                     "replica 3 of vllm: no rack has 2 free 8-GPU domains (best: rack r01, 1)");
    cr_expect_eq(res.estimates[3].nodes, 0);
    cr_expect(res.estimates[3].bubble < 0, "unknown without num_ubatches");
    cr_expect_eq(total_free(), 72 - 48, "nothing of the rejected replica stays booked");
    pol_plan_result_release(&res);
}

Test(pol_plan, invalid_layout_is_rejected_with_the_validation_message, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("example");
    build_job(&s, &job, "llm/big", 1, 16, 1, 8, 2, 0, 0);
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK);
    cr_assert_eq(res.nrejected, 1);
    cr_expect(strstr(res.rejected[0].reason,
                     "replica 0 of llm/big: tensor-parallel-size 16 needs one interconnect "
                     "domain of 16 GPUs") != NULL,
              "%s", res.rejected[0].reason);
    cr_expect(strstr(res.rejected[0].reason, "Try tensor-parallel-size 8 with "
                                             "pipeline-parallel-size 2.") != NULL);
    cr_expect_eq(res.npods, 0);
    pol_plan_result_release(&res);
}

Test(pol_plan, second_job_sees_the_first, .fini = teardown)
{
    static struct job_store s1, s2;
    struct pol_job jobs[2];
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=2,nodes-per-rack=4");
    build_job(&s1, &jobs[0], "a", 1, 8, 4, 8, 4, 0, 0);
    build_job(&s2, &jobs[1], "b", 2, 8, 4, 8, 4, 0, 0);
    cr_assert_eq(pol_plan(led, jobs, 2, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.npods, 8);
    cr_assert_eq(res.nrejected, 1);
    cr_expect_eq(res.rejected[0].job, 1);
    cr_expect_eq(res.rejected[0].replica, 1);
    cr_expect_str_eq(res.rejected[0].reason,
                     "replica 1 of b: no rack has 4 free 8-GPU domains (best: rack r01, 0)");
    pol_plan_result_release(&res);
}

Test(pol_plan, nvl_estimates_report_multinode_tp, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=1,nodes-per-rack=18,gpus-per-node=4,interconnect=nvlink,domain-nodes=18");
    build_job(&s, &job, "nvl", 2, 8, 4, 4, 8, 8, 61);
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.nrejected, 0);
    cr_expect_eq(res.npods, 16);
    cr_expect_eq(res.estimates[1].tp_fabric, TOPO_FABRIC_NVLINK);
    cr_expect(res.estimates[1].tp_multinode);
    cr_expect_eq(res.estimates[1].nodes, 8);
    cr_expect(fabs(res.estimates[1].bubble - 3.0 / 11.0) < 1e-9);
    cr_expect(res.estimates[1].stage_imbalance > 0.0, "61 layers over 4 stages");
    pol_plan_result_release(&res);
}

Test(pol_plan, pods_larger_than_any_node_are_rejected_with_the_pod_size_to_use, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    /* 4-GPU nodes in an 18-node NVLink clique: the clique is big enough for TP 16, the pods of 8
     * GPUs are not; the message must say so instead of blaming the rack. */
    setup_spec("racks=1,nodes-per-rack=18,gpus-per-node=4,domain-nodes=18");
    build_job(&s, &job, "llm/big", 1, 16, 1, 8, 2, 0, 0);
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(res.nrejected, 1);
    cr_expect_str_eq(res.rejected[0].reason,
                     "replica 0 of llm/big: pods of 8 GPUs cannot be placed: the largest node "
                     "here has 4. Use 4 pods of 4 GPUs per group.");
    pol_plan_result_release(&res);
}

Test(pol_plan, pods_without_intent_need_a_node_with_room, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=1,nodes-per-rack=2,gpus-per-node=8");
    build_job(&s, &job, "default/plain", 3, 8, 1, 8, 1, 0, 0);
    for (size_t r = 0; r < 3; r++) {
        s.wl[r][0].has_intent = false;
        s.wl[r][0].group[0] = '\0';
    }
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(res.npods, 2, "two nodes of 8 GPUs hold two such pods");
    cr_assert_eq(res.nrejected, 1);
    cr_expect_str_eq(
        res.rejected[0].reason,
        "replica 2 of default/plain: pod 0: no node has 8 free nvidia.com/gpu (most: 0)");
    cr_expect_eq(total_free(), 0);
    pol_plan_result_release(&res);
}

/* A pod goes only where its own resource is (kube-scheduler's NodeResourcesFit): an AMD pod
 * without topology intent is never placed on NVIDIA nodes, however free they are. */
Test(pol_plan, pods_without_intent_go_only_where_their_resource_is)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=1,nodes-per-rack=2,gpus-per-node=8");
    build_job(&s, &job, "default/amd", 1, 1, 1, 1, 1, 0, 0);
    s.wl[0][0].has_intent = false;
    s.wl[0][0].group[0] = '\0';
    snprintf(s.wl[0][0].resource, sizeof(s.wl[0][0].resource), "amd.com/gpu");
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(res.npods, 0, "no node has amd.com/gpu");
    cr_assert_eq(res.nrejected, 1);
    cr_expect_str_eq(res.rejected[0].reason,
                     "replica 0 of default/amd: pod 0: no node has 1 free amd.com/gpu (most: 0)");
    cr_expect_eq(total_free(), 16);
    pol_plan_result_release(&res);
}

Test(pol_plan, preferred_pods_go_only_where_they_fit, .fini = teardown)
{
    /* Rack r01 is nearly full (best fit ranks it first), r02 is empty: a preferred pod, which the
     * filter never rejects, must still be planned onto a node with room. */
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=2,nodes-per-rack=2");
    cr_assert_eq(pol_ledger_use(led, topo_cluster_find(cl, "r01-n01"), 8, &err), TPX_OK);
    cr_assert_eq(pol_ledger_use(led, topo_cluster_find(cl, "r01-n02"), 4, &err), TPX_OK);
    build_job(&s, &job, "pref", 1, 8, 1, 8, 1, 0, 0);
    s.wl[0][0].preferred = true;
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(res.nrejected, 0, "%s", res.nrejected ? res.rejected[0].reason : "");
    cr_assert_eq(res.npods, 1);
    cr_expect_str_eq(res.pods[0].where.rack, "r02");
    pol_plan_result_release(&res);
}

Test(pol_plan, preferred_members_take_their_reserved_places, .fini = teardown)
{
    /* The leader reserves the worker's place, so that node shows no free GPUs; the worker must
     * still get it. */
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=1,nodes-per-rack=2");
    build_job(&s, &job, "pref", 1, 8, 2, 8, 2, 0, 0);
    s.wl[0][0].preferred = s.wl[0][1].preferred = true;
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(res.nrejected, 0, "%s", res.nrejected ? res.rejected[0].reason : "");
    cr_expect_eq(res.npods, 2);
    cr_expect_eq(total_free(), 0);
    pol_plan_result_release(&res);
}

Test(pol_plan, huge_external_use_fills_the_node_and_never_frees_it, .fini = teardown)
{
    /* 2^31 + 8 accelerators passed through an int turned into -2^31 + 8 and freed the 4 another
     * pod uses; INT64_MIN is removal past the node's use, clamped, never negated as a signed. */
    struct tpx_err err = TPX_ERR_INIT;
    size_t n;

    setup_spec("racks=1,nodes-per-rack=1");
    n = topo_cluster_find(cl, "r01-n01");
    cr_assert_eq(pol_ledger_use(led, n, 4, &err), TPX_OK);
    cr_expect_eq(pol_ledger_node_free(led, n), 4);
    cr_assert_eq(pol_ledger_use(led, n, INT64_C(2147483656), &err), TPX_OK);
    cr_expect_eq(pol_ledger_node_free(led, n), 0);
    cr_assert_eq(pol_ledger_use(led, n, INT64_C(4294967296) * 4, &err), TPX_OK);
    cr_expect_eq(pol_ledger_node_free(led, n), 0, "saturates, never wraps");
    cr_assert_eq(pol_ledger_use(led, n, INT64_MIN, &err), TPX_OK);
    cr_expect_eq(pol_ledger_node_free(led, n), 8);
}

/* A preferred pod that fits no node is told so of them all ("no node has N free X (most: M)"),
 * never "node 'LAST' no longer fits", the last node its retries happened to try. */
Test(pol_plan, a_preferred_pod_that_fits_nowhere_names_the_most_free, .fini = teardown)
{
    static struct job_store s;
    struct pol_job job;
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=1,nodes-per-rack=2");
    cr_assert_eq(pol_ledger_use(led, topo_cluster_find(cl, "r01-n01"), 6, &err), TPX_OK);
    cr_assert_eq(pol_ledger_use(led, topo_cluster_find(cl, "r01-n02"), 5, &err), TPX_OK);
    build_job(&s, &job, "pref", 1, 8, 1, 8, 1, 0, 0);
    s.wl[0][0].preferred = true;
    cr_assert_eq(pol_plan(led, &job, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(res.nrejected, 1);
    cr_expect_str_eq(res.rejected[0].reason,
                     "replica 0 of pref: pod 0: no node has 8 free nvidia.com/gpu (most: 3)");
    pol_plan_result_release(&res);
}
