/* SPDX-License-Identifier: Apache-2.0 */
/* topology/discover.h - discovery of one node's accelerators, their interconnect and their RDMA
 * NICs (discover_hwloc.c, the only module that knows hwloc), and the pure code that turns the
 * result into topox.io/... node labels and the topox.io/topology annotation (discover_labels.c).
 * Callers see plain C values only. No JSON library, no I/O outside topo_discover(), no logging. */
#ifndef TPX_TOPOLOGY_DISCOVER_H
#define TPX_TOPOLOGY_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "topology/fabric.h"
#include "topology/labels.h"

/* hwloc's runtime version as "2.9.0 (API 2.8)": the release built against, the run-time API; static
 * buffer. Cannot fail; thread-safe. */
const char *topo_hwloc_version(void);

/* Accelerator vendors, in the order that breaks a tie for the node's primary vendor. */
enum topo_vendor {
    TOPO_VENDOR_NONE = 0,
    TOPO_VENDOR_NVIDIA,
    TOPO_VENDOR_AMD,
    TOPO_VENDOR_HUAWEI,
    TOPO_VENDOR_INTEL,
    TOPO_VENDOR_HABANA,
};

/* Label value of a vendor ("nvidia", ...; "none" for TOPO_VENDOR_NONE). Never NULL. */
const char *topo_vendor_name(enum topo_vendor v);

/* Closest level an accelerator shares with an RDMA NIC; ordered worst to best. */
enum topo_affinity {
    TOPO_AFFINITY_NONE = 0,
    TOPO_AFFINITY_NUMA,
    TOPO_AFFINITY_PCIE_SWITCH,
};

/* Label value: "none", "numa", "pcie-switch". Never NULL. */
const char *topo_affinity_name(enum topo_affinity a);

/* Which inter-accelerator link a bandwidth matrix described. */
enum topo_link {
    TOPO_LINK_NONE = 0,
    TOPO_LINK_NVLINK, /* hwloc "NVLinkBandwidth" */
    TOPO_LINK_XGMI,   /* hwloc "XGMIBandwidth" */
};

/* One accelerator (a PCI function). Fixed-size strings, so the struct is a plain value. */
struct topo_accel {
    enum topo_vendor vendor;
    unsigned pci_vendor_id, pci_device_id, pci_class; /* class is the 16-bit class, e.g. 0x0302 */
    char pci_busid[20];                               /* "0000:18:00.0" */
    char model[64]; /* from an OS device (GPUModel), else hwloc's PCIDevice name, else "" */
    char osdev[32]; /* first OS device name (nvml0, cuda0, rsmi0, ...), else "" */
    int numa;       /* OS index of the one NUMA node it is attached to, -1 when not one */
    /* Raw link facts, filled by discovery: link_group >= 0 means the accelerator appeared in a
     * bandwidth matrix of kind `link`; accelerators with the same link_group reach each other over
     * that fabric (directly or through switches). -1: in no matrix. */
    enum topo_link link;
    int link_group;
    /* Linked in that matrix to a switch (an object that is neither an accelerator nor a CPU-side
     * object such as a Package or NUMA node), and the sum of those links' bandwidth (hwloc's unit,
     * MB/s): an NVSwitch port. */
    bool via_switch;
    unsigned long long switch_bw;
    int nic; /* index into topo_discovery.nics of the nearest RDMA NIC, -1 when none */
    enum topo_affinity nic_affinity;
    /* Filled by topo_discovery_summarize(): */
    bool primary; /* of the node's primary vendor (only those are counted and labelled) */
    int island;   /* island index among primary accelerators, 0-based; -1 when not primary */
};

/* One RDMA-capable NIC: an OpenFabrics OS device (mlx5_0, rdmap197s0) or an InfiniBand-class PCI
 * function. */
struct topo_nic {
    char name[32];      /* OpenFabrics device name, else the PCI bus id */
    char pci_busid[20]; /* "" when hwloc gives no PCI parent */
    int numa;           /* -1 when not exactly one NUMA node */
};

/*
 * What discovery found on one node. Owns accels and nics: topo_discovery_release(). The summary
 * fields (vendor .. affinity) are derived by topo_discovery_summarize() from the raw ones, so a
 * test can build a discovery by hand. Not thread-safe while being filled; read-only afterwards.
 */
struct topo_discovery {
    struct topo_accel *accels; /* sorted by PCI bus id */
    size_t n_accels;
    struct topo_nic *nics; /* sorted by name */
    size_t n_nics;
    unsigned numa_nodes;
    unsigned nvswitches;   /* NVIDIA NVSwitch PCI functions (10de class 0x0680, or subtype) */
    bool switch_in_matrix; /* a link matrix had switch objects with links (CPU packages and NUMA
                            * nodes in a heterogeneous matrix do not count: a GPU-to-CPU NVLink,
                            * as on POWER8/9, is no accelerator link) */
    /* n_accels x n_accels, row-major: bandwidth of the direct link between two accelerators in the
     * matrix of their kind (hwloc's unit, MB/s), 0 for none. NULL when no matrix was read. Owned.
     */
    unsigned long long *link_bw;
    char source[16]; /* "host", "xml", "fsroot" */

    /* Summary (topo_discovery_summarize): */
    enum topo_vendor vendor;   /* primary vendor: most accelerators, ties by enum order */
    size_t count;              /* accelerators of the primary vendor */
    enum topo_fabric fabric;   /* TOPO_FABRIC_UNKNOWN when count == 0 */
    unsigned domain_size;      /* accelerators in the largest island */
    unsigned domains_per_node; /* islands of that size */
    unsigned islands;          /* islands in all */
    /* Every pair inside every island of more than one accelerator is directly linked, or both sit
     * on the NVSwitch fabric. False for an NVLink hybrid cube-mesh (DGX-1), where a ring all-reduce
     * still runs over NVLink but not every pair has a link of its own. */
    bool islands_full;
    /* The slowest link inside an island: the smallest direct link, or on an NVSwitch fabric the
     * smallest bandwidth an accelerator has into the switches (hwloc's unit, MB/s). 0: unknown. */
    unsigned long long min_link_bw;
    enum topo_affinity affinity; /* worst nic_affinity over primary accelerators */
    bool overridden;             /* fabric or domains set by topo_discovery_override() */
};

/* Where topo_discover() reads from. */
enum topo_source_kind {
    TOPO_SOURCE_HOST = 0, /* this machine, with I/O discovery */
    TOPO_SOURCE_XML,      /* path: an `lstopo --of xml` export */
    TOPO_SOURCE_FSROOT,   /* path: a captured Linux /sys + /proc tree (hwloc's HWLOC_FSROOT) */
};

/*
 * Discover one node and fill *out (caller-allocated; zeroed first; release it with
 * topo_discovery_release(), also after a failure). Runs topo_discovery_summarize().
 * Failures: TPX_EPARSE with "'PATH': hwloc X cannot read this XML: REASON" when hwloc refuses an
 * XML (e.g. format 3.0) or before hwloc reads one that would crash it (an object with a cpuset or
 * nodeset but not its complete_ twin), TPX_ETOOBIG for an XML over 64 MiB, TPX_ENOENT/TPX_EIO when
 * the file or directory cannot be read, TPX_EIO when hwloc fails otherwise, TPX_ENOMEM.
 * TOPO_SOURCE_FSROOT sets the process environment variable HWLOC_FSROOT for the duration of the
 * load, so it is not thread-safe; the other kinds are.
 */
enum tpx_code topo_discover(enum topo_source_kind kind, const char *path,
                            struct topo_discovery *out, struct tpx_err *err);

/* Free accels and nics; the struct is left empty. Safe to call twice. */
void topo_discovery_release(struct topo_discovery *d);

/*
 * Derive the summary from the raw fields: primary vendor and count, islands (NVSwitch: every
 * accelerator that reaches a switch, or all of them when no matrix is known, is one island, since
 * the switches of one node form one fabric; NVLink/XGMI: connected link groups; otherwise one PCIe
 * island of all), fabric, domain size, domains per node and the node's NIC affinity. Pure; cannot
 * fail; idempotent.
 */
void topo_discovery_summarize(struct topo_discovery *d);

/*
 * Replace what hwloc could not see (Ascend HCCS, say): fabric (TOPO_FABRIC_UNKNOWN: keep it) and,
 * when domain_size > 0, split the primary accelerators into islands of domain_size in PCI bus
 * order (NPUs 0-3 and 4-7 for the two HCCS rings of an Atlas 800 training server). Run after
 * topo_discovery_summarize(). TPX_EINVAL when there are no accelerators or domain_size does not
 * divide their count; *d is unchanged then. Sets d->overridden.
 */
enum tpx_code topo_discovery_override(struct topo_discovery *d, enum topo_fabric fabric,
                                      unsigned domain_size, struct tpx_err *err);

/* Node labels. Keys and values are copied in; values are valid Kubernetes label values. */
enum { TOPO_LABELS_MAX = 16, TOPO_LABEL_KEY_MAX = 64, TOPO_LABEL_VALUE_MAX = 64 };

struct topo_label {
    char key[TOPO_LABEL_KEY_MAX];
    char value[TOPO_LABEL_VALUE_MAX];
};

struct topo_label_set {
    struct topo_label v[TOPO_LABELS_MAX];
    size_t n;
};

/*
 * The topox.io/... labels of DESIGN.md for a summarized discovery, sorted by key: always
 * accelerator-count, numa-nodes and rdma-nics; with accelerators also accelerator, interconnect,
 * domain-size, domains-per-node and gpu-nic-affinity. Cannot fail.
 */
void topo_discovery_labels(const struct topo_discovery *d, struct topo_label_set *out);

/*
 * Append the topox.io/topology annotation (one line of JSON: summary, per-accelerator vendor,
 * model, PCI bus id, NUMA node, island, nearest NIC and its level; the RDMA NICs) to out.
 * hwloc_version may be NULL. Fails only as tpx_buf_add() does (TPX_ETOOBIG, TPX_ENOMEM).
 */
enum tpx_code topo_discovery_annotation(const struct topo_discovery *d, const char *hwloc_version,
                                        struct tpx_buf *out, struct tpx_err *err);

/* true when s is a valid Kubernetes label value: at most 63 characters, empty, or alphanumeric at
 * both ends with [-_.A-Za-z0-9] between. */
bool topo_label_value_valid(const char *s);

#endif
