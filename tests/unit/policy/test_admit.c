/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_admit.c - kube-scheduler's node filters for plan (policy/admit.h):
 * nodeName, nodeSelector, required node affinity with every operator and matchFields, taints
 * against tolerations (Equal, Exists, empty key, effect), and the summary naming the reason. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/admit.h"

static const struct topo_kv gpu_labels[] = {
    {"kubernetes.io/hostname", "gpu-1"},
    {"nvidia.com/gpu.count", "8"},
    {"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"},
};
static const struct pol_taint gpu_taint[] = {{"nvidia.com/gpu", "present", "NoSchedule"}};
static const struct pol_taint soft_taint[] = {{"dedicated", "infra", "PreferNoSchedule"}};

static const struct pol_node_meta gpu = {"gpu-1", gpu_labels, 3, gpu_taint, 1};
static const struct pol_node_meta soft = {"cpu-1", NULL, 0, soft_taint, 1};

Test(pol_admit, node_name_and_node_selector)
{
    static const struct topo_kv sel[] = {{"cloud.google.com/gke-accelerator", "nvidia-l4"}};
    static const struct pol_toleration all = {NULL, true, NULL, NULL};
    struct pol_pod_sched p = {.tols = &all, .ntols = 1};
    char why[200];

    cr_expect(pol_admit(&p, &gpu, why, sizeof(why)));
    p.node_name = "gpu-2";
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
    cr_expect(strstr(why, "nodeName gpu-2"), "%s", why);
    p.node_name = "gpu-1";
    p.selector = sel;
    p.nselector = 1;
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
    cr_expect_str_eq(why, "node(s) didn't match nodeSelector cloud.google.com/gke-accelerator="
                          "nvidia-l4");
    cr_expect(pol_pod_sched_constrains(&p));
}

Test(pol_admit, required_affinity_operators_and_fields)
{
    static const char *const h100[] = {"nvidia-h100-80gb", "nvidia-b200"};
    static const char *const seven[] = {"7"};
    static const char *const nine[] = {"9"};
    static const char *const me[] = {"gpu-1"};
    static const struct pol_toleration all = {"", true, NULL, NULL};
    struct pol_sel_req in = {"cloud.google.com/gke-accelerator", POL_SEL_IN, h100, 2, false};
    struct pol_sel_req notin = {"cloud.google.com/gke-accelerator", POL_SEL_NOT_IN, h100, 2, false};
    struct pol_sel_req gt = {"nvidia.com/gpu.count", POL_SEL_GT, seven, 1, false};
    struct pol_sel_req lt = {"nvidia.com/gpu.count", POL_SEL_LT, nine, 1, false};
    struct pol_sel_req exists = {"nvidia.com/gpu.count", POL_SEL_EXISTS, NULL, 0, false};
    struct pol_sel_req absent = {"node-role.kubernetes.io/control-plane", POL_SEL_NOT_EXISTS, NULL,
                                 0, false};
    struct pol_sel_req field = {"metadata.name", POL_SEL_IN, me, 1, true};
    struct pol_sel_req and[] = {in, gt, lt, exists, absent, field};
    struct pol_sel_term t_and = {and, 6};
    struct pol_sel_term t_not = {&notin, 1};
    struct pol_sel_term empty = {NULL, 0};
    struct pol_sel_term ors[] = {t_not, t_and};
    struct pol_pod_sched p = {
        .affinity = true, .terms = ors, .nterms = 2, .tols = &all, .ntols = 1};
    char why[200];

    cr_expect(pol_admit(&p, &gpu, why, sizeof(why)), "%s", why);
    p.terms = &t_not; /* NotIn fails, and the terms are ORed: nothing else holds */
    p.nterms = 1;
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
    cr_expect(strstr(why, "required node affinity"), "%s", why);
    p.terms = &empty; /* an empty term matches no node */
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
    and[1].values = nine; /* 8 > 9 fails */
    p.terms = &t_and;
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
}

Test(pol_admit, taints_against_tolerations)
{
    static const struct pol_toleration equal = {"nvidia.com/gpu", false, "present", "NoSchedule"};
    static const struct pol_toleration wrong = {"nvidia.com/gpu", false, "absent", NULL};
    static const struct pol_toleration exists = {"nvidia.com/gpu", true, NULL, NULL};
    static const struct pol_toleration noexec = {"nvidia.com/gpu", true, NULL, "NoExecute"};
    struct pol_pod_sched p = {0};
    char why[200];

    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
    cr_expect_str_eq(why, "node(s) had untolerated taint {nvidia.com/gpu=present: NoSchedule}");
    cr_expect(pol_admit(&p, &soft, why, sizeof(why)), "PreferNoSchedule does not filter");
    p.tols = &equal;
    p.ntols = 1;
    cr_expect(pol_admit(&p, &gpu, why, sizeof(why)));
    p.tols = &wrong;
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)));
    p.tols = &exists;
    cr_expect(pol_admit(&p, &gpu, why, sizeof(why)));
    p.tols = &noexec;
    cr_expect_not(pol_admit(&p, &gpu, why, sizeof(why)), "another effect");
    cr_expect_not(pol_pod_sched_constrains(&p), "tolerations alone constrain nothing");
}

Test(pol_admit, summary_counts_the_reasons)
{
    static const struct topo_kv sel[] = {{"kubernetes.io/hostname", "gpu-1"}};
    struct pol_node_meta nodes[3] = {gpu, soft, soft};
    struct pol_pod_sched p = {.selector = sel, .nselector = 1};
    unsigned char ok[3];
    char why[300];

    cr_expect_eq(pol_admit_nodes(&p, nodes, 3, ok, why, sizeof(why)), 0);
    cr_expect_str_eq(why, "0/3 nodes admit it (kube-scheduler's filters): 1 node(s) had "
                          "untolerated taint {nvidia.com/gpu=present: NoSchedule}, 2 node(s) "
                          "didn't match nodeSelector kubernetes.io/hostname=gpu-1");
    nodes[0].ntaints = 0;
    cr_expect_eq(pol_admit_nodes(&p, nodes, 3, ok, why, sizeof(why)), 1);
    cr_expect(ok[0] && !ok[1] && !ok[2]);
}
