/* SPDX-License-Identifier: Apache-2.0 */
/* topology/discover_hwloc.c - the only file that includes <hwloc.h>: loads this host, an XML export
 * or a captured sysfs tree with I/O discovery, and reduces it to a struct topo_discovery
 * (accelerators, NVSwitches, NVLink/XGMI link groups, RDMA NICs and their PCIe/NUMA affinity).
 * Never logs: every failure goes into struct tpx_err. */
#include "topology/discover.h"

#include <errno.h>
#include <hwloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/grow.h"
#include "common/banned.h"

const char *topo_hwloc_version(void)
{
    static char v[32];
    unsigned api = hwloc_get_api_version();

    /* HWLOC_VERSION is the release we built against; the API version is what the library that was
     * loaded at run time reports (hwloc bumps it only when the ABI changes). */
    snprintf(v, sizeof(v), "%s (API %u.%u)", HWLOC_VERSION, api >> 16, (api >> 8) & 0xff);
    return v;
}

/* An accelerator or NIC while discovery runs: the value plus the hwloc objects it came from. */
struct acc_work {
    struct topo_accel a;
    hwloc_obj_t pci;   /* NULL for an OS device without a PCI parent */
    hwloc_obj_t osdev; /* the OS device that named it, or NULL */
};

struct nic_work {
    struct topo_nic n;
    hwloc_obj_t pci;
};

struct scan {
    hwloc_topology_t topo;
    struct acc_work *acc;
    size_t n_acc, cap_acc;
    struct nic_work *nic;
    size_t n_nic, cap_nic;
};

static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static int numa_of(hwloc_topology_t topo, hwloc_obj_t obj)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);

    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return -1;
    return hwloc_bitmap_first(anc->nodeset);
}

static void busid_of(hwloc_obj_t pci, char *dst, size_t size)
{
    const struct hwloc_pcidev_attr_s *p = &pci->attr->pcidev;

    snprintf(dst, size, "%04x:%02x:%02x.%01x", p->domain, p->bus, p->dev, p->func);
}

/* Vendor of a PCI function when its vendor id and class say "accelerator", else NONE. Classes:
 * 0x03xx display (0x0300 VGA, 0x0302 3D, 0x0380 other), 0x12xx processing accelerators. Intel's
 * 0x0b40 co-processors (QAT) and NVIDIA's 0x0680 NVSwitches are deliberately not accelerators. */
static enum topo_vendor pci_accel_vendor(unsigned vendor, unsigned class_id)
{
    unsigned base = class_id >> 8;

    switch (vendor) {
    case 0x10de:
        return base == 0x03 ? TOPO_VENDOR_NVIDIA : TOPO_VENDOR_NONE;
    case 0x1002:
        return (base == 0x03 || base == 0x12) ? TOPO_VENDOR_AMD : TOPO_VENDOR_NONE;
    case 0x19e5:
        return base == 0x12 ? TOPO_VENDOR_HUAWEI : TOPO_VENDOR_NONE;
    case 0x8086:
        return (base == 0x03 || base == 0x12) ? TOPO_VENDOR_INTEL : TOPO_VENDOR_NONE;
    case 0x1da3:
        return (base == 0x03 || base == 0x12 || class_id == 0x0b40) ? TOPO_VENDOR_HABANA
                                                                    : TOPO_VENDOR_NONE;
    default:
        return TOPO_VENDOR_NONE;
    }
}

/* Vendor of a compute OS device by its hwloc backend (subtype), for devices hwloc reports without
 * a PCI parent. Only one backend per vendor, so one GPU is not counted twice (NVML and CUDA). */
static enum topo_vendor osdev_backend_vendor(hwloc_obj_t os)
{
    if (!os->subtype)
        return TOPO_VENDOR_NONE;
    if (strcmp(os->subtype, "NVML") == 0)
        return TOPO_VENDOR_NVIDIA;
    if (strcmp(os->subtype, "RSMI") == 0)
        return TOPO_VENDOR_AMD;
    if (strcmp(os->subtype, "LevelZero") == 0)
        return TOPO_VENDOR_INTEL;
    return TOPO_VENDOR_NONE;
}

static bool is_compute_osdev(hwloc_obj_t os)
{
    return os->type == HWLOC_OBJ_OS_DEVICE && (os->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
                                               os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC);
}

static bool is_nvswitch(hwloc_obj_t pci)
{
    const struct hwloc_pcidev_attr_s *p = &pci->attr->pcidev;

    if (pci->subtype && strcmp(pci->subtype, "NVSwitch") == 0)
        return true;
    return p->vendor_id == 0x10de && p->class_id == 0x0680;
}

static enum tpx_code push_acc(struct scan *s, const struct acc_work *w, struct tpx_err *err)
{
    if (!TPX_GROW(s->acc, s->cap_acc, s->n_acc + 1))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory listing accelerators");
    s->acc[s->n_acc++] = *w;
    return TPX_OK;
}

static enum tpx_code push_nic(struct scan *s, const struct nic_work *w, struct tpx_err *err)
{
    if (!TPX_GROW(s->nic, s->cap_nic, s->n_nic + 1))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory listing RDMA NICs");
    s->nic[s->n_nic++] = *w;
    return TPX_OK;
}

/* How well an OS device names its accelerator: the management backends (NVML, RSMI, LevelZero:
 * one per device, stable names) before CUDA, before OpenCL and the rest. */
static int osdev_rank(hwloc_obj_t os)
{
    if (osdev_backend_vendor(os) != TOPO_VENDOR_NONE)
        return 3;
    if (os->subtype && strcmp(os->subtype, "CUDA") == 0)
        return 2;
    return 1;
}

/* Model name and OS device name for an accelerator: the best-ranked compute OS device names it;
 * the model is the first GPUModel found in rank order, else hwloc's PCI device name. */
static void name_accel(struct acc_work *w)
{
    hwloc_obj_t best = NULL;
    hwloc_obj_t named = NULL;

    for (hwloc_obj_t c = w->pci->io_first_child; c; c = c->next_sibling) {
        if (!is_compute_osdev(c))
            continue;
        if (!best || osdev_rank(c) > osdev_rank(best))
            best = c;
        if (hwloc_obj_get_info_by_name(c, "GPUModel") &&
            (!named || osdev_rank(c) > osdev_rank(named)))
            named = c;
    }
    w->osdev = best;
    if (best)
        copy_str(w->a.osdev, sizeof(w->a.osdev), best->name);
    if (named)
        copy_str(w->a.model, sizeof(w->a.model), hwloc_obj_get_info_by_name(named, "GPUModel"));
    else
        copy_str(w->a.model, sizeof(w->a.model), hwloc_obj_get_info_by_name(w->pci, "PCIDevice"));
}

static enum tpx_code scan_pci(struct scan *s, struct topo_discovery *d, struct tpx_err *err)
{
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(s->topo, NULL); pci;
         pci = hwloc_get_next_pcidev(s->topo, pci)) {
        const struct hwloc_pcidev_attr_s *p = &pci->attr->pcidev;
        enum topo_vendor v = pci_accel_vendor(p->vendor_id, p->class_id);
        bool has_ofed = false;

        if (is_nvswitch(pci)) {
            d->nvswitches++;
            continue;
        }
        for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
            if (c->type == HWLOC_OBJ_OS_DEVICE &&
                c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
                has_ofed = true;
            /* A vendor driver that hwloc knows (NVML/RSMI/LevelZero) vouches for an unusual
             * class code. */
            if (v == TOPO_VENDOR_NONE && is_compute_osdev(c))
                v = osdev_backend_vendor(c);
        }
        if (v != TOPO_VENDOR_NONE) {
            struct acc_work w;

            memset(&w, 0, sizeof(w));
            w.pci = pci;
            w.a.vendor = v;
            w.a.pci_vendor_id = p->vendor_id;
            w.a.pci_device_id = p->device_id;
            w.a.pci_class = p->class_id;
            busid_of(pci, w.a.pci_busid, sizeof(w.a.pci_busid));
            w.a.numa = numa_of(s->topo, pci);
            name_accel(&w);
            if (push_acc(s, &w, err) != TPX_OK)
                return err->code;
        } else if ((p->class_id == 0x0207 || p->class_id == 0x0c06) && !has_ofed) {
            /* InfiniBand class (network 0x0207, or serial bus 0x0c06 on older HCAs) without an
             * OpenFabrics OS device (driver not loaded, or hwloc filtered it): still an RDMA NIC,
             * named by its bus id. */
            struct nic_work w;

            memset(&w, 0, sizeof(w));
            w.pci = pci;
            busid_of(pci, w.n.pci_busid, sizeof(w.n.pci_busid));
            copy_str(w.n.name, sizeof(w.n.name), w.n.pci_busid);
            w.n.numa = numa_of(s->topo, pci);
            if (push_nic(s, &w, err) != TPX_OK)
                return err->code;
        }
    }
    return TPX_OK;
}

static enum tpx_code scan_osdev(struct scan *s, struct tpx_err *err)
{
    for (hwloc_obj_t os = hwloc_get_next_osdev(s->topo, NULL); os;
         os = hwloc_get_next_osdev(s->topo, os)) {
        hwloc_obj_t pci =
            os->parent && os->parent->type == HWLOC_OBJ_PCI_DEVICE ? os->parent : NULL;

        if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
            struct nic_work w;

            memset(&w, 0, sizeof(w));
            w.pci = pci;
            copy_str(w.n.name, sizeof(w.n.name), os->name);
            if (pci)
                busid_of(pci, w.n.pci_busid, sizeof(w.n.pci_busid));
            w.n.numa = numa_of(s->topo, os);
            if (push_nic(s, &w, err) != TPX_OK)
                return err->code;
        } else if (!pci && is_compute_osdev(os) && osdev_backend_vendor(os) != TOPO_VENDOR_NONE) {
            struct acc_work w;

            memset(&w, 0, sizeof(w));
            w.osdev = os;
            w.a.vendor = osdev_backend_vendor(os);
            copy_str(w.a.osdev, sizeof(w.a.osdev), os->name);
            copy_str(w.a.model, sizeof(w.a.model), hwloc_obj_get_info_by_name(os, "GPUModel"));
            w.a.numa = numa_of(s->topo, os);
            if (push_acc(s, &w, err) != TPX_OK)
                return err->code;
        }
    }
    return TPX_OK;
}

static int acc_cmp(const void *x, const void *y)
{
    const struct acc_work *a = x;
    const struct acc_work *b = y;
    int c = strcmp(a->a.pci_busid, b->a.pci_busid);

    return c ? c : strcmp(a->a.osdev, b->a.osdev);
}

static int nic_cmp(const void *x, const void *y)
{
    return strcmp(((const struct nic_work *)x)->n.name, ((const struct nic_work *)y)->n.name);
}

/* Index of the accelerator an object of a link matrix stands for, or -1. */
static long acc_of_obj(const struct scan *s, hwloc_obj_t obj)
{
    hwloc_obj_t pci = obj->type == HWLOC_OBJ_PCI_DEVICE ? obj : NULL;

    if (!pci && obj->type == HWLOC_OBJ_OS_DEVICE && obj->parent &&
        obj->parent->type == HWLOC_OBJ_PCI_DEVICE)
        pci = obj->parent;
    for (size_t i = 0; i < s->n_acc; i++) {
        if ((pci && s->acc[i].pci == pci) ||
            (obj->type == HWLOC_OBJ_OS_DEVICE && s->acc[i].osdev == obj))
            return (long)i;
    }
    return -1;
}

static unsigned uf_find(unsigned *parent, unsigned x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Objects of a heterogeneous link matrix that are CPU-side: a link to one of them (POWER8/9 NVLink
 * from a GPU to its own CPU package) carries no accelerator-to-accelerator traffic, so it neither
 * joins two accelerators into one island nor makes the node an NVSwitch node. */
static bool is_cpu_side(hwloc_obj_t obj)
{
    switch (obj->type) {
    case HWLOC_OBJ_MACHINE:
    case HWLOC_OBJ_PACKAGE:
    case HWLOC_OBJ_DIE:
    case HWLOC_OBJ_NUMANODE:
    case HWLOC_OBJ_GROUP:
    case HWLOC_OBJ_CORE:
    case HWLOC_OBJ_PU:
        return true;
    default:
        return hwloc_obj_type_is_cache(obj->type) != 0;
    }
}

/*
 * One bandwidth matrix, homogeneous or heterogeneous alike. Each object is an accelerator, a
 * switch (any other I/O object: an NVSwitch, also the one with an all-zero PCI id on the DGX-2) or
 * CPU-side (ignored). Accelerators are unioned over direct links and over switches (a switch joins
 * everything linked to it; hwloc lists no switch-to-switch trunks), never through a CPU. Each
 * accelerator in the matrix gets a link group (base + its component's root), its direct links go
 * into d->link_bw, and its switch links into via_switch and switch_bw.
 */
static enum tpx_code apply_matrix(struct scan *s, struct topo_discovery *d,
                                  const struct hwloc_distances_s *m, enum topo_link link, int base,
                                  struct tpx_err *err)
{
    unsigned n = m->nbobjs;
    unsigned *parent = malloc((n ? n : 1) * sizeof(*parent));
    long *acc = malloc((n ? n : 1) * sizeof(*acc));
    bool *linked = calloc(n ? n : 1, sizeof(*linked));
    bool *cpu = calloc(n ? n : 1, sizeof(*cpu));

    if (!d->link_bw && s->n_acc > 0)
        d->link_bw = calloc(s->n_acc * s->n_acc, sizeof(*d->link_bw));
    if (!parent || !acc || !linked || !cpu || (s->n_acc > 0 && !d->link_bw)) {
        free(parent);
        free(acc);
        free(linked);
        free(cpu);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory reading a link matrix");
    }
    for (unsigned i = 0; i < n; i++) {
        parent[i] = i;
        acc[i] = m->objs[i] ? acc_of_obj(s, m->objs[i]) : -1;
        cpu[i] = !m->objs[i] || (acc[i] < 0 && is_cpu_side(m->objs[i]));
    }
    for (unsigned i = 0; i < n; i++) {
        for (unsigned j = 0; j < n; j++) {
            hwloc_uint64_t v = m->values[(size_t)i * n + j];

            if (i == j || v == 0 || cpu[i] || cpu[j])
                continue;
            linked[i] = linked[j] = true;
            parent[uf_find(parent, i)] = uf_find(parent, j);
            if (acc[i] >= 0 && acc[j] >= 0) {
                unsigned long long *bw = &d->link_bw[(size_t)acc[i] * s->n_acc + (size_t)acc[j]];

                if (v > *bw) /* the faster direction, and the same both ways */
                    *bw = d->link_bw[(size_t)acc[j] * s->n_acc + (size_t)acc[i]] = v;
            } else if (acc[i] >= 0) {
                s->acc[acc[i]].a.via_switch = true;
                s->acc[acc[i]].a.switch_bw += v;
            }
        }
    }
    for (unsigned i = 0; i < n; i++) {
        if (cpu[i])
            continue;
        if (acc[i] < 0) {
            if (linked[i])
                d->switch_in_matrix = true;
            continue;
        }
        s->acc[acc[i]].a.link = link;
        s->acc[acc[i]].a.link_group = linked[i] ? base + (int)uf_find(parent, i) : -1;
    }
    free(parent);
    free(acc);
    free(linked);
    free(cpu);
    return TPX_OK;
}

static enum tpx_code scan_links(struct scan *s, struct topo_discovery *d, struct tpx_err *err)
{
    static const struct {
        const char *name;
        enum topo_link link;
    } kinds[] = {{"NVLinkBandwidth", TOPO_LINK_NVLINK}, {"XGMIBandwidth", TOPO_LINK_XGMI}};
    int base = 0;

    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        struct hwloc_distances_s *m[8];
        unsigned nr = 8;

        if (hwloc_distances_get_by_name(s->topo, kinds[k].name, &nr, m, 0) != 0)
            continue; /* no such matrix is not an error */
        if (nr > 8)
            nr = 8;
        for (unsigned i = 0; i < nr; i++) {
            if (err->code == TPX_OK)
                apply_matrix(s, d, m[i], kinds[k].link, base, err);
            base += (int)m[i]->nbobjs;
            hwloc_distances_release(s->topo, m[i]);
        }
        if (err->code != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

/* Nearest common ancestor by walking parent links. hwloc 2.9's hwloc_get_common_ancestor_obj()
 * compares depths, which I/O objects do not have (it dereferences NULL on the g4dn export). */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent) {
        for (hwloc_obj_t y = b; y; y = y->parent) {
            if (x == y)
                return x;
        }
    }
    return NULL;
}

/* The closest level two PCI functions share: a PCI-to-PCI bridge (a switch or a root port, below
 * the host bridge) as their nearest common ancestor, else the same NUMA node, else none. */
static enum topo_affinity pci_affinity(const struct acc_work *a, const struct nic_work *n)
{
    if (a->pci && n->pci) {
        hwloc_obj_t anc = common_ancestor(a->pci, n->pci);

        if (anc && anc->type == HWLOC_OBJ_BRIDGE &&
            anc->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
            return TOPO_AFFINITY_PCIE_SWITCH;
    }
    if (a->a.numa >= 0 && a->a.numa == n->n.numa)
        return TOPO_AFFINITY_NUMA;
    return TOPO_AFFINITY_NONE;
}

static void scan_affinity(struct scan *s)
{
    for (size_t i = 0; i < s->n_acc; i++) {
        struct topo_accel *a = &s->acc[i].a;

        a->nic = -1;
        a->nic_affinity = TOPO_AFFINITY_NONE;
        for (size_t j = 0; j < s->n_nic; j++) {
            enum topo_affinity f = pci_affinity(&s->acc[i], &s->nic[j]);

            if (a->nic < 0 || f > a->nic_affinity) {
                a->nic = (int)j;
                a->nic_affinity = f;
            }
        }
        if (a->nic >= 0 && a->nic_affinity == TOPO_AFFINITY_NONE)
            a->nic = -1; /* a NIC on another socket is not "nearest" in any useful sense */
    }
}

/* The XML format version in the file's <topology version="X"> tag, for a better error message;
 * "" when it cannot be found in the first few kilobytes. */
static void xml_version(const char *path, char *out, size_t size)
{
    char head[4096];
    FILE *f = fopen(path, "r");
    size_t n;
    const char *t;

    out[0] = '\0';
    if (!f)
        return;
    n = fread(head, 1, sizeof(head) - 1, f);
    fclose(f);
    head[n] = '\0';
    t = strstr(head, "<topology");
    if (t)
        t = strstr(t, "version=\"");
    if (t) {
        size_t len = 0;

        t += strlen("version=\"");
        while (t[len] && t[len] != '"' && len + 1 < size && len < 16)
            len++;
        memcpy(out, t, len);
        out[len] = '\0';
    }
}

static enum tpx_code check_path(const char *path, bool want_dir, struct tpx_err *err)
{
    struct stat st;

    if (!path || !*path)
        return tpx_err_set(err, TPX_EINVAL, "no %s given", want_dir ? "directory" : "file");
    if (stat(path, &st) != 0)
        return tpx_err_errno(err, errno, "'%s'", path);
    if (want_dir && !S_ISDIR(st.st_mode))
        return tpx_err_set(err, TPX_EINVAL, "'%s': not a directory", path);
    if (!want_dir && S_ISDIR(st.st_mode))
        return tpx_err_set(err, TPX_EINVAL, "'%s': is a directory, not an XML file", path);
    return TPX_OK;
}

/* hwloc refused an XML file (when it was set or loaded): say why, naming the file. */
/* The size budget of an XML export (a DGX-2 with every PCI function is about 1 MiB). */
#define XML_MAX_BYTES ((size_t)64 << 20)

/* Which of the four set attributes one <object ...> tag has, from just after "<object" to its
 * end; quote-aware, so a '>' inside a value does not end the tag. Returns where it stopped. */
static const char *object_sets(const char *p, const char *end, bool has[4])
{
    static const char *const names[4] = {"cpuset", "complete_cpuset", "nodeset",
                                         "complete_nodeset"};

    for (;;) {
        const char *name;
        const char *close;
        size_t len;

        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p >= end || *p == '>' || *p == '/')
            return p;
        name = p;
        while (p < end && *p != '=' && *p != '>' && *p != '/' && *p != ' ' && *p != '\t' &&
               *p != '\n' && *p != '\r')
            p++;
        len = (size_t)(p - name);
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p + 1 >= end || *p != '=')
            return p; /* not an attribute: hwloc's parser will say what is wrong */
        p++;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p >= end || (*p != '"' && *p != '\''))
            return p;
        close = memchr(p + 1, *p, (size_t)(end - p - 1));
        if (!close)
            return end;
        for (int i = 0; i < 4; i++) {
            if (len == strlen(names[i]) && memcmp(name, names[i], len) == 0)
                has[i] = true;
        }
        p = close + 1;
    }
}

/*
 * hwloc 2.9.0 crashes (a NULL complete_cpuset in hwloc_bitmap_compare_first while it sorts an
 * object's children) on an XML object that has a cpuset but no complete_cpuset, and likewise for
 * the nodesets (open-mpi/hwloc#783, fixed after 2.9); its exporter always writes each pair
 * together. Refuse such a file, and one past XML_MAX_BYTES, before hwloc reads it.
 */
static enum tpx_code xml_precheck(const char *path, struct tpx_err *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *data = NULL;
    size_t n = 0;
    size_t line = 1;
    const char *p;
    const char *end;
    const char *counted;
    enum tpx_code rc = TPX_OK;

    if (!f)
        return tpx_err_errno(err, errno, "'%s'", path);
    if (fstat(fileno(f), &st) != 0) {
        rc = tpx_err_errno(err, errno, "'%s'", path);
    } else if ((uintmax_t)st.st_size > XML_MAX_BYTES) {
        rc = tpx_err_set(err, TPX_ETOOBIG, "'%s': larger than %zu bytes, not an hwloc export", path,
                         XML_MAX_BYTES);
    } else {
        data = malloc((size_t)st.st_size + 1);
        if (!data)
            rc = tpx_err_set(err, TPX_ENOMEM, "out of memory reading '%s'", path);
        else
            n = fread(data, 1, (size_t)st.st_size, f);
        if (data && ferror(f))
            rc = tpx_err_errno(err, errno, "cannot read '%s'", path);
    }
    fclose(f);
    end = data + (rc == TPX_OK ? n : 0);
    counted = data;
    for (p = data; rc == TPX_OK && p < end;) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        bool has[4] = {false, false, false, false};

        if (!lt || (size_t)(end - lt) < 8)
            break;
        p = lt + 1;
        if (memcmp(lt, "<object", 7) != 0 || !strchr(" \t\r\n/>", lt[7]) || lt[7] == '\0')
            continue;
        for (; counted < lt; counted++)
            line += *counted == '\n';
        p = object_sets(lt + 7, end, has);
        if ((has[0] && !has[1]) || (has[2] && !has[3]))
            rc = tpx_err_set(err, TPX_EPARSE,
                             "'%s': hwloc %s cannot read this XML: line %zu: an object with a %s "
                             "but no %s",
                             path, HWLOC_VERSION, line, has[0] && !has[1] ? "cpuset" : "nodeset",
                             has[0] && !has[1] ? "complete_cpuset" : "complete_nodeset");
    }
    free(data);
    return rc;
}

static enum tpx_code xml_error(const char *path, int saved, struct tpx_err *err)
{
    char ver[20];

    xml_version(path, ver, sizeof(ver));
    if (ver[0] && ver[0] != '1' && ver[0] != '2')
        return tpx_err_set(err, TPX_EPARSE,
                           "'%s': hwloc %s cannot read this XML: format version %s (this hwloc "
                           "reads 1.x and 2.x)",
                           path, HWLOC_VERSION, ver);
    return tpx_err_set(err, TPX_EPARSE,
                       "'%s': hwloc %s cannot read this XML: not a valid hwloc topology (%s)", path,
                       HWLOC_VERSION, strerror(saved));
}

static enum tpx_code load(hwloc_topology_t topo, enum topo_source_kind kind, const char *path,
                          struct tpx_err *err)
{
    int rc;
    int saved;

    if (kind == TOPO_SOURCE_XML) {
        if (xml_precheck(path, err) != TPX_OK)
            return err->code;
        if (hwloc_topology_set_xml(topo, path) != 0 || hwloc_topology_load(topo) != 0)
            return xml_error(path, errno, err);
        return TPX_OK;
    }
    if (kind == TOPO_SOURCE_FSROOT) {
        char *old = getenv("HWLOC_FSROOT");
        char *keep = old ? strdup(old) : NULL;

        if (old && !keep)
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        /* hwloc 2.x has no API for the Linux file-system root; its linux backend reads this
         * variable when the topology is loaded. */
        setenv("HWLOC_FSROOT", path, 1);
        rc = hwloc_topology_load(topo);
        saved = errno;
        if (keep)
            setenv("HWLOC_FSROOT", keep, 1);
        else
            unsetenv("HWLOC_FSROOT");
        free(keep);
        if (rc != 0)
            return tpx_err_errno(err, saved, "'%s': hwloc cannot discover this sysfs tree", path);
        return TPX_OK;
    }
    if (hwloc_topology_load(topo) != 0)
        return tpx_err_errno(err, errno, "hwloc cannot discover this host");
    return TPX_OK;
}

enum tpx_code topo_discover(enum topo_source_kind kind, const char *path,
                            struct topo_discovery *out, struct tpx_err *err)
{
    struct scan s;
    enum tpx_code rc;

    memset(out, 0, sizeof(*out));
    memset(&s, 0, sizeof(s));
    copy_str(out->source, sizeof(out->source),
             kind == TOPO_SOURCE_XML      ? "xml"
             : kind == TOPO_SOURCE_FSROOT ? "fsroot"
                                          : "host");
    if (kind != TOPO_SOURCE_HOST && check_path(path, kind == TOPO_SOURCE_FSROOT, err) != TPX_OK)
        return err->code;
    if (hwloc_topology_init(&s.topo) != 0)
        return tpx_err_errno(err, errno, "hwloc: cannot initialise a topology");
    /* Keep every PCI function, bridge and OS device (the defaults drop most of them), and the
     * distance matrices, which are kept by default. */
    hwloc_topology_set_io_types_filter(s.topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    /* On Linux the core backend reads PCI devices from sysfs (the same list, and the only way
     * under an fsroot). The libpciaccess plugin adds nothing but device names and leaks about 1 KiB
     * per load, which LeakSanitizer reports; leave it out. */
    if (kind != TOPO_SOURCE_XML)
        hwloc_topology_set_components(s.topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
    rc = load(s.topo, kind, path, err);
    if (rc == TPX_OK)
        rc = scan_pci(&s, out, err);
    if (rc == TPX_OK)
        rc = scan_osdev(&s, err);
    if (rc == TPX_OK) {
        if (s.n_acc > 1)
            qsort(s.acc, s.n_acc, sizeof(*s.acc), acc_cmp);
        if (s.n_nic > 1)
            qsort(s.nic, s.n_nic, sizeof(*s.nic), nic_cmp);
        for (size_t i = 0; i < s.n_acc; i++)
            s.acc[i].a.link_group = -1;
        rc = scan_links(&s, out, err);
    }
    if (rc == TPX_OK) {
        int n = hwloc_get_nbobjs_by_type(s.topo, HWLOC_OBJ_NUMANODE);

        out->numa_nodes = n > 0 ? (unsigned)n : 0;
        scan_affinity(&s);
        out->accels = calloc(s.n_acc ? s.n_acc : 1, sizeof(*out->accels));
        out->nics = calloc(s.n_nic ? s.n_nic : 1, sizeof(*out->nics));
        if (!out->accels || !out->nics)
            rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    if (rc == TPX_OK) {
        for (size_t i = 0; i < s.n_acc; i++)
            out->accels[i] = s.acc[i].a;
        for (size_t i = 0; i < s.n_nic; i++)
            out->nics[i] = s.nic[i].n;
        out->n_accels = s.n_acc;
        out->n_nics = s.n_nic;
        topo_discovery_summarize(out);
    }
    free(s.acc);
    free(s.nic);
    hwloc_topology_destroy(s.topo);
    return rc;
}
