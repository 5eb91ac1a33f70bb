/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_manifest.c - libFuzzer target for the path `topox plan -f` takes: bytes -> YAML/JSON
 * documents -> manifest expansion -> pod facts -> pol_workload_infer, and, for small jobs, a
 * pol_plan() on a small synthetic cluster. Any crash, leak or sanitizer report is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "objects/manifest.h"
#include "objects/yamljson.h"
#include "policy/policy.h"
#include "topology/synthetic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct topo_cluster *cluster;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct obj_yaml_docs docs = {0};
    struct obj_manifest m;
    struct tpx_err err = TPX_ERR_INIT;

    if (!cluster) {
        cluster = topo_cluster_synthetic("racks=2,nodes-per-rack=2,gpus-per-node=8", &err);
        if (!cluster)
            return 0;
        tpx_err_clear(&err);
    }
    if (obj_yaml_parse((const char *)data, size, "fuzz.yaml", &docs, &err) != TPX_OK)
        return 0;
    obj_manifest_init(&m);
    if (obj_manifest_add_docs(&m, &docs, "fuzz.yaml", &err) == TPX_OK &&
        obj_manifest_finish(&m, &err) == TPX_OK) {
        struct wl_engine_info ei;

        for (size_t i = 0; i < m.npods; i++) {
            obj_manifest_engine_info(&m, i, &ei);
            tpx_err_clear(&err);
            (void)pol_workload_validate(&m.wl[i], cluster, &err);
        }
        if (m.npods <= 64) {
            struct pol_ledger *l = pol_ledger_new(cluster, &err);
            struct pol_plan_result res = {0};

            if (l && pol_plan(l, m.pol_jobs, m.njobs, (time_t)1700000000, &res, &err) == TPX_OK)
                pol_plan_result_release(&res);
            pol_ledger_free(l);
        }
    }
    obj_manifest_release(&m);
    return 0;
}
