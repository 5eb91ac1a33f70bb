/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_label.c - `topox label --dry-run` over the hwloc XML fixtures (labels and
 * json output), the hwloc 3.0 file's one-line error, the host run, --help, usage errors and the
 * inventory dry run against a NodeList file. Black-box: runs the real binary. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define HW TPX_FIXTURES "/hwloc/"

static void expect_lines(const char *out, const char *const *lines, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        char want[256];

        snprintf(want, sizeof(want), "%s\n", lines[i]);
        cr_expect(strstr(out, want) != NULL, "%s: missing '%s' in:\n%s", what, lines[i], out);
    }
}

Test(label, dry_run_labels_for_each_fixture)
{
    static const struct {
        const char *file;
        const char *lines[8];
    } cases[] = {
        {"nvidia-dgx2h-16xV100-12nvswitch.xml",
         {"topox.io/accelerator=nvidia", "topox.io/accelerator-count=16",
          "topox.io/interconnect=nvswitch", "topox.io/domain-size=16",
          "topox.io/domains-per-node=1", "topox.io/numa-nodes=2", "topox.io/rdma-nics=0",
          "topox.io/gpu-nic-affinity=none"}},
        {"dell-xe8640-4xH100-nvlink-mlx5.xml",
         {"topox.io/accelerator=nvidia", "topox.io/accelerator-count=4",
          "topox.io/interconnect=nvlink", "topox.io/domain-size=4", "topox.io/domains-per-node=1",
          "topox.io/numa-nodes=8", "topox.io/rdma-nics=4", "topox.io/gpu-nic-affinity=none"}},
        {"aws-g4dn-metal-8xT4-pcie.xml",
         {"topox.io/accelerator=nvidia", "topox.io/accelerator-count=8",
          "topox.io/interconnect=pcie", "topox.io/domain-size=8", "topox.io/domains-per-node=1",
          "topox.io/numa-nodes=2", "topox.io/rdma-nics=1", "topox.io/gpu-nic-affinity=none"}},
        {"hpe-tuolumne-4xMI300A-spx-xgmi.xml",
         {"topox.io/accelerator=amd", "topox.io/accelerator-count=4", "topox.io/interconnect=xgmi",
          "topox.io/domain-size=4", "topox.io/domains-per-node=1", "topox.io/numa-nodes=4",
          "topox.io/rdma-nics=0", "topox.io/gpu-nic-affinity=none"}},
        {"supermicro-x9drg-2xK40m-radeon-mlx5-pcie.xml",
         {"topox.io/accelerator=nvidia", "topox.io/accelerator-count=3",
          "topox.io/interconnect=pcie", "topox.io/domain-size=3", "topox.io/domains-per-node=1",
          "topox.io/numa-nodes=2", "topox.io/rdma-nics=1", "topox.io/gpu-nic-affinity=none"}},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512];
        struct run_result r;

        snprintf(path, sizeof(path), "%s%s", HW, cases[i].file);
        cr_assert_eq(run_topox((const char *[]){"label", "--dry-run", "--topology-xml", path, NULL},
                               NULL, &r),
                     0);
        cr_expect_eq(r.status, 0, "%s: %s", cases[i].file, r.err);
        expect_lines(r.out, cases[i].lines, 8, cases[i].file);
        cr_expect(strstr(r.out, "annotation topox.io/topology={\"version\":1,") != NULL, "%s",
                  cases[i].file);
        run_result_release(&r);
    }
}

Test(label, dry_run_json_has_labels_annotation_and_parsed_topology)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"label", "--dry-run", "-o", "json", "--topology-xml",
                                            HW "dell-xe8640-4xH100-nvlink-mlx5.xml", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"topox.io/interconnect\": \"nvlink\"") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"topox.io/topology\": \"{\\\"version\\\":1,") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"pci\": \"0000:4e:00.0\"") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"nic\": \"mlx5_0\"") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"model\": \"NVIDIA H100 80GB HBM3\"") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"node\": null") != NULL, "%s", r.out);
    run_result_release(&r);
}

Test(label, hwloc3_xml_exit_2_with_one_line_error)
{
    struct run_result r;

    cr_assert_eq(
        run_topox((const char *[]){"label", "--dry-run", "--topology-xml",
                                   HW "nvidia-dgx2h-16xV100-12nvswitch.v3format.xml", NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 2);
    cr_expect_eq(r.out_len, 0, "%s", r.out);
    cr_expect(strstr(r.err, "nvidia-dgx2h-16xV100-12nvswitch.v3format.xml") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "format version 3.0") != NULL, "%s", r.err);
    cr_expect(r.err_len > 0 && strchr(r.err, '\n') == r.err + r.err_len - 1, "not one line: %s",
              r.err);
    run_result_release(&r);
}

Test(label, host_dry_run_works_without_accelerators)
{
    struct run_result r;

    /* The build host has no accelerators; the run must still succeed and say 0. */
    cr_assert_eq(run_topox((const char *[]){"label", "--dry-run", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "topox.io/accelerator-count=") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "topox.io/numa-nodes=") != NULL, "%s", r.out);
    run_result_release(&r);
}

Test(label, help_and_usage_errors)
{
    const char *const *const bad[] = {
        (const char *[]){"label", "--frobnicate", NULL},
        (const char *[]){"label", "-o", "yaml", "--dry-run", NULL},
        (const char *[]){"label", "--interval", "soon", NULL},
        (const char *[]){"label", "--topology-xml", "a.xml", "--fsroot", "/", NULL},
        (const char *[]){"label", "--nodes", "n.json", NULL},
        (const char *[]){"label", "--topology-xml", NULL},
        (const char *[]){"label", "--interconnect", "infiniband", NULL},
        (const char *[]){"label", "--domain-size", "0", NULL},
        (const char *[]){"label", "--domain-size", "-4", NULL},
        (const char *[]){"label", "--inventory", "i.csv", "--domain-size", "4", NULL},
    };
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"label", "--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: topox label") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "--inventory") != NULL);
    run_result_release(&r);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(run_topox(bad[i], NULL, &r), 0);
        cr_expect_eq(r.status, 2, "case %zu: %d %s", i, r.status, r.err);
        cr_expect(strstr(r.err, "usage: topox label") != NULL, "case %zu: %s", i, r.err);
        cr_expect_eq(r.out_len, 0, "case %zu", i);
        run_result_release(&r);
    }
}

Test(label, what_hwloc_cannot_see_is_set_by_flags)
{
    const char *xml = TPX_FIXTURES "/hwloc/aws-g4dn-metal-8xT4-pcie.xml";
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"label", "--dry-run", "--topology-xml", xml,
                                            "--interconnect", "hccs", "--domain-size", "4", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "topox.io/interconnect=hccs\n") &&
                  strstr(r.out, "topox.io/domain-size=4\n") &&
                  strstr(r.out, "topox.io/domains-per-node=2\n") &&
                  strstr(r.out, "\"overridden\":true"),
              "%s", r.out);
    run_result_release(&r);
    /* a size that does not divide the 8 GPUs: one line, exit 2 */
    cr_assert_eq(run_topox((const char *[]){"label", "--dry-run", "--topology-xml", xml,
                                            "--domain-size", "3", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "domain size of 3 does not divide the 8 nvidia accelerators"), "%s",
              r.err);
    cr_expect_eq(r.out_len, 0);
    run_result_release(&r);
}

Test(label, missing_xml_names_the_file)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"label", "--dry-run", "--topology-xml",
                                            "/nonexistent/topo.xml", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "/nonexistent/topo.xml") != NULL, "%s", r.err);
    run_result_release(&r);
}

Test(label, inventory_dry_run_against_a_nodelist)
{
    char inv[] = "/tmp/topox-inv-XXXXXX.csv";
    char nodes[] = "/tmp/topox-nodes-XXXXXX.json";
    static const char inv_text[] = "node,rack,block\ngpu-1,r1,b1\ngpu-2,r2,b1\nghost,r9,b9\n";
    static const char nodes_text[] =
        "{\"kind\":\"NodeList\",\"items\":["
        "{\"metadata\":{\"name\":\"gpu-1\",\"labels\":{\"topox.io/rack\":\"r1\","
        "\"topox.io/block\":\"b1\"}}},"
        "{\"metadata\":{\"name\":\"gpu-2\",\"labels\":{\"topox.io/rack\":\"old\"}}},"
        "{\"metadata\":{\"name\":\"cpu-1\"}}]}";
    int fd;
    struct run_result r;

    fd = mkstemps(inv, 4);
    cr_assert_eq(write(fd, inv_text, sizeof(inv_text) - 1), (ssize_t)sizeof(inv_text) - 1);
    close(fd);
    fd = mkstemps(nodes, 5);
    cr_assert_eq(write(fd, nodes_text, sizeof(nodes_text) - 1), (ssize_t)sizeof(nodes_text) - 1);
    close(fd);
    cr_assert_eq(run_topox((const char *[]){"label", "--inventory", inv, "--nodes", nodes,
                                            "--dry-run", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_lines(r.out,
                 (const char *const[]){
                     "gpu-1 topox.io/rack=r1 topox.io/block=b1 (unchanged)",
                     "gpu-2 topox.io/rack=r2 topox.io/block=b1 (would change)",
                     "ghost topox.io/rack=r9 topox.io/block=b9 (not in the cluster)",
                     "# cpu-1: in the cluster, not in the inventory",
                 },
                 4, "inventory");
    cr_expect(strstr(r.err, "1 inventory nodes are not in the cluster, 1 cluster nodes") != NULL,
              "%s", r.err);
    run_result_release(&r);

    cr_assert_eq(run_topox((const char *[]){"label", "--inventory", inv, "--nodes", nodes,
                                            "--dry-run", "-o", "json", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"not_in_cluster\": [\n    \"ghost\"\n  ]") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"not_in_inventory\": [\n    \"cpu-1\"\n  ]") != NULL, "%s", r.out);
    run_result_release(&r);
    unlink(inv);
    unlink(nodes);
}
