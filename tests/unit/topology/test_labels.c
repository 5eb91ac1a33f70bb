/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/topology/test_labels.c - the label precedence table of DESIGN.md (every key, first
 * present wins, explain), resource quantities, hints, malformed values, and hygiene warnings. */
#include "topology/labels.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const struct topo_kv gpu8[] = {{"nvidia.com/gpu", "8"}};

static enum tpx_code decode(const struct topo_kv *labels, size_t n, struct topo_node_info *out,
                            struct topo_label_explain *ex, struct tpx_err *err)
{
    out->name = "node";
    return topo_labels_decode(NULL, labels, n, gpu8, 1, out, ex, err);
}

/* Each key of the table on its own is read into its level, and explain names it. */
Test(topo_labels, every_key_of_the_table_is_read)
{
    static const struct {
        const char *key;
        enum topo_level level;
    } cases[] = {
        {"topox.io/nvlink-domain", TOPO_LEVEL_DOMAIN},
        {"nvidia.com/gpu.clique", TOPO_LEVEL_DOMAIN},
        {"accelerator.topograph.run/domain", TOPO_LEVEL_DOMAIN},
        {"network.topology.nvidia.com/accelerator", TOPO_LEVEL_DOMAIN},
        {"ds.coreweave.com/nvlink.domain", TOPO_LEVEL_DOMAIN},
        {"topology.k8s.aws/ultraserver-id", TOPO_LEVEL_DOMAIN},
        {"topox.io/rack", TOPO_LEVEL_RACK},
        {"fabric.topograph.run/tier-0", TOPO_LEVEL_RACK},
        {"network.topology.nvidia.com/leaf", TOPO_LEVEL_RACK},
        {"topology.k8s.aws/network-node-layer-3", TOPO_LEVEL_RACK},
        {"cloud.google.com/gce-topology-subblock", TOPO_LEVEL_RACK},
        {"oci.oraclecloud.com/host.rack_id", TOPO_LEVEL_RACK},
        {"volcano.sh/tor", TOPO_LEVEL_RACK},
        {"topox.io/block", TOPO_LEVEL_BLOCK},
        {"fabric.topograph.run/tier-1", TOPO_LEVEL_BLOCK},
        {"network.topology.nvidia.com/spine", TOPO_LEVEL_BLOCK},
        {"topology.k8s.aws/network-node-layer-2", TOPO_LEVEL_BLOCK},
        {"cloud.google.com/gce-topology-block", TOPO_LEVEL_BLOCK},
        {"oci.oraclecloud.com/host.network_block_id", TOPO_LEVEL_BLOCK},
        {"topology.kubernetes.io/zone", TOPO_LEVEL_ZONE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct topo_kv kv[] = {{"kubernetes.io/hostname", "node"}, {cases[i].key, "v1"}};
        struct topo_node_info in;
        struct topo_label_explain ex;
        struct tpx_err err = TPX_ERR_INIT;
        const char *got[TOPO_LEVEL_COUNT];

        cr_assert_eq(decode(kv, 2, &in, &ex, &err), TPX_OK, "%s", err.msg);
        got[TOPO_LEVEL_DOMAIN] = in.domain;
        got[TOPO_LEVEL_RACK] = in.rack;
        got[TOPO_LEVEL_BLOCK] = in.block;
        got[TOPO_LEVEL_ZONE] = in.zone;
        for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
            if (lv == (int)cases[i].level) {
                cr_expect_str_eq(got[lv], "v1", "%s", cases[i].key);
                cr_expect_str_eq(ex.key[lv], cases[i].key);
            } else {
                cr_expect_null(got[lv], "%s leaked into %s", cases[i].key,
                               topo_level_name((enum topo_level)lv));
                cr_expect_null(ex.key[lv]);
            }
        }
    }
}

/* With every key of a level present, the first of the table wins; drop it and the next wins. */
Test(topo_labels, first_present_key_wins_in_table_order)
{
    const struct topo_label_config *cfg = topo_label_config_default();

    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        size_t nk = cfg->nkeys[lv];
        for (size_t skip = 0; skip < nk; skip++) {
            struct topo_kv kv[16];
            char vals[16][32];
            size_t n = 0;
            struct topo_node_info in;
            struct topo_label_explain ex;
            struct tpx_err err = TPX_ERR_INIT;
            const char *got;

            /* present in reverse order, the first `skip` keys left out */
            for (size_t k = nk; k-- > skip;) {
                snprintf(vals[n], sizeof(vals[n]), "val%zu", k);
                kv[n] = (struct topo_kv){cfg->keys[lv][k], vals[n]};
                n++;
            }
            cr_assert_eq(decode(kv, n, &in, &ex, &err), TPX_OK);
            got = lv == TOPO_LEVEL_DOMAIN  ? in.domain
                  : lv == TOPO_LEVEL_RACK  ? in.rack
                  : lv == TOPO_LEVEL_BLOCK ? in.block
                                           : in.zone;
            char want[32];
            snprintf(want, sizeof(want), "val%zu", skip);
            cr_expect_str_eq(got, want, "level %d skip %zu", lv, skip);
            cr_expect_str_eq(ex.key[lv], cfg->keys[lv][skip]);
        }
    }
}

Test(topo_labels, empty_values_count_as_absent)
{
    struct topo_kv kv[] = {{"topox.io/rack", ""}, {"volcano.sh/tor", "tor-7"}};
    struct topo_node_info in;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(decode(kv, 2, &in, NULL, &err), TPX_OK);
    cr_expect_str_eq(in.rack, "tor-7");
}

Test(topo_labels, hints_resources_and_fabric)
{
    struct topo_kv kv[] = {{"topox.io/interconnect", "hccs"},
                           {"topox.io/domain-size", "8"},
                           {"topox.io/domains-per-node", "2"}};
    struct topo_kv alloc[] = {
        {"cpu", "190"}, {"nvidia.com/gpu", "0"}, {"huawei.com/Ascend910", "16"}};
    struct topo_node_info in = {.name = "npu-1"};
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(topo_labels_decode(NULL, kv, 3, alloc, 3, &in, NULL, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(in.name, "npu-1");
    cr_expect_str_eq(in.resource, "huawei.com/Ascend910");
    cr_expect_eq(in.accel_alloc, 16);
    cr_expect_eq(in.fabric, TOPO_FABRIC_HCCS);
    cr_expect_eq(in.domain_size, 8);
    cr_expect_eq(in.domains_per_node, 2);
}

Test(topo_labels, fabric_is_guessed_from_gfd_product_and_clique)
{
    struct topo_kv sxm[] = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
    struct topo_kv pcie[] = {{"nvidia.com/gpu.product", "NVIDIA-A100-PCIE-40GB"}};
    struct topo_kv clique[] = {{"nvidia.com/gpu.clique", "7b3f.1"}};
    struct topo_node_info in;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(decode(sxm, 1, &in, NULL, &err), TPX_OK);
    cr_expect_eq(in.fabric, TOPO_FABRIC_NVSWITCH);
    cr_assert_eq(decode(pcie, 1, &in, NULL, &err), TPX_OK);
    cr_expect_eq(in.fabric, TOPO_FABRIC_PCIE);
    cr_assert_eq(decode(clique, 1, &in, NULL, &err), TPX_OK);
    cr_expect_eq(in.fabric, TOPO_FABRIC_NVLINK);
    cr_assert_eq(decode(NULL, 0, &in, NULL, &err), TPX_OK);
    cr_expect_eq(in.fabric, TOPO_FABRIC_UNKNOWN);
}

Test(topo_labels, malformed_values_name_the_label)
{
    static const struct {
        const char *key, *value, *want;
    } cases[] = {
        {"topox.io/domain-size", "-8", "'topox.io/domain-size'"},
        {"topox.io/domain-size", "0", "'topox.io/domain-size'"},
        {"topox.io/domains-per-node", "two", "'topox.io/domains-per-node'"},
        {"topox.io/interconnect", "token-ring", "'topox.io/interconnect'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct topo_kv kv[] = {{cases[i].key, cases[i].value}};
        struct topo_node_info in;
        struct tpx_err err = TPX_ERR_INIT;
        cr_expect_eq(decode(kv, 1, &in, NULL, &err), TPX_EINVAL, "%s", cases[i].value);
        cr_expect(strstr(err.msg, cases[i].want) != NULL, "%s", err.msg);
    }
    {
        struct topo_kv alloc[] = {{"nvidia.com/gpu", "eight"}};
        struct topo_node_info in = {0};
        struct tpx_err err = TPX_ERR_INIT;
        cr_expect_eq(topo_labels_decode(NULL, NULL, 0, alloc, 1, &in, NULL, &err), TPX_EINVAL);
        cr_expect(strstr(err.msg, "nvidia.com/gpu") != NULL, "%s", err.msg);
    }
}

Test(topo_labels, quantities)
{
    unsigned v = 99;

    cr_expect(topo_quantity_whole("8", &v) && v == 8);
    cr_expect(topo_quantity_whole("8000m", &v) && v == 8);
    cr_expect(topo_quantity_whole("2k", &v) && v == 2000);
    cr_expect_not(topo_quantity_whole("500m", &v));
    cr_expect_not(topo_quantity_whole("-1", &v));
    cr_expect_not(topo_quantity_whole("", &v));
    cr_expect_not(topo_quantity_whole("8Gi", &v));
    cr_expect_not(topo_quantity_whole("99999999999", &v));
}

Test(topo_labels, custom_config_replaces_a_level)
{
    static const char *const racks[] = {"example.com/row"};
    struct topo_label_config cfg = *topo_label_config_default();
    struct topo_kv kv[] = {{"topox.io/rack", "r1"}, {"example.com/row", "row-9"}};
    struct topo_node_info in = {0};
    struct topo_label_explain ex;
    struct tpx_err err = TPX_ERR_INIT;

    cfg.keys[TOPO_LEVEL_RACK] = racks;
    cfg.nkeys[TOPO_LEVEL_RACK] = 1;
    cr_assert_eq(topo_labels_decode(&cfg, kv, 2, gpu8, 1, &in, &ex, &err), TPX_OK);
    cr_expect_str_eq(in.rack, "row-9");
    cr_expect_str_eq(ex.key[TOPO_LEVEL_RACK], "example.com/row");
}

static bool has_warning(char **w, size_t n, const char *needle)
{
    for (size_t i = 0; i < n; i++) {
        if (strstr(w[i], needle))
            return true;
    }
    return false;
}

Test(topo_labels, hygiene_reports_each_problem)
{
    const struct topo_node_info nodes[] = {
        {.name = "a1", .rack = "r1", .block = "b1", .zone = "z", .accel_alloc = 8},
        {.name = "a2", .rack = "r1", .block = "b2", .zone = "z", .accel_alloc = 8},
        {.name = "c1",
         .rack = "r2",
         .block = "b1",
         .zone = "z",
         .domain = "clique-1",
         .accel_alloc = 4},
        {.name = "c2",
         .rack = "r3",
         .block = "b1",
         .zone = "z",
         .domain = "clique-1",
         .accel_alloc = 4},
        {.name = "norack", .block = "b1", .zone = "z", .accel_alloc = 8, .domain_size = 4},
    };
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    char **w;
    size_t n;

    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(topo_cluster_add(c, &nodes[i], &err), TPX_OK);
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK);
    n = topo_labels_hygiene(c, &w);
    cr_expect(has_warning(w, n, "rack 'r1' is labelled under blocks 'b1'"));
    cr_expect(has_warning(w, n, "interconnect domain 'clique-1' spans racks"));
    cr_expect(has_warning(w, n, "rack label missing on 1 of 5 nodes (e.g. 'norack')"));
    cr_expect(has_warning(w, n, "domain label missing on 3 of 5 nodes"));
    cr_expect(has_warning(w, n, "node 'norack': domain size 4 x 1 domains = 4"));
    cr_expect_eq(n, 5);
    topo_warnings_free(w, n);
    topo_cluster_free(c);
}

Test(topo_labels, hygiene_clean_cluster_has_no_warnings)
{
    const struct topo_node_info nodes[] = {
        {.name = "a1", .rack = "r1", .block = "b1", .accel_alloc = 8, .domain_size = 8},
        {.name = "a2", .rack = "r2", .block = "b1", .accel_alloc = 8, .domain_size = 8},
    };
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    char **w = (char **)1;

    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(topo_cluster_add(c, &nodes[i], &err), TPX_OK);
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK);
    cr_expect_eq(topo_labels_hygiene(c, &w), 0);
    cr_expect_null(w);
    topo_cluster_free(c);
}

/* Labels copied from tests/fixtures/nodes/gfd-readme-kubectl-get-nodes-a100-dgx2h.fragment.yaml
 * and the zone of tests/fixtures/nodes/k8s-apimachinery-testdata-gke-node-full.yaml. */
Test(topo_labels, real_gfd_and_gke_labels)
{
    const struct topo_kv gfd[] = {
        {"nvidia.com/cuda.driver.major", "455"},
        {"nvidia.com/cuda.driver.minor", "06"},
        {"nvidia.com/cuda.driver.rev", ""},
        {"nvidia.com/gpu.count", "1"},
        {"nvidia.com/gpu.family", "ampere"},
        {"nvidia.com/gpu.machine", "NVIDIA DGX-2H"},
        {"nvidia.com/gpu.product", "A100-SXM4-40GB"},
        {"failure-domain.beta.kubernetes.io/zone", "us-central1-b"},
        {"topology.kubernetes.io/region", "us-central1"},
        {"topology.kubernetes.io/zone", "us-central1-b"},
    };
    const struct topo_kv alloc[] = {{"nvidia.com/gpu", "1"}};
    struct topo_node_info in = {.name = "dgx"};
    struct topo_label_explain ex;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(topo_labels_decode(NULL, gfd, 10, alloc, 1, &in, &ex, &err), TPX_OK);
    cr_expect_str_eq(in.zone, "us-central1-b");
    cr_expect_str_eq(ex.key[TOPO_LEVEL_ZONE], "topology.kubernetes.io/zone");
    cr_expect_null(in.rack);
    cr_expect_null(ex.key[TOPO_LEVEL_RACK]);
    cr_expect_eq(in.accel_alloc, 1);
    cr_expect_eq(in.fabric, TOPO_FABRIC_NVLINK, "SXM part, fewer than 8 GPUs");
}
