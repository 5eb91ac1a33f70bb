/* SPDX-License-Identifier: Apache-2.0 */
/* topology/discover_labels.c - a discovery result -> its summary, the topox.io/... node labels and
 * the topox.io/topology annotation text. Pure code: no hwloc, no JSON library, no I/O. */
#include "topology/discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonstr.h"
#include "common/banned.h"

static const char *const vendor_names[] = {"none", "nvidia", "amd", "huawei", "intel", "habana"};
static const char *const affinity_names[] = {"none", "numa", "pcie-switch"};

const char *topo_vendor_name(enum topo_vendor v)
{
    if ((unsigned)v >= sizeof(vendor_names) / sizeof(vendor_names[0]))
        return vendor_names[0];
    return vendor_names[v];
}

const char *topo_affinity_name(enum topo_affinity a)
{
    if ((unsigned)a >= sizeof(affinity_names) / sizeof(affinity_names[0]))
        return affinity_names[0];
    return affinity_names[a];
}

void topo_discovery_release(struct topo_discovery *d)
{
    free(d->accels);
    free(d->nics);
    free(d->link_bw);
    d->accels = NULL;
    d->nics = NULL;
    d->link_bw = NULL;
    d->n_accels = 0;
    d->n_nics = 0;
}

static enum topo_vendor primary_vendor(const struct topo_discovery *d, size_t *count)
{
    size_t per[TOPO_VENDOR_HABANA + 1] = {0};
    enum topo_vendor best = TOPO_VENDOR_NONE;

    for (size_t i = 0; i < d->n_accels; i++) {
        if ((unsigned)d->accels[i].vendor <= TOPO_VENDOR_HABANA)
            per[d->accels[i].vendor]++;
    }
    for (int v = TOPO_VENDOR_NVIDIA; v <= TOPO_VENDOR_HABANA; v++) {
        if (per[v] > per[best])
            best = (enum topo_vendor)v;
    }
    *count = best == TOPO_VENDOR_NONE ? 0 : per[best];
    return best;
}

/* The link matrix kind that belongs to a vendor's accelerators. */
static enum topo_link vendor_link(enum topo_vendor v)
{
    switch (v) {
    case TOPO_VENDOR_NVIDIA:
        return TOPO_LINK_NVLINK;
    case TOPO_VENDOR_AMD:
        return TOPO_LINK_XGMI;
    default:
        return TOPO_LINK_NONE;
    }
}

/*
 * Island keys: accelerators with the same key form one island. Key -1 never matches (a
 * singleton). Islands are numbered in accelerator order, which is PCI bus id order, so the
 * numbering is stable across runs.
 */
static void number_islands(struct topo_discovery *d, const int *key)
{
    unsigned *size = calloc(d->n_accels ? d->n_accels : 1, sizeof(*size));
    unsigned n = 0;
    unsigned largest = 0;
    unsigned of_largest = 0;

    for (size_t i = 0; i < d->n_accels; i++) {
        struct topo_accel *a = &d->accels[i];

        if (!a->primary) {
            a->island = -1;
            continue;
        }
        a->island = -1;
        if (key[i] >= 0) {
            for (size_t j = 0; j < i; j++) {
                if (d->accels[j].primary && key[j] == key[i]) {
                    a->island = d->accels[j].island;
                    break;
                }
            }
        }
        if (a->island < 0)
            a->island = (int)n++;
        if (size)
            size[a->island]++;
    }
    for (unsigned k = 0; size && k < n; k++) {
        if (size[k] > largest) {
            largest = size[k];
            of_largest = 0;
        }
        if (size[k] == largest)
            of_largest++;
    }
    if (!size) {
        /* Out of memory for a few counters: fall back to the whole node as one domain, which is
         * what the PCIe case says anyway. */
        largest = (unsigned)d->count;
        of_largest = d->count ? 1 : 0;
    }
    free(size);
    d->islands = n;
    d->domain_size = largest;
    d->domains_per_node = of_largest;
}

/* How well the islands are wired: islands_full and min_link_bw (see discover.h). On an NVSwitch
 * fabric every accelerator on it reaches every other one through the switches. */
static void rate_islands(struct topo_discovery *d, bool switched)
{
    bool full = true;
    unsigned long long min = 0;

    for (size_t i = 0; i < d->n_accels; i++) {
        const struct topo_accel *a = &d->accels[i];

        if (!a->primary || a->island < 0)
            continue;
        if (switched) {
            if (a->switch_bw > 0 && (min == 0 || a->switch_bw < min))
                min = a->switch_bw;
            continue;
        }
        for (size_t j = i + 1; j < d->n_accels; j++) {
            unsigned long long bw;

            if (!d->accels[j].primary || d->accels[j].island != a->island)
                continue;
            bw = d->link_bw ? d->link_bw[i * d->n_accels + j] : 0;
            if (bw == 0)
                full = false;
            else if (min == 0 || bw < min)
                min = bw;
        }
    }
    d->islands_full = full;
    d->min_link_bw = min;
}

void topo_discovery_summarize(struct topo_discovery *d)
{
    enum topo_link want;
    bool in_matrix = false;
    int *key;

    d->vendor = primary_vendor(d, &d->count);
    d->fabric = TOPO_FABRIC_UNKNOWN;
    d->domain_size = 0;
    d->domains_per_node = 0;
    d->islands = 0;
    d->islands_full = false;
    d->min_link_bw = 0;
    d->affinity = TOPO_AFFINITY_NONE;
    want = vendor_link(d->vendor);
    for (size_t i = 0; i < d->n_accels; i++) {
        struct topo_accel *a = &d->accels[i];

        a->primary = d->vendor != TOPO_VENDOR_NONE && a->vendor == d->vendor;
        a->island = -1;
        if (a->primary && want != TOPO_LINK_NONE && a->link == want && a->link_group >= 0)
            in_matrix = true;
    }
    if (d->count == 0)
        return;

    key = malloc(d->n_accels * sizeof(*key));
    if (!key) {
        d->fabric = TOPO_FABRIC_PCIE;
        d->domain_size = (unsigned)d->count;
        d->domains_per_node = 1;
        d->islands = 1;
        return;
    }
    for (size_t i = 0; i < d->n_accels; i++) {
        const struct topo_accel *a = &d->accels[i];
        bool linked = a->link == want && a->link_group >= 0;

        if (d->vendor == TOPO_VENDOR_NVIDIA && (d->nvswitches > 0 || d->switch_in_matrix)) {
            /* hwloc lists GPU-to-switch links but not the trunks between the switches (the DGX-2
             * export has two baseboards with no switch-switch entries), and all NVSwitches of one
             * node belong to one fabric. So a GPU that reaches any switch is in the one island;
             * without a matrix every GPU is assumed to. */
            key[i] = (!in_matrix || linked) ? 0 : -1;
        } else if (in_matrix) {
            key[i] = linked ? a->link_group : -1;
        } else {
            key[i] = 0; /* PCIe: every accelerator reaches every other one */
        }
    }
    number_islands(d, key);
    free(key);

    if (d->vendor == TOPO_VENDOR_NVIDIA && (d->nvswitches > 0 || d->switch_in_matrix))
        d->fabric = TOPO_FABRIC_NVSWITCH;
    else if (in_matrix && d->domain_size > 1)
        d->fabric = want == TOPO_LINK_XGMI ? TOPO_FABRIC_XGMI : TOPO_FABRIC_NVLINK;
    else
        d->fabric = TOPO_FABRIC_PCIE;
    if (d->fabric == TOPO_FABRIC_PCIE && d->islands != 1) {
        /* A matrix with no links at all: fall back to the PCIe view of one domain. */
        for (size_t i = 0; i < d->n_accels; i++) {
            if (d->accels[i].primary)
                d->accels[i].island = 0;
        }
        d->islands = 1;
        d->domain_size = (unsigned)d->count;
        d->domains_per_node = 1;
    }
    if (d->fabric != TOPO_FABRIC_PCIE)
        rate_islands(d, d->fabric == TOPO_FABRIC_NVSWITCH);

    d->affinity = TOPO_AFFINITY_PCIE_SWITCH;
    for (size_t i = 0; i < d->n_accels; i++) {
        const struct topo_accel *a = &d->accels[i];

        if (a->primary && a->nic_affinity < d->affinity)
            d->affinity = a->nic_affinity;
    }
    if (d->n_nics == 0)
        d->affinity = TOPO_AFFINITY_NONE;
}

bool topo_label_value_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0)
        return true;
    if (n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

        if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
            return false;
    }
    return true;
}

static void put(struct topo_label_set *out, const char *name, const char *value)
{
    struct topo_label *l;

    if (out->n >= TOPO_LABELS_MAX)
        return;
    l = &out->v[out->n++];
    snprintf(l->key, sizeof(l->key), "%s%s", TOPO_LABEL_PREFIX, name);
    snprintf(l->value, sizeof(l->value), "%s", value);
}

static void put_u(struct topo_label_set *out, const char *name, unsigned long v)
{
    char num[24];

    snprintf(num, sizeof(num), "%lu", v);
    put(out, name, num);
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const struct topo_label *)a)->key, ((const struct topo_label *)b)->key);
}

void topo_discovery_labels(const struct topo_discovery *d, struct topo_label_set *out)
{
    out->n = 0;
    put_u(out, "accelerator-count", d->count);
    put_u(out, "numa-nodes", d->numa_nodes);
    put_u(out, "rdma-nics", d->n_nics);
    if (d->count > 0) {
        put(out, "accelerator", topo_vendor_name(d->vendor));
        put(out, "interconnect", topo_fabric_name(d->fabric));
        put_u(out, "domain-size", d->domain_size);
        put_u(out, "domains-per-node", d->domains_per_node);
        put(out, "gpu-nic-affinity", topo_affinity_name(d->affinity));
        if (d->fabric == TOPO_FABRIC_NVLINK || d->fabric == TOPO_FABRIC_NVSWITCH)
            put(out, "nvlink-full", d->islands_full ? "true" : "false");
    }
    qsort(out->v, out->n, sizeof(out->v[0]), label_cmp);
}

static enum tpx_code add_key_str(struct tpx_buf *b, const char *key, const char *val,
                                 struct tpx_err *err)
{
    if (tpx_buf_addf(b, err, "\"%s\":", key) != TPX_OK)
        return err->code;
    return tpx_json_str(b, val, err);
}

/* A NUMA index or null. */
static enum tpx_code add_key_numa(struct tpx_buf *b, int numa, struct tpx_err *err)
{
    if (numa < 0)
        return tpx_buf_adds(b, "\"numa\":null", err);
    return tpx_buf_addf(b, err, "\"numa\":%d", numa);
}

static enum tpx_code add_accel(struct tpx_buf *b, const struct topo_discovery *d,
                               const struct topo_accel *a, struct tpx_err *err)
{
    if (tpx_buf_adds(b, "{", err) != TPX_OK || add_key_str(b, "pci", a->pci_busid, err) != TPX_OK ||
        tpx_buf_adds(b, ",", err) != TPX_OK ||
        add_key_str(b, "vendor", topo_vendor_name(a->vendor), err) != TPX_OK ||
        tpx_buf_addf(b, err, ",\"pci_id\":\"%04x:%04x\",\"class\":\"%04x\",", a->pci_vendor_id,
                     a->pci_device_id, a->pci_class) != TPX_OK ||
        add_key_str(b, "model", a->model, err) != TPX_OK || tpx_buf_adds(b, ",", err) != TPX_OK ||
        add_key_str(b, "osdev", a->osdev, err) != TPX_OK || tpx_buf_adds(b, ",", err) != TPX_OK ||
        add_key_numa(b, a->numa, err) != TPX_OK)
        return err->code;
    if (a->island >= 0) {
        if (tpx_buf_addf(b, err, ",\"island\":%d", a->island) != TPX_OK)
            return err->code;
    } else if (tpx_buf_adds(b, ",\"island\":null", err) != TPX_OK) {
        return err->code;
    }
    if (a->nic >= 0 && (size_t)a->nic < d->n_nics) {
        if (tpx_buf_adds(b, ",", err) != TPX_OK ||
            add_key_str(b, "nic", d->nics[a->nic].name, err) != TPX_OK)
            return err->code;
    } else if (tpx_buf_adds(b, ",\"nic\":null", err) != TPX_OK) {
        return err->code;
    }
    if (tpx_buf_adds(b, ",", err) != TPX_OK ||
        add_key_str(b, "nic_affinity", topo_affinity_name(a->nic_affinity), err) != TPX_OK ||
        tpx_buf_addf(b, err, ",\"primary\":%s}", a->primary ? "true" : "false") != TPX_OK)
        return err->code;
    return TPX_OK;
}

enum tpx_code topo_discovery_override(struct topo_discovery *d, enum topo_fabric fabric,
                                      unsigned domain_size, struct tpx_err *err)
{
    size_t k = 0;

    if (d->count == 0)
        return tpx_err_set(err, TPX_EINVAL,
                           "no accelerators were found, so there is no interconnect to set");
    if (domain_size > 0 && (domain_size > d->count || d->count % domain_size != 0))
        return tpx_err_set(err, TPX_EINVAL,
                           "a domain size of %u does not divide the %zu %s accelerators found",
                           domain_size, d->count, topo_vendor_name(d->vendor));
    if (fabric != TOPO_FABRIC_UNKNOWN)
        d->fabric = fabric;
    if (domain_size > 0) {
        for (size_t i = 0; i < d->n_accels; i++) {
            if (d->accels[i].primary)
                d->accels[i].island = (int)(k++ / domain_size);
        }
        d->domain_size = domain_size;
        d->islands = (unsigned)(d->count / domain_size);
        d->domains_per_node = d->islands;
    }
    d->overridden = true;
    return TPX_OK;
}

enum tpx_code topo_discovery_annotation(const struct topo_discovery *d, const char *hwloc_version,
                                        struct tpx_buf *out, struct tpx_err *err)
{
    if (tpx_buf_adds(out, "{\"version\":1,", err) != TPX_OK ||
        add_key_str(out, "source", d->source, err) != TPX_OK)
        return err->code;
    if (hwloc_version && (tpx_buf_adds(out, ",", err) != TPX_OK ||
                          add_key_str(out, "hwloc", hwloc_version, err) != TPX_OK))
        return err->code;
    if (tpx_buf_adds(out, ",", err) != TPX_OK ||
        add_key_str(out, "accelerator", topo_vendor_name(d->vendor), err) != TPX_OK ||
        tpx_buf_addf(out, err, ",\"count\":%zu,", d->count) != TPX_OK ||
        add_key_str(out, "interconnect", d->count ? topo_fabric_name(d->fabric) : "none", err) !=
            TPX_OK ||
        tpx_buf_addf(out, err,
                     ",\"domain_size\":%u,\"domains_per_node\":%u,\"islands\":%u,"
                     "\"islands_full\":%s,\"min_link_mbps\":%llu,"
                     "\"numa_nodes\":%u,\"nvswitches\":%u,",
                     d->domain_size, d->domains_per_node, d->islands,
                     d->islands_full ? "true" : "false", d->min_link_bw, d->numa_nodes,
                     d->nvswitches) != TPX_OK ||
        add_key_str(out, "gpu_nic_affinity", topo_affinity_name(d->affinity), err) != TPX_OK ||
        (d->overridden && tpx_buf_adds(out, ",\"overridden\":true", err) != TPX_OK) ||
        tpx_buf_adds(out, ",\"accelerators\":[", err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < d->n_accels; i++) {
        if ((i > 0 && tpx_buf_adds(out, ",", err) != TPX_OK) ||
            add_accel(out, d, &d->accels[i], err) != TPX_OK)
            return err->code;
    }
    if (tpx_buf_adds(out, "],\"rdma_nics\":[", err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < d->n_nics; i++) {
        const struct topo_nic *n = &d->nics[i];

        if ((i > 0 && tpx_buf_adds(out, ",", err) != TPX_OK) ||
            tpx_buf_adds(out, "{", err) != TPX_OK || add_key_str(out, "name", n->name, err) ||
            tpx_buf_adds(out, ",", err) != TPX_OK || add_key_str(out, "pci", n->pci_busid, err) ||
            tpx_buf_adds(out, ",", err) != TPX_OK || add_key_numa(out, n->numa, err) != TPX_OK ||
            tpx_buf_adds(out, "}", err) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "]}", err);
}
