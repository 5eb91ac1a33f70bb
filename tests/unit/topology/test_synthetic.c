/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/topology/test_synthetic.c - clusters from a spec: names, domains, labels, errors. */
#include "topology/synthetic.h"

#include <criterion/criterion.h>
#include <string.h>

static const char *label(const struct topo_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    }
    return NULL;
}

Test(topo_synthetic, example_is_4_racks_of_4_hgx_nodes)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err);
    enum topo_fabric f;

    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_eq(topo_cluster_node_count(c), 16);
    cr_expect_eq(topo_cluster_rack_count(c), 4);
    cr_expect_str_eq(topo_cluster_node(c, 0)->name, "r01-n01");
    cr_expect_str_eq(topo_cluster_node(c, 15)->name, "r04-n04");
    cr_expect_str_eq(topo_cluster_rack_name(c, 3), "r04");
    cr_expect_str_eq(topo_cluster_node(c, 0)->resource, "nvidia.com/gpu");
    cr_expect_eq(topo_cluster_largest_domain(c, &f, NULL), 8);
    cr_expect_eq(f, TOPO_FABRIC_NVSWITCH);
    topo_cluster_free(c);
}

Test(topo_synthetic, full_spec_with_blocks_and_cliques)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic(
        "racks=4,nodes-per-rack=18,gpus-per-node=4,interconnect=nvlink,resource=nvidia.com/gpu,"
        "domain-nodes=9,blocks=2",
        &err);
    struct topo_kv kv[16];
    char storage[16][64];
    size_t n;
    bool multi;

    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_eq(topo_cluster_node_count(c), 72);
    cr_expect_eq(topo_cluster_domain_count(c), 8);
    cr_expect_eq(topo_cluster_largest_domain(c, NULL, &multi), 36);
    cr_expect(multi);
    cr_expect_str_eq(topo_cluster_rack_name(c, 0), "b1/r01");
    cr_expect_str_eq(topo_cluster_rack_name(c, 3), "b2/r04");
    cr_expect_str_eq(topo_cluster_node(c, 9)->domain, "clique-2");
    n = topo_synthetic_node_labels(c, 9, kv, storage, 16);
    cr_expect_eq(n, 6);
    cr_expect_str_eq(label(kv, n, "topox.io/rack"), "r01");
    cr_expect_str_eq(label(kv, n, "topox.io/block"), "b1");
    cr_expect_str_eq(label(kv, n, "nvidia.com/gpu.clique"), "clique-2");
    cr_expect_str_eq(label(kv, n, "topox.io/interconnect"), "nvlink");
    cr_expect_str_eq(label(kv, n, "topox.io/domain-size"), "4");
    cr_expect_str_eq(label(kv, n, "topox.io/domains-per-node"), "1");
    cr_expect_eq(topo_synthetic_node_labels(c, 9, kv, storage, 2), 2);
    topo_cluster_free(c);
}

Test(topo_synthetic, npu_host_with_two_domains)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic(
        "racks=1,nodes-per-rack=2,gpus-per-node=16,domains-per-node=2,interconnect=hccs,"
        "resource=huawei.com/Ascend910",
        &err);
    size_t nd;

    cr_assert_not_null(c, "%s", err.msg);
    topo_cluster_node_domains(c, 1, &nd);
    cr_expect_eq(nd, 2);
    cr_expect_eq(topo_cluster_domain_count(c), 4);
    cr_expect_eq(topo_cluster_largest_domain(c, NULL, NULL), 8);
    topo_cluster_free(c);
}

Test(topo_synthetic, zero_padding_follows_the_largest_number)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("racks=125,nodes-per-rack=80", &err);

    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_str_eq(topo_cluster_node(c, 0)->name, "r001-n01");
    cr_expect_eq(topo_cluster_node_count(c), 10000);
    topo_cluster_free(c);
}

Test(topo_synthetic, bad_specs_name_the_key)
{
    static const struct {
        const char *spec;
        const char *want;
    } cases[] = {
        {"racks=4,colour=blue", "unknown key 'colour'"},
        {"racks=four", "key 'racks'"},
        {"interconnect=carrier-pigeon", "key 'interconnect'"},
        {"racks=0", "at least 1"},
        {"gpus-per-node=6,domains-per-node=4", "not divisible"},
        {"racks", "not key=value"},
        {"racks=2,blocks=3", "blocks 3"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        struct topo_cluster *c = topo_cluster_synthetic(cases[i].spec, &err);
        cr_expect_null(c, "%s", cases[i].spec);
        cr_expect_eq(err.code, TPX_EINVAL);
        cr_expect(strstr(err.msg, cases[i].want) != NULL, "%s: %s", cases[i].spec, err.msg);
        topo_cluster_free(c);
    }
}

Test(topo_synthetic, zones_used_and_level_names)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("racks=4,zones=2,used=3", &err);
    struct topo_kv kv[8];
    char storage[8][64];
    size_t n;

    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_eq(topo_cluster_zone_count(c), 2);
    cr_expect_str_eq(topo_cluster_node(c, 1)->zone, "zone-b");
    cr_expect_eq(topo_cluster_node(c, 1)->accel_used, 3);
    n = topo_synthetic_node_labels(c, 1, kv, storage, 8);
    cr_expect_str_eq(label(kv, n, "topology.kubernetes.io/zone"), "zone-b");
    cr_expect_null(label(kv, n, "topox.io/block"));
    cr_expect_null(label(kv, n, "nvidia.com/gpu.clique"));
    topo_cluster_free(c);
}
