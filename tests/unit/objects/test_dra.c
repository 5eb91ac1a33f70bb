/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_dra.c - DRA on real objects: the GKE A100 ResourceSlice, the NVIDIA
 * driver's DeviceClasses, the quickstart claim template, the KEP-5004 extended-resource claim, the
 * nvbandwidth ComputeDomain; a two-node snapshot with allocated claims. */
#include <criterion/criterion.h>
#include <string.h>

#include "objects/cluster_load.h"
#include "objects/dra.h"
#include "objects/manifest.h"
#include "objects/yamljson.h"

#define DRA TPX_FIXTURES "/dra/"

static struct obj_dra dra;
static struct obj_yaml_docs docs[4];
static size_t ndocs;

static void init(void)
{
    obj_dra_init(&dra);
    ndocs = 0;
}

static void fini(void)
{
    obj_dra_release(&dra);
    for (size_t i = 0; i < ndocs; i++)
        obj_yaml_docs_release(&docs[i]);
}

TestSuite(obj_dra, .init = init, .fini = fini);

static void add(const char *path)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_lt(ndocs, 4);
    cr_assert_eq(obj_yaml_load_file(path, 1 << 24, &docs[ndocs], &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_dra_add_docs(&dra, docs[ndocs].docs, docs[ndocs].n, &err), TPX_OK, "%s",
                 err.msg);
    ndocs++;
}

Test(obj_dra, gke_slice_device_attributes)
{
    unsigned total, taken;

    add(DRA "resourceslice-gke-a100.yaml");
    obj_dra_finish(&dra);
    cr_assert_eq(dra.ndev, 1);
    cr_expect_str_eq(dra.dev[0].node, "gke-gpu-a100-80gb-pool-c78060b4-cg6n");
    cr_expect_str_eq(dra.dev[0].driver, "gpu.nvidia.com");
    cr_expect_str_eq(dra.dev[0].pool, "gke-gpu-a100-80gb-pool-c78060b4-cg6n");
    cr_expect_str_eq(dra.dev[0].name, "gpu-0");
    cr_expect_str_eq(dra.dev[0].pcie_root, "pci0000:00");
    cr_expect_eq(dra.dev[0].numa, -1);
    cr_expect(dra.dev[0].accel);
    obj_dra_node_count(&dra, "gke-gpu-a100-80gb-pool-c78060b4-cg6n", &total, &taken);
    cr_expect_eq(total, 1);
    cr_expect_eq(taken, 0);
    obj_dra_node_count(&dra, "other", &total, &taken);
    cr_expect_eq(total, 0);
}

Test(obj_dra, nvidia_device_classes_gpu_counts_mig_and_channel_do_not)
{
    add(DRA "deviceclasses-nvidia.yaml");
    obj_dra_finish(&dra);
    cr_assert_eq(dra.ncls, 3);
    cr_expect_str_eq(dra.cls[0].name, "gpu.nvidia.com");
    cr_expect_str_eq(dra.cls[0].driver, "gpu.nvidia.com");
    cr_expect(dra.cls[0].accel);
    cr_expect_str_eq(dra.cls[1].name, "mig.nvidia.com");
    cr_expect_not(dra.cls[1].accel, "a MIG slice is not a whole GPU");
    cr_expect_str_eq(dra.cls[2].driver, "compute-domain.nvidia.com");
    cr_expect_not(dra.cls[2].accel);
    cr_expect_str_eq(obj_dra_resource(&dra), "nvidia.com/gpu");
}

Test(obj_dra, quickstart_template_demand_v1beta1_count)
{
    struct tpx_err err = TPX_ERR_INIT;
    const json_t *pod = NULL;
    unsigned accel = 0;

    add(DRA "gpu-test-count.yaml");
    obj_dra_finish(&dra);
    for (size_t i = 0; i < docs[0].n; i++) {
        const char *k = json_string_value(json_object_get(docs[0].docs[i], "kind"));
        if (k && strcmp(k, "Pod") == 0)
            pod = docs[0].docs[i];
    }
    cr_assert_not_null(pod);
    cr_assert_eq(obj_dra_pod_demand(&dra, pod, "gpu-test1", &accel, NULL, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_eq(accel, 2);
    /* another namespace does not see the template */
    cr_expect_eq(obj_dra_pod_demand(&dra, pod, "elsewhere", &accel, NULL, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "ResourceClaimTemplate 'double-gpu'") != NULL, "%s", err.msg);
}

Test(obj_dra, extended_resource_claim_is_allocated)
{
    add(DRA "gpu-full-extended-resource.yaml");
    obj_dra_finish(&dra);
    cr_expect(obj_dra_claim_allocated(&dra, "extended-resource-gpu-full",
                                      "gpu-full-pod-extended-resources-x7k9m"));
    cr_expect_not(obj_dra_claim_allocated(&dra, "extended-resource-gpu-full", "nope"));
}

Test(obj_dra, snapshot_capacity_minus_allocated_claims)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_cluster_load_result cl = {0};
    struct pol_ledger *l;
    unsigned total, taken;
    size_t a, b;

    add(DRA "snapshot-two-nodes.json");
    obj_dra_finish(&dra);
    obj_dra_node_count(&dra, "gpu-node-a", &total, &taken);
    cr_expect_eq(total, 4);
    cr_expect_eq(taken, 4, "3 by the trainer's claim, 1 by the notebook's extended resource");
    obj_dra_node_count(&dra, "gpu-node-b", &total, &taken);
    cr_expect_eq(total, 4);
    cr_expect_eq(taken, 0);
    obj_dra_node_count(&dra, "gpu-node-0", &total, &taken); /* sorts before every node */
    cr_expect_eq(total, 0);
    obj_dra_node_count(&dra, "gpu-node-z", &total, &taken); /* and after */
    cr_expect_eq(total, 0);
    cr_expect_eq(dra.dev[0].numa, -1);
    cr_expect_str_eq(dra.dev[2].pcie_root, "pci0000:40");
    cr_assert_eq(obj_cluster_load_snapshot(docs[0].docs, docs[0].n, "snap", NULL, &dra, &cl, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_eq(cl.nwarnings, 0, "the snapshot's other kinds are skipped quietly");
    a = topo_cluster_find(cl.cluster, "gpu-node-a");
    b = topo_cluster_find(cl.cluster, "gpu-node-b");
    cr_assert_neq(a, TOPO_NONE);
    cr_expect_eq(topo_cluster_node(cl.cluster, a)->accel_alloc, 4, "allocatable lists no GPUs");
    cr_expect_str_eq(topo_cluster_node(cl.cluster, a)->resource, "nvidia.com/gpu");
    l = pol_ledger_new(cl.cluster, &err);
    cr_assert_not_null(l);
    cr_assert_eq(
        obj_cluster_apply_snapshot(l, docs[0].docs, docs[0].n, "snap", NULL, &dra, NULL, &err),
        TPX_OK, "%s", err.msg);
    cr_expect_eq(pol_ledger_node_free(l, a), 0, "the notebook's GPU is not counted twice");
    cr_expect_eq(pol_ledger_node_free(l, b), 4);
    pol_ledger_free(l);
    obj_cluster_load_release(&cl);
}

static void note_count(void *ctx, const char *line)
{
    (void)line;
    (*(int *)ctx)++;
}

Test(obj_dra, computedomain_claimants_are_one_group_in_one_domain)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_manifest m;
    int notes = 0;

    obj_manifest_init(&m);
    cr_assert_eq(
        obj_manifest_add_file(&m, DRA "dra-computedomain-nvbandwidth-mpijob-4node.yaml", &err),
        TPX_OK, "%s", err.msg);
    for (size_t f = 0; f < m.nfiles; f++)
        cr_assert_eq(obj_dra_add_docs(&dra, m.files[f].docs, m.files[f].n, &err), TPX_OK);
    obj_dra_finish(&dra);
    cr_assert_eq(dra.ncd, 1);
    cr_expect_eq(dra.cd[0].num_nodes, 4);
    cr_expect_str_eq(dra.cd[0].channel_template, "nvbandwidth-test-compute-domain-channel");
    cr_assert_eq(obj_dra_manifest_demand(&dra, &m, NULL, NULL, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_dra_manifest_domains(&dra, &m, note_count, &notes, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(m.npods, 4, "the 4 workers; the launcher asks for nothing");
    cr_expect_eq(notes, 0);
    for (size_t i = 0; i < m.npods; i++) {
        cr_expect_str_eq(m.wl[i].group, "default/computedomain:nvbandwidth-test-compute-domain");
        cr_expect_eq(m.wl[i].group_size, 4);
        cr_expect_eq(m.wl[i].pod_index, (int)i);
        cr_expect_eq(m.wl[i].accel_per_pod, 2, "the channel claim holds no GPU");
        cr_expect_eq(m.wl[i].tp, 8, "one clique for all 8 GPUs");
    }
    obj_manifest_release(&m);
}

/* NVIDIA's GB200 wide-EP recipe: one ComputeDomain of numNodes 9 shared by the prefill worker
 * (1 pod) and the decode worker (8 pods), two groups of the manifest. It was refused ("its
 * claimants belong to more than one group"); the domain is now sized for all 9 claimants, and
 * every group joins it whole, so all 36 GPUs land in one clique. */
Test(obj_dra, computedomain_shared_by_several_groups_is_one_clique_for_all)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_manifest m;
    int notes = 0;
    size_t claimants = 0;

    obj_manifest_init(&m);
    cr_assert_eq(obj_manifest_add_file(&m,
                                       TPX_FIXTURES "/manifests/"
                                                    "dynamo-dgd-trtllm-gb200-wide-ep-"
                                                    "computedomain-1p-8d.yaml",
                                       &err),
                 TPX_OK, "%s", err.msg);
    for (size_t f = 0; f < m.nfiles; f++)
        cr_assert_eq(obj_dra_add_docs(&dra, m.files[f].docs, m.files[f].n, &err), TPX_OK);
    obj_dra_finish(&dra);
    cr_assert_eq(dra.ncd, 1);
    cr_expect_eq(dra.cd[0].num_nodes, 9);
    cr_assert_eq(obj_dra_manifest_demand(&dra, &m, NULL, NULL, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_dra_manifest_domains(&dra, &m, note_count, &notes, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(m.npods, 10, "frontend, prefill, 8 decode");
    cr_expect_eq(notes, 1, "numNodes 9 agrees; one note says the groups share the domain");
    for (size_t i = 0; i < m.npods; i++) {
        if (m.wl[i].accel_per_pod == 0) {
            cr_expect_str_neq(m.wl[i].group, "default/computedomain:trtllm-test-compute-domain",
                              "the frontend claims nothing");
            continue;
        }
        cr_expect_str_eq(m.wl[i].group, "default/computedomain:trtllm-test-compute-domain");
        cr_expect_eq(m.wl[i].group_size, 9);
        cr_expect_eq(m.wl[i].pod_index, (int)claimants);
        cr_expect_eq(m.wl[i].tp, 36, "one clique for all 9 x 4 GPUs");
        claimants++;
    }
    cr_expect_eq(claimants, 9);
    obj_manifest_release(&m);
}

/* The driver's e2e test makes a DeviceClass with a custom extendedResourceName for one GPU. */
Test(obj_dra, extended_resource_name_of_a_device_class_is_demand)
{
    struct tpx_err err = TPX_ERR_INIT;
    const char *text = "apiVersion: resource.k8s.io/v1\n"
                       "kind: DeviceClass\n"
                       "metadata: {name: custom-gpu}\n"
                       "spec:\n"
                       "  extendedResourceName: example.com/custom-gpu\n"
                       "  selectors:\n"
                       "  - cel: {expression: \"device.driver == 'gpu.nvidia.com' && "
                       "device.attributes['gpu.nvidia.com'].uuid == 'GPU-1'\"}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Pod\n"
                       "metadata: {name: p}\n"
                       "spec:\n"
                       "  containers:\n"
                       "  - name: c\n"
                       "    resources: {limits: {example.com/custom-gpu: 1}}\n";
    unsigned accel = 0;
    const char *res = NULL;

    cr_assert_eq(obj_yaml_parse(text, strlen(text), "inline", &docs[0], &err), TPX_OK, "%s",
                 err.msg);
    ndocs = 1;
    cr_assert_eq(obj_dra_add_docs(&dra, docs[0].docs, docs[0].n, &err), TPX_OK, "%s", err.msg);
    obj_dra_finish(&dra);
    cr_assert_eq(obj_dra_extended_demand(&dra, docs[0].docs[1], &accel, &res, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_eq(accel, 1);
    cr_expect_str_eq(res, "example.com/custom-gpu");
    cr_expect_str_eq(obj_dra_resource(&dra), "example.com/custom-gpu");
}

/* A template that claims something the snapshot and manifests do not hold is a note, not an
 * error: the pod's other requests still count. */
Test(obj_dra, missing_claim_template_is_a_note)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_manifest m;
    const char *text = "apiVersion: v1\n"
                       "kind: Pod\n"
                       "metadata: {name: p}\n"
                       "spec:\n"
                       "  containers:\n"
                       "  - name: c\n"
                       "    resources: {limits: {nvidia.com/gpu: 2}}\n"
                       "  resourceClaims:\n"
                       "  - {name: x, resourceClaimTemplateName: made-elsewhere}\n";
    int notes = 0;

    obj_manifest_init(&m);
    cr_assert_eq(obj_yaml_parse(text, strlen(text), "inline", &docs[0], &err), TPX_OK);
    cr_assert_eq(obj_manifest_add_docs(&m, &docs[0], "inline", &err), TPX_OK, "%s", err.msg);
    obj_dra_finish(&dra);
    cr_assert_eq(obj_dra_manifest_demand(&dra, &m, note_count, &notes, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_eq(notes, 1);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m.wl[0].accel_per_pod, 2);
    obj_manifest_release(&m);
}

static void count_owned(void *ctx, const json_t *claim)
{
    (void)claim;
    (*(unsigned *)ctx)++;
}

static bool skip_all(void *ctx, const json_t *claim)
{
    (void)ctx;
    (void)claim;
    return true;
}

/* What serve needs beyond plan: a template claim read from the claim the controller made (the
 * snapshot holds no ResourceClaimTemplate), the claims a pod's count covers, and devices that
 * those claims take left out of the node's taken count. */
Test(obj_dra, serve_reads_made_claims_and_skips_what_pods_count)
{
    struct tpx_err err = TPX_ERR_INIT;
    const json_t *trainer = NULL, *notebook = NULL;
    struct pol_pod_facts f;
    unsigned owned = 0, total, taken;

    add(DRA "snapshot-two-nodes.json");
    {
        size_t i;
        const json_t *it;
        json_array_foreach(json_object_get(docs[0].docs[0], "items"), i, it)
        {
            const char *n =
                json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
            if (strcmp(n, "trainer-0") == 0)
                trainer = it;
            else if (strcmp(n, "notebook") == 0)
                notebook = it;
        }
    }
    cr_assert_not_null(trainer);
    cr_assert_not_null(notebook);
    /* trainer-0 names template trainer-gpus, which is not here; its made claim is */
    memset(&f, 0, sizeof(f));
    f.ns = "ml";
    cr_assert_eq(obj_dra_facts_demand(&dra, trainer, &f, count_owned, &owned, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_eq(f.accel, 3);
    cr_expect_str_eq(f.resource, "nvidia.com/gpu");
    cr_expect_eq(owned, 1);
    /* notebook counts nvidia.com/gpu: 1 itself; the claim behind it is covered */
    memset(&f, 0, sizeof(f));
    f.ns = "ml";
    f.accel = 1;
    owned = 0;
    cr_assert_eq(obj_dra_facts_demand(&dra, notebook, &f, count_owned, &owned, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_eq(f.accel, 1);
    cr_expect_eq(owned, 1);
    /* with every claim counted by its pod, nothing is taken on the node */
    obj_dra_finish_skip(&dra, skip_all, NULL);
    obj_dra_node_count(&dra, "gpu-node-a", &total, &taken);
    cr_expect_eq(total, 4);
    cr_expect_eq(taken, 0);
    obj_dra_finish(&dra);
    obj_dra_node_count(&dra, "gpu-node-a", &total, &taken);
    cr_expect_eq(taken, 4, "a second finish marks them again");
}
