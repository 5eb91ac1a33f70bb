/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_schedfacts.c - Pod and Node JSON -> kube-scheduler's filter facts
 * (objects/schedfacts.h) on real objects: Grove's e2e PodCliqueSet (required node affinity In, an
 * Equal toleration) and a GKE Node (labels, hostname), and the admission plan keeps per pod. */
#include <criterion/criterion.h>
#include <string.h>

#include "objects/manifest.h"
#include "objects/schedfacts.h"
#include "objects/yamljson.h"

Test(obj_schedfacts, grove_affinity_and_toleration_are_read)
{
    struct obj_manifest m;
    struct obj_pod_sched ps;
    struct tpx_err err = TPX_ERR_INIT;
    const struct pol_sel_req *q;

    obj_manifest_init(&m);
    cr_assert_eq(obj_manifest_add_file(&m,
                                       TPX_FIXTURES "/manifests/"
                                                    "grove-podcliqueset-tas-hierarchy-prefill-"
                                                    "decode.yaml",
                                       &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_pod_sched_from_json(obj_manifest_pod_template(&m, 0), &ps, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(ps.s.affinity);
    cr_assert_eq(ps.s.nterms, 1);
    cr_assert_eq(ps.s.terms[0].nreqs, 1);
    q = &ps.s.terms[0].reqs[0];
    cr_expect_str_eq(q->key, "node_role.e2e.grove.nvidia.com");
    cr_expect_eq(q->op, POL_SEL_IN);
    cr_assert_eq(q->nvalues, 1);
    cr_expect_str_eq(q->values[0], "agent");
    cr_assert_eq(ps.s.ntols, 1);
    cr_expect_not(ps.s.tols[0].exists);
    cr_expect_str_eq(ps.s.tols[0].value, "agent");
    cr_expect_str_eq(ps.s.tols[0].effect, "NoSchedule");
    cr_expect(pol_pod_sched_constrains(&ps.s));
    obj_pod_sched_release(&ps);
    obj_manifest_release(&m);
}

Test(obj_schedfacts, gke_node_labels_and_the_admission_of_each_pod)
{
    struct obj_yaml_docs d;
    struct obj_node_meta nm;
    struct obj_manifest m;
    struct obj_admission a;
    struct tpx_err err = TPX_ERR_INIT;
    bool host = false;

    cr_assert_eq(obj_yaml_load_file(TPX_FIXTURES
                                    "/nodes/k8s-apimachinery-testdata-gke-node-full.yaml",
                                    1 << 20, &d, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_node_meta_from_json(d.docs[0], &nm, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(nm.m.name, "node-default-pool-something");
    for (size_t i = 0; i < nm.m.nlabels; i++)
        host = host || (strcmp(nm.m.labels[i].key, "kubernetes.io/hostname") == 0 &&
                        strcmp(nm.m.labels[i].value, "node-default-pool-something") == 0);
    cr_expect(host);
    cr_expect_eq(nm.m.ntaints, 0);
    /* Grove's cliques require node_role.e2e.grove.nvidia.com=agent: the GKE node has no such
     * label, so no node admits any of its pods, and the reason names the affinity */
    obj_manifest_init(&m);
    cr_assert_eq(obj_manifest_add_file(&m,
                                       TPX_FIXTURES "/manifests/"
                                                    "grove-podcliqueset-tas-hierarchy-prefill-"
                                                    "decode.yaml",
                                       &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_admit(&m, &nm, 1, false, &a, &err), TPX_OK, "%s", err.msg);
    cr_assert_not_null(a.pod_mask[0]);
    cr_expect_eq(a.pod_mask[0][0], 0);
    cr_expect(strstr(a.pod_why[0], "required node affinity (node_role.e2e.grove.nvidia.com)"), "%s",
              a.pod_why[0]);
    cr_expect(m.pol_replicas[0].admit == a.pod_mask + m.replica_first_pod[0]);
    obj_admission_release(&a);
    /* the same on a synthetic node: the label key is unknown there, so it is not checked */
    cr_assert_eq(obj_manifest_admit(&m, &nm, 1, true, &a, &err), TPX_OK, "%s", err.msg);
    cr_expect_null(a.pod_mask[0]);
    cr_expect(strstr(a.note, "node_role.e2e.grove.nvidia.com"), "%s", a.note);
    obj_admission_release(&a);
    obj_manifest_release(&m);
    obj_node_meta_release(&nm);
    obj_yaml_docs_release(&d);
}
