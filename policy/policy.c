/* SPDX-License-Identifier: Apache-2.0 */
/* policy/policy.c - temporary stubs of the placement core while the bodies are written. */
#include "policy/policy.h"

#include <stdlib.h>

enum tpx_code pol_workload_infer(const struct pol_pod_facts *f, struct pol_workload *wl,
                                 struct tpx_err *err)
{
    (void)f;
    (void)wl;
    return tpx_err_set(err, TPX_ENOTSUP, "workload: not implemented yet");
}

enum tpx_code pol_workload_validate(const struct pol_workload *wl, const struct topo_cluster *c,
                                    struct tpx_err *err)
{
    (void)wl;
    (void)c;
    return tpx_err_set(err, TPX_ENOTSUP, "workload: not implemented yet");
}

struct pol_ledger *pol_ledger_new(const struct topo_cluster *c, struct tpx_err *err)
{
    (void)c;
    tpx_err_set(err, TPX_ENOTSUP, "ledger: not implemented yet");
    return NULL;
}

void pol_ledger_free(struct pol_ledger *l)
{
    (void)l;
}

const struct topo_cluster *pol_ledger_cluster(const struct pol_ledger *l)
{
    (void)l;
    return NULL;
}

struct pol_ledger *pol_ledger_rebase(const struct pol_ledger *l, const struct topo_cluster *c,
                                     struct tpx_err *err)
{
    (void)l;
    (void)c;
    tpx_err_set(err, TPX_ENOTSUP, "ledger: not implemented yet");
    return NULL;
}

enum tpx_code pol_ledger_use(struct pol_ledger *l, size_t node, int accel, struct tpx_err *err)
{
    (void)l;
    (void)node;
    (void)accel;
    return tpx_err_set(err, TPX_ENOTSUP, "ledger: not implemented yet");
}

size_t pol_ledger_expire(struct pol_ledger *l, time_t now)
{
    (void)l;
    (void)now;
    return 0;
}

bool pol_ledger_forget_pod(struct pol_ledger *l, const char *uid)
{
    (void)l;
    (void)uid;
    return false;
}

unsigned pol_ledger_node_free(const struct pol_ledger *l, size_t node)
{
    (void)l;
    (void)node;
    return 0;
}

void pol_ledger_racks(const struct pol_ledger *l, struct pol_rack_summary *out)
{
    (void)l;
    (void)out;
}

size_t pol_ledger_group_count(const struct pol_ledger *l)
{
    (void)l;
    return 0;
}

void pol_ledger_groups(const struct pol_ledger *l, struct pol_group_summary *out)
{
    (void)l;
    (void)out;
}

enum tpx_code pol_filter(const struct pol_ledger *l, const struct pol_workload *wl,
                         const size_t *cand, size_t n, time_t now, struct pol_filter_result *res,
                         struct tpx_err *err)
{
    (void)l;
    (void)wl;
    (void)cand;
    (void)n;
    (void)now;
    (void)res;
    return tpx_err_set(err, TPX_ENOTSUP, "filter: not implemented yet");
}

void pol_filter_result_release(struct pol_filter_result *res)
{
    (void)res;
}

enum tpx_code pol_score(const struct pol_ledger *l, const struct pol_workload *wl,
                        const size_t *cand, size_t n, time_t now, int *scores, struct tpx_err *err)
{
    (void)l;
    (void)wl;
    (void)cand;
    (void)n;
    (void)now;
    (void)scores;
    return tpx_err_set(err, TPX_ENOTSUP, "score: not implemented yet");
}

enum tpx_code pol_commit(struct pol_ledger *l, const struct pol_workload *wl, const char *uid,
                         const char *name, size_t node, time_t now, unsigned ttl_s,
                         struct pol_placement *out, struct tpx_err *err)
{
    (void)l;
    (void)wl;
    (void)uid;
    (void)name;
    (void)node;
    (void)now;
    (void)ttl_s;
    (void)out;
    return tpx_err_set(err, TPX_ENOTSUP, "commit: not implemented yet");
}

enum tpx_code pol_plan(struct pol_ledger *l, const struct pol_job *jobs, size_t njobs, time_t now,
                       struct pol_plan_result *out, struct tpx_err *err)
{
    (void)l;
    (void)jobs;
    (void)njobs;
    (void)now;
    (void)out;
    return tpx_err_set(err, TPX_ENOTSUP, "plan: not implemented yet");
}

void pol_plan_result_release(struct pol_plan_result *r)
{
    (void)r;
}
