/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/topology/test_discover.c - hwloc discovery over every XML fixture (expected values
 * written down by reading each file), the sysfs fsroot fixture, synthetic XML topologies, and the
 * pure summary/label/annotation code. Never the build host. */
#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define TPX_HAVE_LSAN 1
#else
#define TPX_HAVE_LSAN 0
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topology/discover.h"

#define HW TPX_FIXTURES "/hwloc/"

static const char *label(const struct topo_label_set *ls, const char *name)
{
    char key[TOPO_LABEL_KEY_MAX];

    snprintf(key, sizeof(key), "%s%s", TOPO_LABEL_PREFIX, name);
    for (size_t i = 0; i < ls->n; i++) {
        if (strcmp(ls->v[i].key, key) == 0)
            return ls->v[i].value;
    }
    return NULL;
}

/*
 * What each fixture holds, read from the XML (osdev/pcidev/distances parts):
 * - DGX-2H: 16 PCI 10de:1db8 class 0302 (nvml0-15), 11 PCI 10de:1ac2 class 0680 + 1 all-zero PCI
 *   with subtype NVSwitch = 12 switches; NVLinkBandwidth hetero matrix links each GPU to the 6
 *   switches of its baseboard; 2 NUMA nodes; no OpenFabrics devices.
 * - XE8640: 4 PCI 10de:2330 (H100), NVLinkBandwidth 4x4 with 150000 between all GPUs; 8 NUMA nodes
 *   (SNC); mlx5_0..3 OpenFabrics; GPU cb:00.0 (NUMA 7) has no NIC on its switch or NUMA node.
 * - g4dn.metal: 8 PCI 10de:1eb8 (T4) under root ports, no GPU distances; 2 NUMA nodes; one EFA
 *   rdmap197s0 on NUMA 1 behind its own switch, so GPUs on NUMA 0 share nothing with it.
 * - MI300A: 4 PCI 1002:74a0 class 1200 (rsmi0-3), XGMIBandwidth 4x4 all linked; 4 NUMA nodes;
 *   Slingshot hsi* NICs are Net, not OpenFabrics: 0 RDMA NICs.
 * - Supermicro: 3 PCI 10de:1094 class 0302 + 1 AMD 1002:6798 class 0300 (Radeon) + a Matrox VGA
 *   (not an accelerator); ConnectX-4 mlx5_0 on NUMA 1 sharing root port 80:03.0 with GPU
 *   84:00.0; GPU 03:00.0 is on NUMA 0 with no NIC. Primary vendor nvidia (3 of 4).
 */
struct fixture_case {
    const char *file;
    const char *vendor;
    const char *count;
    const char *interconnect;
    const char *domain_size;
    const char *domains;
    const char *numa;
    const char *rdma;
    const char *affinity;
    const char *nvlink_full; /* topox.io/nvlink-full, or NULL when the node has no NVLink */
    unsigned nvswitches;
    size_t n_accels; /* all vendors */
    const char *first_busid;
    const char *first_model;
    int first_numa;
};

static const struct fixture_case fixtures[] = {
    {"nvidia-dgx2h-16xV100-12nvswitch.xml", "nvidia", "16", "nvswitch", "16", "1", "2", "0", "none",
     "true", 12, 16, "0000:34:00.0", "Tesla V100-SXM3-32GB-H", 0},
    {"dell-xe8640-4xH100-nvlink-mlx5.xml", "nvidia", "4", "nvlink", "4", "1", "8", "4", "none",
     "true", 0, 4, "0000:4e:00.0", "NVIDIA H100 80GB HBM3", 3},
    {"aws-g4dn-metal-8xT4-pcie.xml", "nvidia", "8", "pcie", "8", "1", "2", "1", "none", NULL, 0, 8,
     "0000:18:00.0", "Tesla T4", 0},
    {"hpe-tuolumne-4xMI300A-spx-xgmi.xml", "amd", "4", "xgmi", "4", "1", "4", "0", "none", NULL, 0,
     4, "0000:02:00.0", "Aqua Vanjaram [Instinct MI300A]", 0},
    {"supermicro-x9drg-2xK40m-radeon-mlx5-pcie.xml", "nvidia", "3", "pcie", "3", "1", "2", "1",
     "none", NULL, 0, 4, "0000:03:00.0", "Tesla M2075 Dual-Slot Computing Processor Module", 0},
    /* IBM Minsky: NVLink pairs {0,1} and {2,3}, each pair also linked to its own POWER8 package in
     * a heterogeneous matrix, no NVLink between the pairs and no NVSwitch. */
    {"ibm-minsky-4xP100-nvlink-pairs.xml", "nvidia", "4", "nvlink", "2", "2", "2", "0", "none",
     "true", 0, 4, "0002:01:00.0", "Tesla P100-SXM2-16GB", 0},
};

Test(topo_discover, every_fixture_gives_the_labels_read_from_its_xml)
{
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        const struct fixture_case *c = &fixtures[i];
        char path[512];
        struct topo_discovery d;
        struct topo_label_set ls;
        struct tpx_err err = TPX_ERR_INIT;
        enum tpx_code rc;

        snprintf(path, sizeof(path), "%s%s", HW, c->file);
        rc = topo_discover(TOPO_SOURCE_XML, path, &d, &err);
        cr_assert_eq(rc, TPX_OK, "%s: %s", c->file, err.msg);
        topo_discovery_labels(&d, &ls);
        cr_expect_eq(ls.n, c->nvlink_full ? 9 : 8, "%s: %zu labels", c->file, ls.n);
        if (c->nvlink_full)
            cr_expect_str_eq(label(&ls, "nvlink-full"), c->nvlink_full, "%s", c->file);
        cr_expect_str_eq(label(&ls, "accelerator"), c->vendor, "%s", c->file);
        cr_expect_str_eq(label(&ls, "accelerator-count"), c->count, "%s", c->file);
        cr_expect_str_eq(label(&ls, "interconnect"), c->interconnect, "%s", c->file);
        cr_expect_str_eq(label(&ls, "domain-size"), c->domain_size, "%s", c->file);
        cr_expect_str_eq(label(&ls, "domains-per-node"), c->domains, "%s", c->file);
        cr_expect_str_eq(label(&ls, "numa-nodes"), c->numa, "%s", c->file);
        cr_expect_str_eq(label(&ls, "rdma-nics"), c->rdma, "%s", c->file);
        cr_expect_str_eq(label(&ls, "gpu-nic-affinity"), c->affinity, "%s", c->file);
        cr_expect_eq(d.nvswitches, c->nvswitches, "%s: %u switches", c->file, d.nvswitches);
        cr_expect_eq(d.n_accels, c->n_accels, "%s: %zu accelerators", c->file, d.n_accels);
        cr_assert_gt(d.n_accels, 0);
        cr_expect_str_eq(d.accels[0].pci_busid, c->first_busid, "%s", c->file);
        cr_expect_str_eq(d.accels[0].model, c->first_model, "%s", c->file);
        cr_expect_eq(d.accels[0].numa, c->first_numa, "%s", c->file);
        for (size_t k = 0; k < ls.n; k++)
            cr_expect(topo_label_value_valid(ls.v[k].value), "%s: %s='%s'", c->file, ls.v[k].key,
                      ls.v[k].value);
        topo_discovery_release(&d);
    }
}

Test(topo_discover, xe8640_nearest_nic_per_gpu)
{
    static const struct {
        const char *busid, *nic;
        enum topo_affinity aff;
    } want[] = {
        {"0000:4e:00.0", "mlx5_0", TOPO_AFFINITY_PCIE_SWITCH},
        {"0000:5f:00.0", "mlx5_2", TOPO_AFFINITY_PCIE_SWITCH},
        {"0000:cb:00.0", NULL, TOPO_AFFINITY_NONE},
        {"0000:db:00.0", "mlx5_3", TOPO_AFFINITY_PCIE_SWITCH},
    };
    struct topo_discovery d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(topo_discover(TOPO_SOURCE_XML, HW "dell-xe8640-4xH100-nvlink-mlx5.xml", &d, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(d.n_accels, 4);
    for (size_t i = 0; i < 4; i++) {
        const struct topo_accel *a = &d.accels[i];

        cr_expect_str_eq(a->pci_busid, want[i].busid);
        cr_expect_eq(a->nic_affinity, want[i].aff, "%s", a->pci_busid);
        cr_expect(strncmp(a->osdev, "nvml", 4) == 0, "%s named by '%s'", a->pci_busid, a->osdev);
        if (want[i].nic) {
            cr_assert_geq(a->nic, 0, "%s", a->pci_busid);
            cr_expect_str_eq(d.nics[a->nic].name, want[i].nic, "%s", a->pci_busid);
        } else {
            cr_expect_eq(a->nic, -1, "%s", a->pci_busid);
        }
        cr_expect_eq(a->island, 0);
    }
    topo_discovery_release(&d);
}

Test(topo_discover, mixed_vendor_box_keeps_the_radeon_out_of_the_count)
{
    struct topo_discovery d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(
        topo_discover(TOPO_SOURCE_XML, HW "supermicro-x9drg-2xK40m-radeon-mlx5-pcie.xml", &d, &err),
        TPX_OK, "%s", err.msg);
    cr_assert_eq(d.n_accels, 4);
    cr_expect_eq(d.accels[3].vendor, TOPO_VENDOR_AMD);
    cr_expect_str_eq(d.accels[3].pci_busid, "0000:84:00.1");
    cr_expect_not(d.accels[3].primary);
    cr_expect_eq(d.accels[3].island, -1);
    /* 84:00.0 carries cuda0 with GPUModel "Tesla K40m"; it shares root port 80:03.0 with mlx5_0. */
    cr_expect_str_eq(d.accels[2].model, "Tesla K40m");
    cr_expect_str_eq(d.accels[2].osdev, "cuda0");
    cr_expect_eq(d.accels[2].nic_affinity, TOPO_AFFINITY_PCIE_SWITCH);
    cr_expect_eq(d.accels[1].nic_affinity, TOPO_AFFINITY_NUMA);
    cr_expect_eq(d.accels[0].nic_affinity, TOPO_AFFINITY_NONE);
    topo_discovery_release(&d);
}

Test(topo_discover, hwloc3_xml_is_rejected_with_file_and_reason)
{
    struct topo_discovery d;
    struct tpx_err err = TPX_ERR_INIT;
    const char *path = HW "nvidia-dgx2h-16xV100-12nvswitch.v3format.xml";

    cr_assert_eq(topo_discover(TOPO_SOURCE_XML, path, &d, &err), TPX_EPARSE);
    cr_expect(strstr(err.msg, "nvidia-dgx2h-16xV100-12nvswitch.v3format.xml") != NULL, "%s",
              err.msg);
    cr_expect(strstr(err.msg, "format version 3.0") != NULL, "%s", err.msg);
    cr_expect(strchr(err.msg, '\n') == NULL, "%s", err.msg);
    topo_discovery_release(&d);
}

Test(topo_discover, missing_file_and_garbage_fail_cleanly)
{
    char path[] = "/tmp/topox-discover-XXXXXX";
    struct topo_discovery d;
    struct tpx_err err = TPX_ERR_INIT;
    int fd;

    cr_expect_eq(topo_discover(TOPO_SOURCE_XML, HW "no-such.xml", &d, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "no-such.xml") != NULL, "%s", err.msg);
    topo_discovery_release(&d);

    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "not xml at all\n", 15), 15);
    close(fd);
    tpx_err_clear(&err);
    cr_expect_eq(topo_discover(TOPO_SOURCE_XML, path, &d, &err), TPX_EPARSE);
    cr_expect(strstr(err.msg, path) != NULL, "%s", err.msg);
    topo_discovery_release(&d);
    unlink(path);

    tpx_err_clear(&err);
    cr_expect_neq(topo_discover(TOPO_SOURCE_FSROOT, "/nonexistent/fsroot", &d, &err), TPX_OK);
    topo_discovery_release(&d);
}

/* A malformed export that libhwloc 2.9's XML reader leaks on (299 bytes here: the object being
 * imported when a child element is bad, docs/label.md): refused with its name, and the leak is
 * libhwloc's own, which fuzz/lsan.supp keeps out of the leak check (tests/unit/topology/
 * CMakeLists.txt gives it to this binary). The check runs here, in the test's own process: a leak
 * report from Criterion's forked test process does not change its exit status. */
Test(topo_discover, malformed_export_that_hwloc_leaks_on_is_refused)
{
    static const char path[] =
        TPX_SOURCE_DIR "/tests/fuzz/corpus/fuzz_hwloc/hwloc-xml-import-leak.xml";
    struct topo_discovery d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_neq(topo_discover(TOPO_SOURCE_XML, path, &d, &err), TPX_OK);
    cr_expect(strstr(err.msg, "hwloc-xml-import-leak.xml") != NULL, "%s", err.msg);
    topo_discovery_release(&d);
#if TPX_HAVE_LSAN
    cr_expect_eq(__lsan_do_recoverable_leak_check(), 0,
                 "a leak that fuzz/lsan.supp does not cover");
#endif
}

/* hwloc 2.9.0 dereferences a NULL complete_cpuset (SIGSEGV) on an object that has a cpuset but no
 * complete_cpuset (open-mpi/hwloc#783); fuzz_hwloc found it. Such a file is refused before hwloc
 * reads it, naming its line; the untouched object still loads. */
#define CPUSET_XML                                                                                 \
    "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"                                        \
    " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "             \
    "allowed_cpuset=\"0x3\" nodeset=\"0x1\" complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\" "     \
    "gp_index=\"1\">\n"                                                                            \
    "  <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "           \
    "nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\" local_memory=\"1000\"/>\n"            \
    "  <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" "                 \
    "nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"3\"/>\n"                                  \
    "  <object type=\"PU\" os_index=\"1\" cpuset=\"0x2\" %s=\"0x2\" nodeset=\"0x1\" "              \
    "complete_nodeset=\"0x1\" gp_index=\"4\"/>\n"                                                  \
    " </object>\n</topology>\n"

Test(topo_discover, object_with_a_cpuset_but_no_complete_cpuset_is_refused)
{
    static const struct {
        const char *attr;
        enum tpx_code want;
    } cases[] = {{"complete_cpuset", TPX_OK}, {"complete_cp8set", TPX_EPARSE}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[] = "/tmp/topox-discover-XXXXXX";
        struct topo_discovery d;
        struct tpx_err err = TPX_ERR_INIT;
        FILE *f;
        int fd = mkstemp(path);

        cr_assert_geq(fd, 0);
        f = fdopen(fd, "w");
        cr_assert_not_null(f);
        fprintf(f, CPUSET_XML, cases[i].attr);
        fclose(f);
        cr_expect_eq(topo_discover(TOPO_SOURCE_XML, path, &d, &err), cases[i].want, "%s: %s",
                     cases[i].attr, err.msg);
        if (cases[i].want != TPX_OK)
            cr_expect(strstr(err.msg, "line 6: an object with a cpuset but no complete_cpuset"),
                      "%s", err.msg);
        topo_discovery_release(&d);
        unlink(path);
    }
}

/* The captured sysfs tree of a 4-package Intel server. SOURCES.md says it has no RDMA NICs, but
 * its /sys/class/infiniband holds qib0 (a QLogic InfiniBand HCA, PCI 1077 class 0c06 at 43:00.0),
 * which is an RDMA NIC: hwloc and this test count it. */
Test(topo_discover, fsroot_tree_has_no_accelerators_and_one_qlogic_hca)
{
    char dir[] = "/tmp/topox-fsroot-XXXXXX";
    char cmd[1024];
    char root[600];
    struct topo_discovery d;
    struct topo_label_set ls;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof(cmd), "tar xjf '%s/hwloc-fsroot/40intel64-2g2n4c+pci.tar.bz2' -C '%s'",
             TPX_FIXTURES, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(root, sizeof(root), "%s/40intel64-2g2n4c+pci", dir);
    cr_assert_eq(topo_discover(TOPO_SOURCE_FSROOT, root, &d, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(d.count, 0);
    cr_expect_eq(d.n_accels, 0);
    cr_expect_eq(d.numa_nodes, 4);
    cr_expect_eq(d.n_nics, 1);
    if (d.n_nics == 1)
        cr_expect_str_eq(d.nics[0].name, "qib0");
    cr_expect_str_eq(d.source, "fsroot");
    topo_discovery_labels(&d, &ls);
    cr_expect_eq(ls.n, 3);
    cr_expect_str_eq(label(&ls, "accelerator-count"), "0");
    cr_expect_null(label(&ls, "interconnect"));
    cr_expect_null(getenv("HWLOC_FSROOT"), "the environment is restored");
    topo_discovery_release(&d);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

/* ---- synthetic XML topologies ---- */

struct syn_dev {
    const char *pci_type; /* "0302 [10de:2330] [0000:0000] a1" */
    const char *osdev;    /* NULL, or the OS device name */
    int osdev_type;       /* 1 GPU, 3 OpenFabrics, 5 CoProc */
    int numa;             /* 0 or 1 */
    int port;             /* root port number: devices with the same port share a bridge */
};

/* Write a 2-NUMA-node machine with devs behind root ports, and an optional bandwidth matrix over
 * the OS devices of the first n_matrix devices (links[i*n+j] != 0: linked). Returns a malloc'd
 * path. */
static char *write_syn(const struct syn_dev *devs, size_t n, const char *matrix, size_t n_matrix,
                       const int *links)
{
    char *path = strdup("/tmp/topox-syn-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    unsigned gp = 100;

    cr_assert_not_null(f);
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM "
            "\"hwloc2.dtd\">\n<topology version=\"2.0\">\n<object type=\"Machine\" "
            "os_index=\"0\" cpuset=\"0x3\" complete_cpuset=\"0x3\" allowed_cpuset=\"0x3\" "
            "nodeset=\"0x3\" complete_nodeset=\"0x3\" allowed_nodeset=\"0x3\" gp_index=\"1\">\n");
    for (int numa = 0; numa < 2; numa++) {
        fprintf(f,
                "<object type=\"Package\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset="
                "\"0x%x\" nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\">\n",
                numa, 1 << numa, 1 << numa, 1 << numa, 1 << numa, 2 + numa * 10);
        fprintf(f,
                "<object type=\"NUMANode\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset="
                "\"0x%x\" nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\" "
                "local_memory=\"1000000\"/>\n",
                numa, 1 << numa, 1 << numa, 1 << numa, 1 << numa, 3 + numa * 10);
        fprintf(f,
                "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
                "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\"/>\n",
                numa, 1 << numa, 1 << numa, 1 << numa, 1 << numa, 4 + numa * 10);
        fprintf(f,
                "<object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"0-1\" depth=\"0\" "
                "bridge_pci=\"000%d:[00-ff]\">\n",
                5 + numa * 10, numa);
        for (int port = 0; port < 16; port++) {
            bool open = false;

            for (size_t i = 0; i < n; i++) {
                if (devs[i].numa != numa || devs[i].port != port)
                    continue;
                if (!open) {
                    fprintf(f,
                            "<object type=\"Bridge\" gp_index=\"%u\" bridge_type=\"1-1\" "
                            "depth=\"1\" bridge_pci=\"000%d:[%02x-%02x]\" pci_busid="
                            "\"000%d:00:%02x.0\" pci_type=\"0604 [8086:2030] [0000:0000] 00\" "
                            "pci_link_speed=\"0.0\">\n",
                            gp++, numa, port + 1, port + 1, numa, port + 1);
                    open = true;
                }
                fprintf(f,
                        "<object type=\"PCIDev\" gp_index=\"%zu\" pci_busid=\"000%d:%02x:%02zx.0\" "
                        "pci_type=\"%s\" pci_link_speed=\"0.0\">\n",
                        1000 + i, numa, port + 1, i, devs[i].pci_type);
                if (devs[i].osdev)
                    fprintf(f,
                            "<object type=\"OSDev\" gp_index=\"%zu\" name=\"%s\" "
                            "osdev_type=\"%d\"/>\n",
                            2000 + i, devs[i].osdev, devs[i].osdev_type);
                fprintf(f, "</object>\n");
            }
            if (open)
                fprintf(f, "</object>\n");
        }
        fprintf(f, "</object>\n</object>\n");
    }
    fprintf(f, "</object>\n");
    if (matrix) {
        char idx[1024] = "";
        char val[8192] = "";
        size_t il = 0;
        size_t vl = 0;

        for (size_t i = 0; i < n_matrix; i++)
            il += (size_t)snprintf(idx + il, sizeof(idx) - il, "%zu ", 2000 + i);
        for (size_t i = 0; i < n_matrix * n_matrix; i++)
            vl += (size_t)snprintf(val + vl, sizeof(val) - vl, "%d ",
                                   i % (n_matrix + 1) == 0 ? 1000000
                                   : links[i]              ? 150000
                                                           : 0);
        fprintf(f,
                "<distances2 type=\"OSDev\" nbobjs=\"%zu\" kind=\"9\" name=\"%s\" "
                "indexing=\"gp\">\n<indexes length=\"%zu\">%s</indexes>\n<u64values "
                "length=\"%zu\">%s</u64values>\n</distances2>\n",
                n_matrix, matrix, il, idx, vl, val);
    }
    fprintf(f, "</topology>\n");
    cr_assert_eq(fclose(f), 0);
    return path;
}

static void discover_syn(const char *path, struct topo_discovery *d)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(topo_discover(TOPO_SOURCE_XML, path, d, &err), TPX_OK, "%s", err.msg);
}

Test(topo_discover_synthetic, two_nvlink_islands_of_four)
{
    struct syn_dev devs[8];
    int links[64] = {0};
    char names[8][8];
    struct topo_discovery d;
    struct topo_label_set ls;
    char *path;

    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof(names[i]), "nvml%d", i);
        devs[i] = (struct syn_dev){"0302 [10de:20b0] [0000:0000] a1", names[i], 1, i / 4, i};
        for (int j = 0; j < 8; j++)
            links[i * 8 + j] = i != j && i / 4 == j / 4;
    }
    path = write_syn(devs, 8, "NVLinkBandwidth", 8, links);
    discover_syn(path, &d);
    topo_discovery_labels(&d, &ls);
    cr_expect_str_eq(label(&ls, "interconnect"), "nvlink");
    cr_expect_str_eq(label(&ls, "accelerator-count"), "8");
    cr_expect_str_eq(label(&ls, "domain-size"), "4");
    cr_expect_str_eq(label(&ls, "domains-per-node"), "2");
    cr_expect_eq(d.accels[0].island, 0);
    cr_expect_eq(d.accels[4].island, 1);
    topo_discovery_release(&d);
    unlink(path);
    free(path);
}

Test(topo_discover_synthetic, nvlink_pairs_and_one_gpu_outside_the_matrix)
{
    struct syn_dev devs[5];
    int links[16] = {0};
    char names[5][8];
    struct topo_discovery d;
    char *path;

    for (int i = 0; i < 5; i++) {
        snprintf(names[i], sizeof(names[i]), "nvml%d", i);
        devs[i] = (struct syn_dev){"0302 [10de:20b0] [0000:0000] a1", names[i], 1, 0, i};
    }
    links[0 * 4 + 1] = links[1 * 4 + 0] = 1;
    links[2 * 4 + 3] = links[3 * 4 + 2] = 1;
    path = write_syn(devs, 5, "NVLinkBandwidth", 4, links); /* nvml4 is in no matrix */
    discover_syn(path, &d);
    cr_expect_eq(d.fabric, TOPO_FABRIC_NVLINK);
    cr_expect_eq(d.domain_size, 2);
    cr_expect_eq(d.domains_per_node, 2);
    cr_expect_eq(d.islands, 3);
    topo_discovery_release(&d);
    unlink(path);
    free(path);
}

/* DGX-1 style hybrid cube-mesh: two fully linked quads plus the links i <-> i+4, so GPU 0 has no
 * link of its own to GPUs 5, 6 and 7. One island of 8 (a ring all-reduce runs over NVLink), not
 * fully connected. */
Test(topo_discover_synthetic, hybrid_cube_mesh_is_one_island_not_fully_connected)
{
    struct syn_dev devs[8];
    int links[64] = {0};
    char names[8][8];
    struct topo_discovery d;
    struct topo_label_set ls;
    char *path;

    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof(names[i]), "nvml%d", i);
        devs[i] = (struct syn_dev){"0302 [10de:1db1] [0000:0000] a1", names[i], 1, i / 4, i};
        for (int j = 0; j < 8; j++)
            links[i * 8 + j] = i != j && (i / 4 == j / 4 || i % 4 == j % 4);
    }
    path = write_syn(devs, 8, "NVLinkBandwidth", 8, links);
    discover_syn(path, &d);
    topo_discovery_labels(&d, &ls);
    cr_expect_str_eq(label(&ls, "interconnect"), "nvlink");
    cr_expect_str_eq(label(&ls, "domain-size"), "8");
    cr_expect_str_eq(label(&ls, "domains-per-node"), "1");
    cr_expect_str_eq(label(&ls, "nvlink-full"), "false");
    cr_expect_eq(d.islands_full, false);
    cr_expect_eq(d.min_link_bw, 150000);
    cr_expect_eq(d.link_bw[0 * 8 + 4], 150000, "0-4 is a cube edge");
    cr_expect_eq(d.link_bw[0 * 8 + 5], 0, "0-5 is not");
    topo_discovery_release(&d);
    unlink(path);
    free(path);
}

/* The islands' wiring from a hand-built link matrix: full pairs, a missing pair, and the slowest
 * link; on a switch fabric, the smallest bandwidth into the switches. */
Test(topo_discovery_summarize, islands_full_and_slowest_link)
{
    struct topo_accel acc[4];
    unsigned long long bw[16] = {0};
    struct topo_discovery d;

    memset(acc, 0, sizeof(acc));
    for (int i = 0; i < 4; i++) {
        acc[i].vendor = TOPO_VENDOR_NVIDIA;
        acc[i].link = TOPO_LINK_NVLINK;
        acc[i].link_group = 1;
        acc[i].nic = -1;
    }
    /* a triangle 0-1-2 at 50 GB/s plus 2-3 at 25 GB/s: one island, 0-3 and 1-3 unlinked */
    bw[0 * 4 + 1] = bw[1 * 4 + 0] = bw[0 * 4 + 2] = bw[2 * 4 + 0] = 50000;
    bw[1 * 4 + 2] = bw[2 * 4 + 1] = 50000;
    bw[2 * 4 + 3] = bw[3 * 4 + 2] = 25000;
    memset(&d, 0, sizeof(d));
    d.accels = acc;
    d.n_accels = 4;
    d.link_bw = bw;
    topo_discovery_summarize(&d);
    cr_expect_eq(d.fabric, TOPO_FABRIC_NVLINK);
    cr_expect_eq(d.domain_size, 4);
    cr_expect_eq(d.islands_full, false);
    cr_expect_eq(d.min_link_bw, 25000);

    /* link the rest: now every pair is linked */
    bw[0 * 4 + 3] = bw[3 * 4 + 0] = bw[1 * 4 + 3] = bw[3 * 4 + 1] = 40000;
    topo_discovery_summarize(&d);
    cr_expect_eq(d.islands_full, true);
    cr_expect_eq(d.min_link_bw, 25000);

    /* two islands {0,1} {2,3}: pairs across islands do not count */
    acc[2].link_group = acc[3].link_group = 2;
    topo_discovery_summarize(&d);
    cr_expect_eq(d.domain_size, 2);
    cr_expect_eq(d.domains_per_node, 2);
    cr_expect_eq(d.islands_full, true);
    cr_expect_eq(d.min_link_bw, 25000);

    /* an NVSwitch fabric: every GPU on it is reached; the slowest is the one with least into it */
    d.link_bw = NULL;
    d.switch_in_matrix = true;
    for (int i = 0; i < 4; i++) {
        acc[i].link_group = 1;
        acc[i].via_switch = true;
        acc[i].switch_bw = i == 3 ? 100000 : 150000;
    }
    topo_discovery_summarize(&d);
    cr_expect_eq(d.fabric, TOPO_FABRIC_NVSWITCH);
    cr_expect_eq(d.islands_full, true);
    cr_expect_eq(d.min_link_bw, 100000);
}

Test(topo_discover_synthetic, xgmi_matrix_without_links_is_pcie)
{
    struct syn_dev devs[2] = {
        {"1200 [1002:74a1] [0000:0000] 00", "rsmi0", 1, 0, 0},
        {"1200 [1002:74a1] [0000:0000] 00", "rsmi1", 1, 1, 0},
    };
    int links[4] = {0};
    struct topo_discovery d;
    char *path = write_syn(devs, 2, "XGMIBandwidth", 2, links);

    discover_syn(path, &d);
    cr_expect_eq(d.vendor, TOPO_VENDOR_AMD);
    cr_expect_eq(d.fabric, TOPO_FABRIC_PCIE);
    cr_expect_eq(d.domain_size, 2);
    cr_expect_eq(d.domains_per_node, 1);
    topo_discovery_release(&d);
    unlink(path);
    free(path);
}

Test(topo_discover_synthetic, vendors_and_classes)
{
    /* Ascend 910 (19e5 class 1200), Gaudi (1da3), Intel GPU Max (8086 class 0380), plus things that
     * are not accelerators: Intel QAT (8086 class 0b40), Huawei NIC (19e5 class 0200), Matrox
     * VGA, an NVSwitch (10de class 0680), an AMD audio function (1002 class 0403). */
    static const struct {
        const char *pci_type;
        enum topo_vendor want; /* NONE: not an accelerator */
    } cases[] = {
        {"1200 [19e5:d801] [0000:0000] 20", TOPO_VENDOR_HUAWEI},
        {"1200 [1da3:1020] [0000:0000] 01", TOPO_VENDOR_HABANA},
        {"0380 [8086:0bd5] [0000:0000] 2f", TOPO_VENDOR_INTEL},
        {"0b40 [8086:4940] [0000:0000] 40", TOPO_VENDOR_NONE},
        {"0200 [19e5:a222] [0000:0000] 20", TOPO_VENDOR_NONE},
        {"0300 [102b:0536] [0000:0000] 04", TOPO_VENDOR_NONE},
        {"0680 [10de:22a3] [0000:0000] a1", TOPO_VENDOR_NONE},
        {"0403 [1002:ab38] [0000:0000] 00", TOPO_VENDOR_NONE},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct syn_dev dev = {cases[i].pci_type, NULL, 0, 0, 0};
        struct topo_discovery d;
        char *path = write_syn(&dev, 1, NULL, 0, NULL);

        discover_syn(path, &d);
        if (cases[i].want == TOPO_VENDOR_NONE) {
            cr_expect_eq(d.n_accels, 0, "case %zu (%s)", i, cases[i].pci_type);
        } else {
            cr_expect_eq(d.n_accels, 1, "case %zu (%s)", i, cases[i].pci_type);
            cr_expect_eq(d.vendor, cases[i].want, "case %zu", i);
            cr_expect_eq(d.fabric, TOPO_FABRIC_PCIE, "case %zu", i);
        }
        topo_discovery_release(&d);
        unlink(path);
        free(path);
    }
}

Test(topo_discover_synthetic, nvswitch_without_matrix_and_nic_on_same_switch)
{
    struct syn_dev devs[4] = {
        {"0302 [10de:2330] [0000:0000] a1", "nvml0", 1, 0, 0},
        {"0207 [15b3:1021] [0000:0000] 00", "mlx5_0", 3, 0, 0},
        {"0302 [10de:2330] [0000:0000] a1", "nvml1", 1, 1, 0},
        {"0680 [10de:22a3] [0000:0000] a1", NULL, 0, 1, 3},
    };
    struct topo_discovery d;
    char *path = write_syn(devs, 4, NULL, 0, NULL);

    discover_syn(path, &d);
    cr_expect_eq(d.nvswitches, 1);
    cr_expect_eq(d.fabric, TOPO_FABRIC_NVSWITCH);
    cr_expect_eq(d.domain_size, 2);
    cr_expect_eq(d.accels[0].nic_affinity, TOPO_AFFINITY_PCIE_SWITCH);
    cr_expect_eq(d.accels[1].nic_affinity, TOPO_AFFINITY_NONE);
    cr_expect_eq(d.affinity, TOPO_AFFINITY_NONE);
    topo_discovery_release(&d);
    unlink(path);
    free(path);
}

/* ---- pure code ---- */

Test(topo_discovery_summarize, hand_built_results)
{
    struct topo_accel acc[5];
    struct topo_nic nic = {"mlx5_0", "0000:01:00.0", 0};
    struct topo_discovery d;

    memset(acc, 0, sizeof(acc));
    for (int i = 0; i < 5; i++) {
        acc[i].vendor = i < 3 ? TOPO_VENDOR_AMD : TOPO_VENDOR_NVIDIA;
        acc[i].link = i < 3 ? TOPO_LINK_XGMI : TOPO_LINK_NONE;
        acc[i].link_group = i < 2 ? 7 : -1; /* amd 0 and 1 linked, amd 2 alone */
        acc[i].nic = 0;
        acc[i].nic_affinity = i == 2 ? TOPO_AFFINITY_NUMA : TOPO_AFFINITY_PCIE_SWITCH;
    }
    memset(&d, 0, sizeof(d));
    d.accels = acc;
    d.n_accels = 5;
    d.nics = &nic;
    d.n_nics = 1;
    topo_discovery_summarize(&d);
    cr_expect_eq(d.vendor, TOPO_VENDOR_AMD);
    cr_expect_eq(d.count, 3);
    cr_expect_eq(d.fabric, TOPO_FABRIC_XGMI);
    cr_expect_eq(d.domain_size, 2);
    cr_expect_eq(d.domains_per_node, 1);
    cr_expect_eq(d.islands, 2);
    cr_expect_eq(d.affinity, TOPO_AFFINITY_NUMA);
    cr_expect_eq(acc[3].island, -1);
    topo_discovery_summarize(&d); /* idempotent */
    cr_expect_eq(d.islands, 2);

    /* A tie between vendors goes to the first in enum order (nvidia before amd). */
    acc[2].vendor = TOPO_VENDOR_NVIDIA;
    acc[0].vendor = TOPO_VENDOR_HABANA;
    topo_discovery_summarize(&d);
    cr_expect_eq(d.vendor, TOPO_VENDOR_NVIDIA);
    cr_expect_eq(d.count, 3);
    cr_expect_eq(d.fabric, TOPO_FABRIC_PCIE);
    cr_expect_eq(d.domain_size, 3);

    /* No NICs: affinity none whatever the accelerators say. */
    d.n_nics = 0;
    topo_discovery_summarize(&d);
    cr_expect_eq(d.affinity, TOPO_AFFINITY_NONE);
}

Test(topo_discovery_override, hccs_rings_of_four_in_pci_order)
{
    struct topo_accel acc[9];
    struct topo_discovery d;
    struct topo_label_set ls;
    struct tpx_err err = TPX_ERR_INIT;

    /* 8 Ascend NPUs on PCIe as hwloc sees them, plus a VGA-class NVIDIA card that is not primary */
    memset(acc, 0, sizeof(acc));
    for (int i = 0; i < 9; i++) {
        acc[i].vendor = i < 8 ? TOPO_VENDOR_HUAWEI : TOPO_VENDOR_NVIDIA;
        acc[i].link_group = -1;
        acc[i].nic = -1;
    }
    memset(&d, 0, sizeof(d));
    d.accels = acc;
    d.n_accels = 9;
    topo_discovery_summarize(&d);
    cr_assert_eq(d.fabric, TOPO_FABRIC_PCIE);
    cr_assert_eq(d.domain_size, 8);

    cr_expect_eq(topo_discovery_override(&d, TOPO_FABRIC_HCCS, 3, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "3") && strstr(err.msg, "8 huawei"), "%s", err.msg);
    cr_expect_eq(d.domain_size, 8, "a refused override changes nothing");
    cr_expect_eq(d.fabric, TOPO_FABRIC_PCIE);
    cr_expect(!d.overridden);

    tpx_err_clear(&err);
    cr_assert_eq(topo_discovery_override(&d, TOPO_FABRIC_HCCS, 4, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(d.fabric, TOPO_FABRIC_HCCS);
    cr_expect_eq(d.domain_size, 4);
    cr_expect_eq(d.domains_per_node, 2);
    cr_expect_eq(d.islands, 2);
    cr_expect_eq(acc[0].island, 0);
    cr_expect_eq(acc[3].island, 0);
    cr_expect_eq(acc[4].island, 1);
    cr_expect_eq(acc[7].island, 1);
    cr_expect_eq(acc[8].island, -1, "not primary: in no island");
    topo_discovery_labels(&d, &ls);
    cr_expect_str_eq(label(&ls, "interconnect"), "hccs");
    cr_expect_str_eq(label(&ls, "domain-size"), "4");
    cr_expect_str_eq(label(&ls, "domains-per-node"), "2");

    /* the interconnect alone keeps the domains */
    cr_assert_eq(topo_discovery_override(&d, TOPO_FABRIC_NVLINK, 0, &err), TPX_OK);
    cr_expect_eq(d.domain_size, 4);
    cr_expect_eq(d.fabric, TOPO_FABRIC_NVLINK);

    /* nothing found: nothing to override */
    memset(&d, 0, sizeof(d));
    topo_discovery_summarize(&d);
    cr_expect_eq(topo_discovery_override(&d, TOPO_FABRIC_HCCS, 0, &err), TPX_EINVAL);
}

Test(topo_discovery_labels, no_accelerators_publishes_only_counts)
{
    struct topo_discovery d;
    struct topo_label_set ls;

    memset(&d, 0, sizeof(d));
    d.numa_nodes = 2;
    topo_discovery_summarize(&d);
    topo_discovery_labels(&d, &ls);
    cr_assert_eq(ls.n, 3);
    cr_expect_str_eq(ls.v[0].key, "topox.io/accelerator-count");
    cr_expect_str_eq(ls.v[0].value, "0");
    cr_expect_str_eq(ls.v[1].key, "topox.io/numa-nodes");
    cr_expect_str_eq(ls.v[1].value, "2");
    cr_expect_str_eq(ls.v[2].key, "topox.io/rdma-nics");
}

Test(topo_label_value_valid, kubernetes_rules)
{
    static const struct {
        const char *v;
        bool ok;
    } cases[] = {
        {"", true},
        {"nvswitch", true},
        {"pcie-switch", true},
        {"a.b_c-d", true},
        {"8", true},
        {"-a", false},
        {"a-", false},
        {"a b", false},
        {"a/b", false},
        {"0123456789012345678901234567890123456789012345678901234567890123", false},
        {"012345678901234567890123456789012345678901234567890123456789012", true},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(topo_label_value_valid(cases[i].v), cases[i].ok, "'%s'", cases[i].v);
}

Test(topo_discovery_annotation, json_text_with_escapes)
{
    struct topo_accel acc;
    struct topo_discovery d;
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    memset(&acc, 0, sizeof(acc));
    acc.vendor = TOPO_VENDOR_NVIDIA;
    acc.pci_vendor_id = 0x10de;
    acc.pci_device_id = 0x2330;
    acc.pci_class = 0x0302;
    snprintf(acc.pci_busid, sizeof(acc.pci_busid), "0000:4e:00.0");
    snprintf(acc.model, sizeof(acc.model), "A \"quoted\"\\model\t");
    acc.numa = -1;
    acc.link_group = -1;
    acc.nic = -1;
    memset(&d, 0, sizeof(d));
    d.accels = &acc;
    d.n_accels = 1;
    d.numa_nodes = 1;
    snprintf(d.source, sizeof(d.source), "xml");
    topo_discovery_summarize(&d);
    tpx_buf_init(&b, 1 << 16);
    cr_assert_eq(topo_discovery_annotation(&d, NULL, &b, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(
        b.data,
        "{\"version\":1,\"source\":\"xml\",\"accelerator\":\"nvidia\",\"count\":1,"
        "\"interconnect\":\"pcie\",\"domain_size\":1,\"domains_per_node\":1,\"islands\":1,"
        "\"islands_full\":false,\"min_link_mbps\":0,\"numa_nodes\":1,\"nvswitches\":0,\"gpu_nic_"
        "affinity\":\"none\",\"accelerators\":[{"
        "\"pci\":\"0000:4e:00.0\",\"vendor\":\"nvidia\",\"pci_id\":\"10de:2330\",\"class\":"
        "\"0302\",\"model\":\"A \\\"quoted\\\"\\\\model\\t\",\"osdev\":\"\",\"numa\":null,"
        "\"island\":0,\"nic\":null,\"nic_affinity\":\"none\",\"primary\":true}],"
        "\"rdma_nics\":[]}");
    tpx_buf_release(&b);

    /* A cap too small is an error, never a truncated annotation. */
    tpx_buf_init(&b, 32);
    cr_expect_eq(topo_discovery_annotation(&d, "2.9.0", &b, &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
}
