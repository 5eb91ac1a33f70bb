/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_cluster_load.c - Node files (List JSON, YAML stream, single Node, the
 * real GKE node, the GFD fragment that is not YAML) -> sealed cluster; pod files -> ledger usage.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objects/cluster_load.h"

static struct obj_cluster_load_result res;

static void fini(void)
{
    obj_cluster_load_release(&res);
}

TestSuite(obj_cluster_load, .fini = fini);

static void load1(const char *path)
{
    struct tpx_err err = TPX_ERR_INIT;
    const char *paths[] = {path};

    cr_assert_eq(obj_cluster_load(paths, 1, NULL, &res, &err), TPX_OK, "%s", err.msg);
    cr_assert_not_null(res.cluster);
}

static bool has_warning(const char *needle)
{
    for (size_t i = 0; i < res.nwarnings; i++) {
        if (strstr(res.warnings[i], needle))
            return true;
    }
    return false;
}

Test(obj_cluster_load, nodelist_json_racks_readiness_and_fabric_guess)
{
    const struct topo_cluster *c;
    size_t i;

    load1(TPX_FIXTURES "/plan/nodes-2racks.json");
    c = res.cluster;
    cr_assert_eq(topo_cluster_node_count(c), 5);
    cr_expect_eq(topo_cluster_rack_count(c), 2);
    i = topo_cluster_find(c, "gpu-b1");
    cr_assert_neq(i, TOPO_NONE);
    cr_expect_eq(topo_cluster_node(c, i)->accel_alloc, 8);
    cr_expect_eq(topo_cluster_node(c, i)->fabric, TOPO_FABRIC_NVSWITCH, "guessed from HBM3");
    cr_expect_str_eq(topo_cluster_rack_name(c, topo_cluster_node_rack(c, i)), "rack-b");
    cr_expect(topo_cluster_node(c, topo_cluster_find(c, "gpu-b2"))->unschedulable, "not Ready");
    cr_expect(topo_cluster_node(c, topo_cluster_find(c, "gpu-b3"))->unschedulable, "cordoned");
    cr_expect(!topo_cluster_node(c, topo_cluster_find(c, "gpu-a1"))->unschedulable);
    cr_expect_str_eq(res.explain[i].key[TOPO_LEVEL_RACK], "topox.io/rack");
}

Test(obj_cluster_load, yaml_stream_with_merge_key_and_a_skipped_service)
{
    const struct topo_cluster *c;
    size_t i;

    load1(TPX_FIXTURES "/plan/nodes-stream.yaml");
    c = res.cluster;
    cr_assert_eq(topo_cluster_node_count(c), 2);
    i = topo_cluster_find(c, "nvl-1");
    cr_assert_neq(i, TOPO_NONE);
    cr_expect_str_eq(topo_cluster_node(c, i)->rack, "r7", "merged from the anchor");
    cr_expect_str_eq(topo_cluster_node(c, i)->domain, "cl-1.0");
    cr_expect_eq(topo_cluster_node(c, 0)->accel_alloc, 4, "unquoted quantity");
    cr_expect_eq(topo_cluster_domain_size(c, topo_cluster_node_domain(c, i)), 8,
                 "one multi-node domain of two 4-GPU nodes");
    cr_expect(has_warning("skipped Service 'not-a-node'"));
    cr_expect_str_eq(res.explain[i].key[TOPO_LEVEL_DOMAIN], "nvidia.com/gpu.clique");
    cr_expect_str_eq(res.explain[i].key[TOPO_LEVEL_RACK], "topox.io/rack");
}

Test(obj_cluster_load, single_real_gke_node)
{
    load1(TPX_FIXTURES "/nodes/k8s-apimachinery-testdata-gke-node-full.yaml");
    cr_assert_eq(topo_cluster_node_count(res.cluster), 1);
    cr_expect_eq(topo_cluster_node(res.cluster, 0)->accel_alloc, 0);
    cr_expect_eq(topo_cluster_zone_count(res.cluster), 1);
}

Test(obj_cluster_load, several_files_and_duplicates)
{
    const char *two[] = {TPX_FIXTURES "/plan/nodes-2racks.json",
                         TPX_FIXTURES "/plan/nodes-stream.yaml"};
    const char *dup[] = {TPX_FIXTURES "/plan/nodes-stream.yaml",
                         TPX_FIXTURES "/plan/nodes-stream.yaml"};
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_cluster_load(two, 2, NULL, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(topo_cluster_node_count(res.cluster), 7);
    obj_cluster_load_release(&res);
    cr_expect_eq(obj_cluster_load(dup, 2, NULL, &res, &err), TPX_EEXIST);
    cr_expect(strstr(err.msg, "nodes-stream.yaml"), "%s", err.msg);
    cr_expect_null(res.cluster);
}

Test(obj_cluster_load, errors_name_the_file_and_line)
{
    static const struct {
        const char *path;
        enum tpx_code code;
        const char *want;
    } cases[] = {
        {TPX_FIXTURES "/nodes/gfd-readme-kubectl-get-nodes-a100-dgx2h.fragment.yaml", TPX_EPARSE,
         "gfd-readme-kubectl-get-nodes-a100-dgx2h.fragment.yaml:"},
        {TPX_FIXTURES "/plan/node-bad-domain-size.yaml", TPX_EINVAL,
         "node-bad-domain-size.yaml:1: node 'bad-0': label 'topox.io/domain-size'"},
        {TPX_FIXTURES "/manifests/lws-sglang-llama8b-tp2-2nodes.yaml", TPX_EINVAL,
         "no Node objects"},
        {TPX_FIXTURES "/plan/does-not-exist.yaml", TPX_ENOENT, "does-not-exist.yaml"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        const char *paths[] = {cases[i].path};

        cr_expect_eq(obj_cluster_load(paths, 1, NULL, &res, &err), cases[i].code, "case %zu: %s", i,
                     err.msg);
        cr_expect(strstr(err.msg, cases[i].want), "case %zu: %s", i, err.msg);
        cr_expect_null(res.cluster);
    }
}

Test(obj_cluster_load, gfd_fragment_error_has_a_line_number)
{
    const char *paths[] = {TPX_FIXTURES
                           "/nodes/gfd-readme-kubectl-get-nodes-a100-dgx2h.fragment.yaml"};
    struct tpx_err err = TPX_ERR_INIT;
    const char *p;

    cr_assert_eq(obj_cluster_load(paths, 1, NULL, &res, &err), TPX_EPARSE);
    p = strstr(err.msg, ".fragment.yaml:");
    cr_assert_not_null(p, "%s", err.msg);
    p += strlen(".fragment.yaml:");
    cr_expect(*p >= '1' && *p <= '9', "line number expected: %s", err.msg);
}

Test(obj_cluster_load, bound_running_pods_take_capacity)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *l;
    size_t applied = 0;
    const struct topo_cluster *c;

    load1(TPX_FIXTURES "/plan/nodes-2racks.json");
    c = res.cluster;
    l = pol_ledger_new(c, &err);
    cr_assert_not_null(l, "%s", err.msg);
    cr_assert_eq(
        obj_cluster_apply_pods(l, TPX_FIXTURES "/plan/pods-2racks.json", NULL, &applied, &err),
        TPX_OK, "%s", err.msg);
    cr_expect_eq(applied, 2, "running pods on known nodes only");
    cr_expect_eq(pol_ledger_node_free(l, topo_cluster_find(c, "gpu-a1")), 4);
    cr_expect_eq(pol_ledger_node_free(l, topo_cluster_find(c, "gpu-b1")), 6);
    cr_expect_eq(pol_ledger_node_free(l, topo_cluster_find(c, "gpu-a2")), 8);
    pol_ledger_free(l);
}

/* Write text to a fresh temporary file; its path goes to path (PATH_MAX-free: 64 bytes). */
static void temp_file(char path[64], const char *text)
{
    int fd;
    FILE *f;

    snprintf(path, 64, "/tmp/tpx-cl-XXXXXX");
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    f = fdopen(fd, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    fclose(f);
}

static void expect_load_error(const char *text, enum tpx_code code, const char *want_after_path)
{
    char path[64];
    char want[256];
    const char *paths[] = {path};
    struct tpx_err err = TPX_ERR_INIT;

    temp_file(path, text);
    snprintf(want, sizeof(want), "%s%s", path, want_after_path);
    cr_expect_eq(obj_cluster_load(paths, 1, NULL, &res, &err), code, "%s", err.msg);
    cr_expect(strncmp(err.msg, want, strlen(want)) == 0, "got  %s\nwant %s...", err.msg, want);
    unlink(path);
}

#define GOOD_NODE(n)                                                                               \
    "kind: Node\nmetadata: {name: " n "}\nstatus: {allocatable: {nvidia.com/gpu: 8}}\n"

Test(obj_cluster_load, bad_node_errors_name_the_node_line)
{
    /* the second document is a NodeList; its second item is the bad node */
    expect_load_error(GOOD_NODE("a") "---\n"
                                     "kind: NodeList\n"
                                     "items:\n"
                                     "- kind: Node\n"
                                     "  metadata: {name: b}\n"
                                     "  status: {allocatable: {nvidia.com/gpu: 8}}\n"
                                     "- kind: Node\n"
                                     "  metadata:\n"
                                     "    name: c\n"
                                     "    labels: {topox.io/rack: 7}\n"
                                     "  status: {allocatable: {nvidia.com/gpu: 8}}\n",
                      TPX_EINVAL, ":10: node 'c': label 'topox.io/rack' is not a string");
    /* a node named twice: the line of the second one */
    expect_load_error(GOOD_NODE("a") "---\n" GOOD_NODE("b") "---\n" GOOD_NODE("a"), TPX_EEXIST,
                      ":9: ");
    /* JSON: the object of the node without a name */
    expect_load_error("{\"kind\": \"List\", \"items\": [\n"
                      "  {\"kind\": \"Node\", \"metadata\": {\"name\": \"x\"},\n"
                      "   \"status\": {\"allocatable\": {}}},\n"
                      "  {\"kind\": \"Node\", \"metadata\": {}}\n"
                      "]}\n",
                      TPX_EINVAL, ":4: node: metadata.name is missing");
}

Test(obj_cluster_load, bad_pod_errors_name_the_pod_line)
{
    char npath[64];
    char ppath[64];
    char want[160];
    const char *paths[] = {npath};
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *l;

    temp_file(npath, GOOD_NODE("a"));
    temp_file(ppath, "kind: PodList\nitems:\n- kind: Pod\n  metadata: {name: ok}\n"
                     "  spec: {nodeName: a, containers: [{name: c}]}\n"
                     "- kind: Pod\n  metadata: {name: bad}\n"
                     "  spec:\n    nodeName: a\n    containers:\n    - name: c\n"
                     "      resources: {limits: {nvidia.com/gpu: some}}\n");
    cr_assert_eq(obj_cluster_load(paths, 1, NULL, &res, &err), TPX_OK, "%s", err.msg);
    l = pol_ledger_new(res.cluster, &err);
    cr_assert_not_null(l, "%s", err.msg);
    snprintf(want, sizeof(want), "%s:6: pod 'bad': container 'c'", ppath);
    cr_expect_eq(obj_cluster_apply_pods(l, ppath, NULL, NULL, &err), TPX_EINVAL, "%s", err.msg);
    cr_expect(strncmp(err.msg, want, strlen(want)) == 0, "got  %s\nwant %s...", err.msg, want);
    pol_ledger_free(l);
    unlink(npath);
    unlink(ppath);
}
