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

static const char *level_value(const struct topo_node_info *in, int lv)
{
    return lv == TOPO_LEVEL_DOMAIN  ? in->domain
           : lv == TOPO_LEVEL_RACK  ? in->rack
           : lv == TOPO_LEVEL_BLOCK ? in->block
                                    : in->zone;
}

/* The finest level whose list names key (a key listed twice serves the finer level first). */
static int first_level_of(const struct topo_label_config *cfg, const char *key)
{
    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        for (size_t k = 0; k < cfg->nkeys[lv]; k++) {
            if (strcmp(cfg->keys[lv][k], key) == 0)
                return lv;
        }
    }
    return -1;
}

/* Each key of the table on its own is read into its (finest) level, and explain names it. */
Test(topo_labels, every_key_of_the_table_is_read)
{
    const struct topo_label_config *cfg = topo_label_config_default();

    for (int level = 0; level < TOPO_LEVEL_COUNT; level++) {
        for (size_t k = 0; k < cfg->nkeys[level]; k++) {
            const char *key = cfg->keys[level][k];
            int want = first_level_of(cfg, key);
            struct topo_kv kv[] = {{"kubernetes.io/hostname", "node"}, {key, "v1"}};
            struct topo_node_info in;
            struct topo_label_explain ex;
            struct tpx_err err = TPX_ERR_INIT;

            cr_assert_eq(decode(kv, 2, &in, &ex, &err), TPX_OK, "%s", err.msg);
            for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
                if (lv == want) {
                    cr_expect_str_eq(level_value(&in, lv), "v1", "%s", key);
                    cr_expect_str_eq(ex.key[lv], key);
                } else if (lv == TOPO_LEVEL_RACK && strcmp(key, TOPO_LABEL_CLIQUE) == 0) {
                    /* the clique alone: its ClusterUUID is the rack, cut by the model */
                    cr_expect_null(in.rack);
                    cr_expect(in.rack_from_domain);
                    cr_expect_str_eq(ex.key[lv], key);
                } else {
                    cr_expect_null(level_value(&in, lv), "%s leaked into %s", key,
                                   topo_level_name((enum topo_level)lv));
                    cr_expect_null(ex.key[lv], "%s", key);
                }
            }
        }
    }
}

/* With every key of a level present, the first of the table wins (skipping a key a finer level
 * takes); drop it and the next wins. */
Test(topo_labels, first_present_key_wins_in_table_order)
{
    const struct topo_label_config *cfg = topo_label_config_default();

    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        size_t nk = cfg->nkeys[lv];
        for (size_t skip = 0; skip < nk; skip++) {
            struct topo_kv kv[32];
            char vals[32][32];
            size_t n = 0, want_k = skip;
            struct topo_node_info in;
            struct topo_label_explain ex;
            struct tpx_err err = TPX_ERR_INIT;
            char want[32];

            cr_assert_lt(nk, 32);
            /* present in reverse order, the first `skip` keys left out */
            for (size_t k = nk; k-- > skip;) {
                snprintf(vals[n], sizeof(vals[n]), "val%zu", k);
                kv[n] = (struct topo_kv){cfg->keys[lv][k], vals[n]};
                n++;
            }
            while (want_k < nk && first_level_of(cfg, cfg->keys[lv][want_k]) != lv)
                want_k++;
            cr_assert_eq(decode(kv, n, &in, &ex, &err), TPX_OK);
            if (want_k == nk) {
                cr_expect_null(level_value(&in, lv), "level %d skip %zu", lv, skip);
                continue;
            }
            snprintf(want, sizeof(want), "val%zu", want_k);
            cr_expect_str_eq(level_value(&in, lv), want, "level %d skip %zu", lv, skip);
            cr_expect_str_eq(ex.key[lv], cfg->keys[lv][want_k]);
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

/* topox.io/rdma-nics: a count (0 included) is known; absent or not a count is unknown, never 0. */
Test(topo_labels, rdma_nics_known_only_when_the_label_says_a_count)
{
    static const struct {
        const char *v; /* NULL: no label */
        bool known;
        unsigned n;
    } cases[] = {{"8", true, 8},  {"0", true, 0},   {NULL, false, 0},   {"", false, 0},
                 {"x", false, 0}, {"-1", false, 0}, {"99999", false, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct topo_kv kv[] = {{"topox.io/rdma-nics", cases[i].v}};
        struct topo_node_info in;
        struct tpx_err err = TPX_ERR_INIT;

        cr_assert_eq(decode(kv, cases[i].v ? 1 : 0, &in, NULL, &err), TPX_OK, "%s", err.msg);
        cr_expect_eq(in.rdma_known, cases[i].known, "case %zu", i);
        cr_expect_eq(in.rdma_nics, cases[i].n, "case %zu", i);
    }
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

Test(topo_labels, quantities_past_32_bits_and_past_the_cap_are_refused)
{
    unsigned v = 99;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_node_info in = {0};
    struct topo_kv big[] = {{"nvidia.com/gpu", "4294967295"}};
    struct topo_kv over[] = {{"nvidia.com/gpu", "4097"}};
    struct topo_kv cap[] = {{"nvidia.com/gpu", "4096"}};
    struct topo_kv dsize[] = {{"topox.io/domain-size", "4294967295"}};

    cr_expect_not(topo_quantity_whole("4294967296", &v));
    cr_expect_not(topo_quantity_whole("4294968k", &v));
    cr_expect_not(topo_quantity_whole("18446744073709551617", &v));
    cr_expect_not(topo_quantity_whole("184467440737095516170000000", &v));
    cr_expect(topo_quantity_whole("4294967295000m", &v) && v == 4294967295u);
    /* 2^32-1 parses as a number but is no node's count */
    cr_expect_eq(topo_labels_decode(NULL, NULL, 0, big, 1, &in, NULL, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "4096"), "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(topo_labels_decode(NULL, NULL, 0, over, 1, &in, NULL, &err), TPX_EINVAL);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(topo_labels_decode(NULL, dsize, 1, cap, 1, &in, NULL, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "topox.io/domain-size"), "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(topo_labels_decode(NULL, NULL, 0, cap, 1, &in, NULL, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(in.accel_alloc, TOPO_ACCEL_MAX);
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

/* --- vendors: real label sets (tests/fixtures/nodes/, sources in tests/fixtures/SOURCES.md) --- */

struct want_levels {
    const char *domain, *rack, *block, *zone;
    const char *domain_key, *rack_key, *block_key;
};

#define NKV(a) (sizeof(a) / sizeof((a)[0]))

static void expect_levels(const struct topo_kv *kv, size_t n, const struct want_levels *w,
                          const char *what)
{
    struct topo_node_info in;
    struct topo_label_explain ex;
    struct tpx_err err = TPX_ERR_INIT;
    const char *want[TOPO_LEVEL_COUNT] = {w->domain, w->rack, w->block, w->zone};
    const char *want_key[3] = {w->domain_key, w->rack_key, w->block_key};

    cr_assert_eq(decode(kv, n, &in, &ex, &err), TPX_OK, "%s: %s", what, err.msg);
    for (int lv = 0; lv < TOPO_LEVEL_COUNT; lv++) {
        if (want[lv])
            cr_expect_str_eq(level_value(&in, lv), want[lv], "%s: %s", what,
                             topo_level_name((enum topo_level)lv));
        else
            cr_expect_null(level_value(&in, lv), "%s: %s", what,
                           topo_level_name((enum topo_level)lv));
        if (lv < 3 && want_key[lv])
            cr_expect_str_eq(ex.key[lv], want_key[lv], "%s: %s key", what,
                             topo_level_name((enum topo_level)lv));
    }
}

/* topograph's three label generations (and the two before them), from its own tests and docs:
 * tier 0 / leaf is the rack, tier 1 / spine the block; "block" in the oldest generations is the
 * rack-level switch, not a block. Hashed values (x + 16 hex) are ids like any other. */
Test(topo_labels, topograph_every_generation)
{
    /* docs/engines/k8s.md (v1.0.0) */
    const struct topo_kv v1[] = {{"accelerator.topograph.run/domain", "nvl1"},
                                 {"accelerator.topograph.run/sub-domain", "nvl1.rack01"},
                                 {"fabric.topograph.run/tier-0", "s1"},
                                 {"fabric.topograph.run/tier-1", "s2"},
                                 {"fabric.topograph.run/tier-2", "s3"}};
    /* pkg/engines/k8s/labeler_test.go, tier-N generation */
    const struct topo_kv tier[] = {{"network.topology.nvidia.com/tier-0", "xf946c4acef2d5939"},
                                   {"network.topology.nvidia.com/tier-1", "S1"}};
    /* leaf/spine/core generation */
    const struct topo_kv leaf[] = {{"network.topology.nvidia.com/leaf", "S2"},
                                   {"network.topology.nvidia.com/spine", "S1"}};
    /* accelerator/block/spine/datacenter under network.topology.nvidia.com/ */
    const struct topo_kv nvblock[] = {{"network.topology.nvidia.com/accelerator", "B1"},
                                      {"network.topology.nvidia.com/block", "S2"},
                                      {"network.topology.nvidia.com/spine", "S1"},
                                      {"network.topology.nvidia.com/datacenter", "ibRoot2"}};
    /* the same under network.topology.kubernetes.io/ (the oldest docs/k8s.md) */
    const struct topo_kv k8sio[] = {{"network.topology.kubernetes.io/accelerator", "B3"},
                                    {"network.topology.kubernetes.io/block", "S5"},
                                    {"network.topology.kubernetes.io/spine", "S4"},
                                    {"network.topology.kubernetes.io/datacenter", "ibRoot1"}};
    /* the first labeler: network-level-1 is the nearest switch */
    const struct topo_kv level[] = {{"topology.kubernetes.io/network-level-1", "xf946c4acef2d5939"},
                                    {"topology.kubernetes.io/network-level-2", "S1"}};

    expect_levels(v1, NKV(v1),
                  &(struct want_levels){
                      "nvl1", "nvl1.rack01", "s2", NULL, "accelerator.topograph.run/domain",
                      "accelerator.topograph.run/sub-domain", "fabric.topograph.run/tier-1"},
                  "v1.0.0");
    expect_levels(
        v1 + 2, 3,
        &(struct want_levels){NULL, "s1", "s2", NULL, NULL, "fabric.topograph.run/tier-0", NULL},
        "v1.0.0 without accelerator labels");
    expect_levels(tier, NKV(tier),
                  &(struct want_levels){NULL, "xf946c4acef2d5939", "S1", NULL, NULL,
                                        "network.topology.nvidia.com/tier-0",
                                        "network.topology.nvidia.com/tier-1"},
                  "tier-N");
    expect_levels(leaf, NKV(leaf),
                  &(struct want_levels){NULL, "S2", "S1", NULL, NULL,
                                        "network.topology.nvidia.com/leaf",
                                        "network.topology.nvidia.com/spine"},
                  "leaf/spine");
    expect_levels(nvblock, NKV(nvblock),
                  &(struct want_levels){
                      "B1", "S2", "S1", NULL, "network.topology.nvidia.com/accelerator",
                      "network.topology.nvidia.com/block", "network.topology.nvidia.com/spine"},
                  "nvidia.com block/spine");
    expect_levels(k8sio, NKV(k8sio),
                  &(struct want_levels){"B3", "S5", "S4", NULL,
                                        "network.topology.kubernetes.io/accelerator",
                                        "network.topology.kubernetes.io/block",
                                        "network.topology.kubernetes.io/spine"},
                  "kubernetes.io block/spine");
    expect_levels(level, NKV(level),
                  &(struct want_levels){NULL, "xf946c4acef2d5939", "S1", NULL, NULL,
                                        "topology.kubernetes.io/network-level-1",
                                        "topology.kubernetes.io/network-level-2"},
                  "network-level");
}

/* AWS numbers layers from the top: the bottom layer (nearest the instance) is 3 on most instance
 * types and 4 on some. aws-ofi-nccl doc/topology-aware.md for the 3-layer set. */
Test(topo_labels, aws_bottom_layer_is_the_rack)
{
    const struct topo_kv three[] = {
        {"topology.k8s.aws/network-node-layer-1", "nn-1111111111example"},
        {"topology.k8s.aws/network-node-layer-2", "nn-2222222222example"},
        {"topology.k8s.aws/network-node-layer-3", "nn-3333333333example"},
        {"topology.k8s.aws/zone-id", "usw2-az2"},
        {"topology.kubernetes.io/region", "us-west-2"},
        {"topology.kubernetes.io/zone", "us-west-2a"}};
    const struct topo_kv four[] = {
        {"topology.k8s.aws/network-node-layer-1", "nn-1111111111example"},
        {"topology.k8s.aws/network-node-layer-2", "nn-2222222222example"},
        {"topology.k8s.aws/network-node-layer-3", "nn-3333333333example"},
        {"topology.k8s.aws/network-node-layer-4", "nn-4444444444example"},
        {"topology.k8s.aws/capacity-block-id", "cbr-01234567"},
        {"topology.k8s.aws/ultraserver-id", "us-0123456789"}};

    expect_levels(three, NKV(three),
                  &(struct want_levels){NULL, "nn-3333333333example", "nn-2222222222example",
                                        "us-west-2a", NULL, "topology.k8s.aws/network-node-layer-3",
                                        "topology.k8s.aws/network-node-layer-2"},
                  "3 layers");
    /* capacity-block-id is a reservation, not a fabric: never a level */
    expect_levels(four, NKV(four),
                  &(struct want_levels){
                      "us-0123456789", "nn-4444444444example", "nn-3333333333example", NULL,
                      "topology.k8s.aws/ultraserver-id", "topology.k8s.aws/network-node-layer-4",
                      "topology.k8s.aws/network-node-layer-3"},
                  "4 layers");
}

/* GCP (Kubernetes blog / Kueue topology example), OCI (kubernetes-sigs/kueue#5039 `kubectl
 * describe node`), CoreWeave (marin lib/iris/scripts/gpu_gang_smoke.py, mock values on the real
 * keys), Crusoe (topograph pkg/providers/crusoe/instance_topology_test.go): a rack label (pod.id)
 * keeps the clique from standing in for the rack. */
Test(topo_labels, clouds_rack_block_zone)
{
    const struct topo_kv gcp[] = {{"cloud.google.com/gce-topology-block", "block-1"},
                                  {"cloud.google.com/gce-topology-subblock", "subblock-1"},
                                  {"cloud.google.com/gce-topology-host", "host-1"},
                                  {"kubernetes.io/hostname", "node-1"}};
    const struct topo_kv oci[] = {{"failure-domain.beta.kubernetes.io/zone", "US-ASHBURN-AD-1"},
                                  {"oci.oraclecloud.com/fault-domain", "FAULT-DOMAIN-2"},
                                  {"oci.oraclecloud.com/host.id", "320e1851414"},
                                  {"oci.oraclecloud.com/host.rack_id", "1163795a865"},
                                  {"oci.oraclecloud.com/rdma.local_block_id", "5tjxbt5s6ua"},
                                  {"oci.oraclecloud.com/rdma.network_block_id", "7xmzl4p4wba"},
                                  {"topology.kubernetes.io/region", "iad"},
                                  {"topology.kubernetes.io/zone", "US-ASHBURN-AD-1"},
                                  {"topology.oci.com/local-block", "l1"},
                                  {"topology.oci.com/network-block", "n1"}};
    const struct topo_kv cw[] = {{"backend.coreweave.cloud/flavor", "infiniband"},
                                 {"backend.coreweave.cloud/fabric", "fabric-0"},
                                 {"backend.coreweave.cloud/superpod", "superpod-0"},
                                 {"backend.coreweave.cloud/leafgroup", "leafgroup-0"},
                                 {"ds.coreweave.com/nvlink.domain", "nvl-0"}};
    const struct topo_kv crusoe[] = {
        {"crusoe.ai/ib.partition.id", "0cf47922-9f9e-4a2e-b187-5c51697e7739"},
        {"crusoe.ai/pod.id", "9b1c7d54-3e08-4a92-8f61-2d5a4c7b0e13"},
        {TOPO_LABEL_CLIQUE, "29d9a0b8-948d-4a61-8b9e-fbbbf06c521b.32766"}};

    expect_levels(gcp, NKV(gcp),
                  &(struct want_levels){NULL, "subblock-1", "block-1", NULL, NULL,
                                        "cloud.google.com/gce-topology-subblock",
                                        "cloud.google.com/gce-topology-block"},
                  "gcp");
    expect_levels(oci, NKV(oci),
                  &(struct want_levels){NULL, "1163795a865", "7xmzl4p4wba", "US-ASHBURN-AD-1", NULL,
                                        "oci.oraclecloud.com/host.rack_id",
                                        "oci.oraclecloud.com/rdma.network_block_id"},
                  "oci");
    expect_levels(oci + 4, 2,
                  &(struct want_levels){NULL, "5tjxbt5s6ua", "7xmzl4p4wba", NULL, NULL,
                                        "oci.oraclecloud.com/rdma.local_block_id", NULL},
                  "oci without host.rack_id");
    expect_levels(cw, NKV(cw),
                  &(struct want_levels){
                      "nvl-0", "leafgroup-0", "superpod-0", NULL, "ds.coreweave.com/nvlink.domain",
                      "backend.coreweave.cloud/leafgroup", "backend.coreweave.cloud/superpod"},
                  "coreweave");
    expect_levels(crusoe, NKV(crusoe),
                  &(struct want_levels){"29d9a0b8-948d-4a61-8b9e-fbbbf06c521b.32766",
                                        "9b1c7d54-3e08-4a92-8f61-2d5a4c7b0e13",
                                        "0cf47922-9f9e-4a2e-b187-5c51697e7739", NULL,
                                        TOPO_LABEL_CLIQUE, "crusoe.ai/pod.id",
                                        "crusoe.ai/ib.partition.id"},
                  "crusoe");
}

/* --- GFD cliques --- */

struct labelled {
    const char *name;
    const struct topo_kv *kv;
    size_t n;
};

/* Decode every node (4 GPUs each), add, seal. explain (may be NULL) gets one entry per node. */
static struct topo_cluster *cluster_of(const struct labelled *nodes, size_t n,
                                       struct topo_label_explain *explain)
{
    static const struct topo_kv gpu4[] = {{"nvidia.com/gpu", "4"}};
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);

    cr_assert_not_null(c);
    for (size_t i = 0; i < n; i++) {
        struct topo_node_info in = {.name = nodes[i].name};
        cr_assert_eq(topo_labels_decode(NULL, nodes[i].kv, nodes[i].n, gpu4, 1, &in,
                                        explain ? &explain[i] : NULL, &err),
                     TPX_OK, "%s", err.msg);
        in.name = nodes[i].name;
        cr_assert_eq(topo_cluster_add(c, &in, &err), TPX_OK, "%s", err.msg);
    }
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK, "%s", err.msg);
    return c;
}

/* GFD's format, values from topograph pkg/providers/crusoe/instance_topology_test.go */
#define UUID_A "29d9a0b8-948d-4a61-8b9e-fbbbf06c521b"

/* One NVL72 rack (one ClusterUUID) split into two cliques: two multi-node domains, one rack taken
 * from the ClusterUUID (no rack label), and no "domain spans racks" warning. */
Test(topo_labels, two_cliques_in_one_rack_are_two_domains)
{
    const struct topo_kv a1[] = {{"nvidia.com/gpu.product", "NVIDIA-GB200"},
                                 {TOPO_LABEL_CLIQUE, UUID_A ".32766"}};
    const struct topo_kv a2[] = {{"nvidia.com/gpu.product", "NVIDIA-GB200"},
                                 {TOPO_LABEL_CLIQUE, UUID_A ".32767"}};
    const struct labelled nodes[] = {
        {"gb-0", a1, 2}, {"gb-1", a1, 2}, {"gb-2", a2, 2}, {"gb-3", a2, 2}};
    struct topo_label_explain ex[4];
    struct topo_cluster *c = cluster_of(nodes, 4, ex);
    char **w;
    size_t nw;

    cr_expect_eq(topo_cluster_rack_count(c), 1);
    cr_expect_str_eq(topo_cluster_rack_name(c, 0), UUID_A);
    cr_expect_eq(topo_cluster_domain_count(c), 2);
    cr_expect_neq(topo_cluster_node_domain(c, 0), topo_cluster_node_domain(c, 2));
    cr_expect_eq(topo_cluster_node_domain(c, 0), topo_cluster_node_domain(c, 1));
    cr_expect(topo_cluster_domain_is_multinode(c, topo_cluster_node_domain(c, 0)));
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, 0)), 8);
    cr_expect_str_eq(topo_cluster_domain_name(c, topo_cluster_node_domain(c, 2)), UUID_A ".32767");
    cr_expect_str_eq(ex[0].key[TOPO_LEVEL_RACK], TOPO_LABEL_CLIQUE);
    cr_expect_not_null(topo_labels_explain_note(c, 0, &ex[0]));
    cr_expect(strstr(topo_labels_explain_note(c, 0, &ex[0]), "ClusterUUID") != NULL);
    cr_expect_eq(topo_cluster_node_nvl(c, 0), TOPO_NVL_COMPLETED);
    nw = topo_labels_hygiene(c, &w);
    cr_expect_eq(nw, 0, "%s", nw ? w[0] : "");
    topo_warnings_free(w, nw);
    topo_cluster_free(c);
}

/* A rack label beats the ClusterUUID; two racks (two ClusterUUIDs) stay two racks. */
Test(topo_labels, rack_label_beats_the_cluster_uuid)
{
    const struct topo_kv a[] = {{TOPO_LABEL_CLIQUE, UUID_A ".1"}, {"topox.io/rack", "r9"}};
    const struct topo_kv b[] = {{TOPO_LABEL_CLIQUE, "0f0e0d0c-0b0a-0908-0706-050403020100.1"}};
    const struct labelled nodes[] = {{"a", a, 2}, {"b", b, 1}};
    struct topo_cluster *c = cluster_of(nodes, 2, NULL);

    cr_expect_eq(topo_cluster_rack_count(c), 2);
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, 0)), "r9");
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, 1)),
                     "0f0e0d0c-0b0a-0908-0706-050403020100");
    topo_cluster_free(c);
}

/* A GB200 node without a clique (its fabric is not COMPLETED) is in no multi-node domain, even
 * when another vendor key offers one; so is a GPU node without a clique in a rack where another
 * node has one. --explain-labels and the hygiene warnings say so. */
Test(topo_labels, nvl72_node_without_clique_is_a_domain_of_its_own)
{
    const struct topo_kv ok[] = {{"nvidia.com/gpu.product", "NVIDIA-GB200"},
                                 {TOPO_LABEL_CLIQUE, UUID_A ".1"},
                                 {"node.coreweave.cloud/rack", "rack-7"},
                                 {"ds.coreweave.com/nvlink.domain", "nvl-7"}};
    /* GFD ran (product label) but wrote no clique */
    const struct topo_kv down[] = {{"nvidia.com/gpu.product", "NVIDIA-GB200"},
                                   {"node.coreweave.cloud/rack", "rack-7"},
                                   {"ds.coreweave.com/nvlink.domain", "nvl-7"}};
    /* a product topox does not know, but its rack says NVL72 */
    const struct topo_kv odd[] = {{"nvidia.com/gpu.product", "NVIDIA-Future-Part"},
                                  {"node.coreweave.cloud/rack", "rack-7"},
                                  {"ds.coreweave.com/nvlink.domain", "nvl-7"}};
    const struct labelled nodes[] = {
        {"gb-0", ok, 4}, {"gb-1", ok, 4}, {"gb-2", down, 3}, {"gb-3", odd, 3}};
    struct topo_label_explain ex[4];
    struct topo_cluster *c = cluster_of(nodes, 4, ex);
    char **w;
    size_t nw;

    cr_expect_null(ex[2].key[TOPO_LEVEL_DOMAIN]);
    cr_expect_str_eq(ex[2].key[TOPO_LEVEL_RACK], "node.coreweave.cloud/rack");
    for (size_t i = 2; i < 4; i++) {
        size_t d = topo_cluster_node_domain(c, i);
        cr_expect_eq(topo_cluster_node_nvl(c, i), TOPO_NVL_INCOMPLETE, "node %zu", i);
        cr_expect_not(topo_cluster_domain_is_multinode(c, d), "node %zu", i);
        cr_expect_eq(topo_cluster_domain_size(c, d), 4);
        cr_expect(strstr(topo_labels_explain_note(c, i, &ex[i]), "not COMPLETED") != NULL);
    }
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, 0)), 8);
    cr_expect_eq(topo_cluster_node_rack(c, 2), topo_cluster_node_rack(c, 0));
    nw = topo_labels_hygiene(c, &w);
    cr_expect(has_warning(w, nw, "nvidia.com/gpu.clique missing on 2 NVL72 nodes (e.g. 'gb-2'"));
    topo_warnings_free(w, nw);
    topo_cluster_free(c);
}

/* Values are opaque: a long topograph value with dots is one id (no ClusterUUID is read from
 * it), and a rack value over 63 characters is kept whole. */
Test(topo_labels, opaque_values_are_never_parsed)
{
    static const char long_id[] = "nvl-domain.with.dots.0123456789abcdef0123456789abcdef0123456789"
                                  "abcdef0123456789";
    const struct topo_kv a[] = {{"accelerator.topograph.run/domain", long_id},
                                {"fabric.topograph.run/tier-0", long_id}};
    const struct topo_kv b[] = {{"accelerator.topograph.run/domain", "x3e4f1a2b3c4d5e6f"},
                                {"fabric.topograph.run/tier-0", "x3e4f1a2b3c4d5e6f"}};
    const struct labelled nodes[] = {{"a0", a, 2}, {"a1", a, 2}, {"b0", b, 2}, {"b1", b, 2}};
    struct topo_cluster *c = cluster_of(nodes, 4, NULL);

    cr_assert_gt(strlen(long_id), 63);
    cr_expect_eq(topo_cluster_rack_count(c), 2);
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, 0)), long_id);
    cr_expect_str_eq(topo_cluster_domain_name(c, topo_cluster_node_domain(c, 0)), long_id);
    cr_expect_str_eq(topo_cluster_domain_name(c, topo_cluster_node_domain(c, 2)),
                     "x3e4f1a2b3c4d5e6f");
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, 2)), 8);
    cr_expect_eq(topo_cluster_node_nvl(c, 0), TOPO_NVL_NONE);
    topo_cluster_free(c);
}

/* The nodes of upstream's TAS benchmark (kubernetes v1.37.2
 * test/integration/scheduler_perf/podgroup/tas/templates/node.yaml) carry
 * topology.kubernetes.io/rack, KEP-5732's example PodGroup topology key: it is the rack, beside the
 * zone, and a physical rack label still wins over it. */
Test(topo_labels, kubernetes_rack_label_is_the_rack)
{
    const struct topo_kv tas[] = {{"kubernetes.io/hostname", "node-7"},
                                  {"topology.kubernetes.io/zone", "zone-0"},
                                  {"topology.kubernetes.io/rack", "rack-0"}};
    const struct topo_kv both[] = {{"topology.kubernetes.io/rack", "rack-0"},
                                   {"network.topology.nvidia.com/leaf", "leaf-3"},
                                   {"oci.oraclecloud.com/host.rack_id", "1163795a865"}};

    expect_levels(tas, NKV(tas),
                  &(struct want_levels){NULL, "rack-0", NULL, "zone-0", NULL,
                                        "topology.kubernetes.io/rack", NULL},
                  "scheduler_perf tas node");
    expect_levels(both, NKV(both),
                  &(struct want_levels){NULL, "1163795a865", NULL, NULL, NULL,
                                        "oci.oraclecloud.com/host.rack_id", NULL},
                  "physical rack first");
    expect_levels(both, 2,
                  &(struct want_levels){NULL, "rack-0", NULL, NULL, NULL,
                                        "topology.kubernetes.io/rack", NULL},
                  "before the leaf switch");
}
