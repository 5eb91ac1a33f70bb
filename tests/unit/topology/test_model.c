/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/topology/test_model.c - the cluster model: copy-in, seal, racks scoped by block,
 * interconnect domains (in-node, several per node, multi-node) and the name index. */
#include "topology/model.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static struct topo_cluster *build(const struct topo_node_info *nodes, size_t n)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);

    cr_assert_not_null(c);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(topo_cluster_add(c, &nodes[i], &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK, "%s", err.msg);
    return c;
}

Test(topo_model, copies_strings_and_finds_by_name)
{
    char name[16] = "gpu-1", rack[8] = "r1";
    struct topo_node_info in = {
        .name = name, .rack = rack, .accel_alloc = 8, .fabric = TOPO_FABRIC_NVSWITCH};
    struct topo_cluster *c = build(&in, 1);

    strcpy(name, "xxxxx");
    strcpy(rack, "zz");
    cr_expect_eq(topo_cluster_node_count(c), 1);
    cr_expect_str_eq(topo_cluster_node(c, 0)->name, "gpu-1");
    cr_expect_str_eq(topo_cluster_node(c, 0)->rack, "r1");
    cr_expect_eq(topo_cluster_find(c, "gpu-1"), 0);
    cr_expect_eq(topo_cluster_find(c, "ghost"), TOPO_NONE);
    topo_cluster_free(c);
}

Test(topo_model, node_counts_past_the_cap_are_refused_so_sums_cannot_wrap)
{
    /* Two nodes of 2^31 + 8 in one rack summed to 16 in 32 bits: such a node is now refused, and
     * a rack of nodes at the cap adds up exactly. */
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    struct topo_node_info huge = {.name = "n1", .rack = "r1", .accel_alloc = 2147483656u};
    struct topo_node_info used = {.name = "n1", .rack = "r1", .accel_alloc = 8, .accel_used = 4097};
    struct topo_node_info full[] = {{.name = "a", .rack = "r1", .accel_alloc = TOPO_ACCEL_MAX},
                                    {.name = "b", .rack = "r1", .accel_alloc = TOPO_ACCEL_MAX}};

    cr_assert_not_null(c);
    cr_expect_eq(topo_cluster_add(c, &huge, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "n1") && strstr(err.msg, "4096"), "%s", err.msg);
    cr_expect_eq(topo_cluster_add(c, &used, &err), TPX_EINVAL);
    topo_cluster_free(c);
    c = build(full, 2);
    cr_expect_eq(topo_cluster_rack_capacity(c, 0), 2 * TOPO_ACCEL_MAX);
    topo_cluster_free(c);
}

Test(topo_model, rejects_duplicates_missing_names_and_adds_after_seal)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    struct topo_node_info a = {.name = "a", .accel_alloc = 8};
    struct topo_node_info noname = {.accel_alloc = 8};

    cr_assert_eq(topo_cluster_add(c, &a, &err), TPX_OK);
    cr_expect_eq(topo_cluster_add(c, &a, &err), TPX_EEXIST);
    cr_expect(strstr(err.msg, "'a'") != NULL, "%s", err.msg);
    tpx_err_clear(&err);
    cr_expect_eq(topo_cluster_add(c, &noname, &err), TPX_EINVAL);
    tpx_err_clear(&err);
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK);
    cr_expect_eq(topo_cluster_add(c, &(struct topo_node_info){.name = "b"}, &err), TPX_EINVAL);
    topo_cluster_free(c);
    topo_cluster_free(NULL);
}

Test(topo_model, racks_are_scoped_by_block)
{
    const struct topo_node_info nodes[] = {
        {.name = "n1", .rack = "r1", .block = "b1", .accel_alloc = 8},
        {.name = "n2", .rack = "r1", .block = "b2", .accel_alloc = 8},
        {.name = "n3", .rack = "r1", .block = "b1", .accel_alloc = 4},
        {.name = "lonely", .accel_alloc = 8},
    };
    struct topo_cluster *c = build(nodes, 4);
    size_t n;
    const size_t *members;

    cr_expect_eq(topo_cluster_rack_count(c), 3);
    cr_expect_eq(topo_cluster_node_rack(c, 0), topo_cluster_node_rack(c, 2));
    cr_expect_neq(topo_cluster_node_rack(c, 0), topo_cluster_node_rack(c, 1));
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, 0)), "b1/r1");
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, 1)), "b2/r1");
    /* a node without a rack label is a rack of its own, named after it */
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, 3)), "lonely");
    members = topo_cluster_rack_nodes(c, topo_cluster_node_rack(c, 0), &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(members[0], 0);
    cr_expect_eq(members[1], 2);
    cr_expect_eq(topo_cluster_rack_capacity(c, topo_cluster_node_rack(c, 0)), 12);
    cr_expect_eq(topo_cluster_block_count(c), 2);
    cr_expect_eq(topo_cluster_node_block(c, 3), TOPO_NONE);
    cr_expect_str_eq(topo_cluster_block_name(c, topo_cluster_node_block(c, 1)), "b2");
    topo_cluster_free(c);
}

Test(topo_model, rack_names_without_blocks_are_plain)
{
    const struct topo_node_info nodes[] = {
        {.name = "n1", .rack = "r1", .zone = "z1", .accel_alloc = 8},
        {.name = "n2", .rack = "r2", .zone = "z1", .accel_alloc = 8},
    };
    struct topo_cluster *c = build(nodes, 2);

    cr_expect_str_eq(topo_cluster_rack_name(c, 0), "r1");
    cr_expect_eq(topo_cluster_zone_count(c), 1);
    cr_expect_str_eq(topo_cluster_zone_name(c, topo_cluster_node_zone(c, 1)), "z1");
    topo_cluster_free(c);
}

Test(topo_model, domains_in_node_several_per_node_and_multinode)
{
    const struct topo_node_info nodes[] = {
        {.name = "hgx", .rack = "r1", .accel_alloc = 8, .fabric = TOPO_FABRIC_NVSWITCH},
        {.name = "npu",
         .rack = "r1",
         .accel_alloc = 16,
         .fabric = TOPO_FABRIC_HCCS,
         .domain_size = 8,
         .domains_per_node = 2},
        {.name = "gb1",
         .rack = "r2",
         .domain = "clique-1",
         .accel_alloc = 4,
         .fabric = TOPO_FABRIC_NVLINK},
        {.name = "gb2",
         .rack = "r2",
         .domain = "clique-1",
         .accel_alloc = 4,
         .fabric = TOPO_FABRIC_NVLINK},
        {.name = "pcie", .rack = "r3", .accel_alloc = 4, .fabric = TOPO_FABRIC_PCIE},
    };
    struct topo_cluster *c = build(nodes, 5);
    size_t n, first;
    enum topo_fabric f;
    bool multi;
    const size_t *members;

    /* hgx 1 + npu 2 + clique 1 + pcie 1 */
    cr_expect_eq(topo_cluster_domain_count(c), 5);
    cr_expect_str_eq(topo_cluster_domain_name(c, topo_cluster_node_domain(c, 0)), "hgx");
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, 0)), 8);
    first = topo_cluster_node_domains(c, 1, &n);
    cr_expect_eq(n, 2);
    cr_expect_str_eq(topo_cluster_domain_name(c, first), "npu/d0");
    cr_expect_str_eq(topo_cluster_domain_name(c, first + 1), "npu/d1");
    cr_expect_eq(topo_cluster_domain_size(c, first + 1), 8);
    cr_expect_eq(topo_cluster_domain_fabric(c, first), TOPO_FABRIC_HCCS);
    cr_expect_eq(topo_cluster_node_domain(c, 2), topo_cluster_node_domain(c, 3));
    cr_expect(topo_cluster_domain_is_multinode(c, topo_cluster_node_domain(c, 2)));
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, 2)), 8);
    members = topo_cluster_domain_nodes(c, topo_cluster_node_domain(c, 3), &n);
    cr_assert_eq(n, 2);
    cr_expect_eq(members[1], 3);
    /* largest: 8 three times; the fastest fabric wins the tie */
    cr_expect_eq(topo_cluster_largest_domain(c, &f, &multi), 8);
    cr_expect_eq(f, TOPO_FABRIC_NVSWITCH);
    cr_expect_not(multi);
    topo_cluster_free(c);
}

Test(topo_model, largest_multinode_domain_and_empty_cluster)
{
    struct topo_node_info nodes[18];
    char names[18][8];
    struct topo_cluster *c;
    struct tpx_err err = TPX_ERR_INIT;
    enum topo_fabric f;
    bool multi;

    for (int i = 0; i < 18; i++) {
        snprintf(names[i], sizeof(names[i]), "gb%02d", i);
        nodes[i] = (struct topo_node_info){.name = names[i],
                                           .rack = "r1",
                                           .domain = "nvl72",
                                           .accel_alloc = 4,
                                           .fabric = TOPO_FABRIC_NVLINK};
    }
    c = build(nodes, 18);
    cr_expect_eq(topo_cluster_largest_domain(c, &f, &multi), 72);
    cr_expect(multi);
    cr_expect_eq(f, TOPO_FABRIC_NVLINK);
    topo_cluster_free(c);

    c = topo_cluster_new(&err);
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK);
    cr_expect_eq(topo_cluster_largest_domain(c, &f, &multi), 0);
    cr_expect_eq(topo_cluster_node_count(c), 0);
    topo_cluster_free(c);
}

Test(topo_model, name_index_scales)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    char name[32];

    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "node-%d", i);
        cr_assert_eq(
            topo_cluster_add(c, &(struct topo_node_info){.name = name, .accel_alloc = 8}, &err),
            TPX_OK);
    }
    cr_assert_eq(topo_cluster_seal(c, &err), TPX_OK);
    for (int i = 0; i < 5000; i += 97) {
        snprintf(name, sizeof(name), "node-%d", i);
        cr_expect_eq(topo_cluster_find(c, name), (size_t)i);
    }
    topo_cluster_free(c);
}

Test(topo_model, domains_per_node_is_bounded)
{
    /* a label typo such as topox.io/domains-per-node=4000000000 must be an error naming the node,
     * not billions of domains (out of memory for the whole cluster) */
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_new(&err);
    struct topo_node_info in = {.name = "typo", .accel_alloc = 8, .domains_per_node = 4000000000U};
    struct topo_node_info ok = {.name = "npu",
                                .accel_alloc = 64,
                                .domain_size = 1,
                                .domains_per_node = TOPO_DOMAINS_PER_NODE_MAX};

    cr_assert_not_null(c);
    cr_expect_eq(topo_cluster_add(c, &in, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "'typo'") != NULL && strstr(err.msg, "4000000000") != NULL, "%s",
              err.msg);
    tpx_err_clear(&err);
    in.domains_per_node = TOPO_DOMAINS_PER_NODE_MAX + 1;
    cr_expect_eq(topo_cluster_add(c, &in, &err), TPX_EINVAL);
    tpx_err_clear(&err);
    cr_expect_eq(topo_cluster_add(c, &ok, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(topo_cluster_seal(c, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(topo_cluster_domain_count(c), TOPO_DOMAINS_PER_NODE_MAX);
    topo_cluster_free(c);
}

/* serve rebuilds a node only when topo_node_info_same_place() says it changed: every placement
 * fact counts (the NVLink fabric's word and a rack taken from the clique too), the name and the
 * bound pods' accelerators do not. */
Test(topo_model, same_place_compares_every_placement_fact)
{
    struct topo_node_info a = {.name = "n1",
                               .rack = "r1",
                               .domain = "uuid.1",
                               .resource = "nvidia.com/gpu",
                               .accel_alloc = 4,
                               .nvl = TOPO_NVL_COMPLETED};
    struct topo_node_info b = a;

    b.name = "n2";
    b.accel_used = 3;
    cr_expect(topo_node_info_same_place(&a, &b));
    b.nvl = TOPO_NVL_INCOMPLETE;
    cr_expect_not(topo_node_info_same_place(&a, &b), "the fabric went down");
    b = a;
    b.rack_from_domain = true;
    cr_expect_not(topo_node_info_same_place(&a, &b));
    b = a;
    b.rack = NULL;
    cr_expect_not(topo_node_info_same_place(&a, &b));
    b.rack = "r1";
    b.rdma_known = true;
    cr_expect_not(topo_node_info_same_place(&a, &b));
}
