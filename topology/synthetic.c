/* SPDX-License-Identifier: Apache-2.0 */
/* topology/synthetic.c - clusters from a one-line spec ("racks=4,nodes-per-rack=16,..."). Pure: no
 * I/O. The node labels it reports are the ones `topox label` and an inventory would have written.
 */
#include "topology/synthetic.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct spec {
    unsigned racks, nodes_per_rack, gpus, domain_nodes, dpn, blocks, zones, used;
    unsigned rdma, no_rdma_racks; /* rdma UINT_MAX: not said (unknown) */
    enum topo_fabric fabric;
    char resource[128];
};

static const char *const num_keys[] = {
    "racks",  "nodes-per-rack", "gpus-per-node", "domain-nodes", "domains-per-node",
    "blocks", "zones",          "used",          "rdma-nics",    "no-rdma-racks"};

static unsigned *num_field(struct spec *s, size_t k)
{
    unsigned *f[] = {&s->racks,  &s->nodes_per_rack, &s->gpus, &s->domain_nodes, &s->dpn,
                     &s->blocks, &s->zones,          &s->used, &s->rdma,         &s->no_rdma_racks};
    return f[k];
}

static bool parse_uint(const char *v, size_t len, unsigned *out)
{
    unsigned long x = 0;

    if (len == 0 || len > 9)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        x = x * 10 + (unsigned long)(v[i] - '0');
    }
    *out = (unsigned)x;
    return true;
}

static enum tpx_code parse_pair(struct spec *s, const char *p, size_t len, struct tpx_err *err)
{
    const char *eq = memchr(p, '=', len);
    size_t klen, vlen;
    const char *v;

    if (!eq)
        return tpx_err_set(err, TPX_EINVAL, "synthetic spec: '%.*s' is not key=value", (int)len, p);
    klen = (size_t)(eq - p);
    v = eq + 1;
    vlen = len - klen - 1;
    for (size_t k = 0; k < sizeof(num_keys) / sizeof(num_keys[0]); k++) {
        if (strlen(num_keys[k]) != klen || memcmp(num_keys[k], p, klen) != 0)
            continue;
        if (!parse_uint(v, vlen, num_field(s, k)))
            return tpx_err_set(err, TPX_EINVAL,
                               "synthetic spec: key '%s': '%.*s' is not a whole number",
                               num_keys[k], (int)vlen, v);
        return TPX_OK;
    }
    if (klen == 12 && memcmp(p, "interconnect", klen) == 0) {
        char name[32];
        if (vlen >= sizeof(name))
            vlen = sizeof(name) - 1;
        memcpy(name, v, vlen);
        name[vlen] = '\0';
        if (!topo_fabric_parse(name, &s->fabric))
            return tpx_err_set(err, TPX_EINVAL,
                               "synthetic spec: key 'interconnect': unknown value '%s' (nvswitch, "
                               "nvlink, xgmi, hccs or pcie)",
                               name);
        return TPX_OK;
    }
    if (klen == 8 && memcmp(p, "resource", klen) == 0) {
        if (vlen == 0 || vlen >= sizeof(s->resource))
            return tpx_err_set(err, TPX_EINVAL, "synthetic spec: key 'resource': bad value");
        memcpy(s->resource, v, vlen);
        s->resource[vlen] = '\0';
        return TPX_OK;
    }
    return tpx_err_set(
        err, TPX_EINVAL,
        "synthetic spec: unknown key '%.*s' (racks, nodes-per-rack, gpus-per-node, "
        "interconnect, resource, domain-nodes, domains-per-node, blocks, zones, used, rdma-nics, "
        "no-rdma-racks)",
        (int)klen, p);
}

static enum tpx_code parse_spec(const char *text, struct spec *s, struct tpx_err *err)
{
    const char *p;

    *s = (struct spec){1, 1, 8, 1, 1, 0, 0, 0, UINT_MAX, 0, TOPO_FABRIC_NVSWITCH, "nvidia.com/gpu"};
    if (!text)
        return tpx_err_set(err, TPX_EINVAL, "synthetic spec: empty");
    if (strcmp(text, "example") == 0)
        text = TOPO_SYNTHETIC_EXAMPLE;
    for (p = text; *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0 && parse_pair(s, p, len, err) != TPX_OK)
            return err->code;
        p += len;
        if (*p == ',')
            p++;
    }
    if (s->racks == 0 || s->nodes_per_rack == 0 || s->domain_nodes == 0 || s->dpn == 0)
        return tpx_err_set(err, TPX_EINVAL,
                           "synthetic spec: racks, nodes-per-rack, domain-nodes and "
                           "domains-per-node must be at least 1");
    if ((unsigned long long)s->racks * s->nodes_per_rack > 1000000ULL)
        return tpx_err_set(err, TPX_EINVAL, "synthetic spec: more than 1000000 nodes");
    if (s->gpus % s->dpn != 0)
        return tpx_err_set(err, TPX_EINVAL,
                           "synthetic spec: gpus-per-node %u is not divisible by "
                           "domains-per-node %u",
                           s->gpus, s->dpn);
    if (s->domain_nodes > 1 && s->dpn > 1)
        return tpx_err_set(err, TPX_EINVAL,
                           "synthetic spec: domain-nodes and domains-per-node cannot both be > 1");
    if (s->blocks > s->racks)
        return tpx_err_set(err, TPX_EINVAL, "synthetic spec: blocks %u > racks %u", s->blocks,
                           s->racks);
    if (s->used > s->gpus)
        return tpx_err_set(err, TPX_EINVAL, "synthetic spec: used %u > gpus-per-node %u", s->used,
                           s->gpus);
    return TPX_OK;
}

/* v in decimal, zero-padded to width (at most 10), into out[16]. */
static void padded(char out[16], unsigned v, int width)
{
    char d[16];
    int n = snprintf(d, sizeof(d), "%u", v), pad = width > 10 ? 10 - n : width - n;

    if (pad < 0)
        pad = 0;
    memset(out, '0', (size_t)pad);
    memcpy(out + pad, d, (size_t)n + 1);
}

static int digits(unsigned v)
{
    int d = 1;

    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d < 2 ? 2 : d;
}

struct topo_cluster *topo_cluster_synthetic(const char *text, struct tpx_err *err)
{
    struct spec s;
    struct topo_cluster *c;
    int rw, nw;
    unsigned clique = 0;

    if (parse_spec(text, &s, err) != TPX_OK)
        return NULL;
    c = topo_cluster_new(err);
    if (!c)
        return NULL;
    rw = digits(s.racks);
    nw = digits(s.nodes_per_rack);
    for (unsigned r = 0; r < s.racks; r++) {
        char rack[32], block[32], zone[32];
        char num[16];
        padded(num, r + 1, rw);
        snprintf(rack, sizeof(rack), "r%s", num);
        snprintf(block, sizeof(block), "b%u", s.blocks ? r * s.blocks / s.racks + 1 : 0);
        snprintf(zone, sizeof(zone), "zone-%c", s.zones ? 'a' + (char)(r % s.zones % 26) : 'a');
        for (unsigned n = 0; n < s.nodes_per_rack; n++) {
            char name[80], dom[32];
            struct topo_node_info in = {0};
            if (s.domain_nodes > 1 && n % s.domain_nodes == 0)
                clique++;
            char nnum[16];
            padded(nnum, n + 1, nw);
            snprintf(name, sizeof(name), "%s-n%s", rack, nnum);
            snprintf(dom, sizeof(dom), "clique-%u", clique);
            in.name = name;
            in.rack = rack;
            in.block = s.blocks ? block : NULL;
            in.zone = s.zones ? zone : NULL;
            in.domain = s.domain_nodes > 1 ? dom : NULL;
            in.resource = s.resource;
            in.accel_alloc = s.gpus;
            in.accel_used = s.used;
            in.fabric = s.fabric;
            in.domain_size = s.gpus / s.dpn;
            in.domains_per_node = s.dpn;
            in.rdma_known = s.rdma != UINT_MAX || r < s.no_rdma_racks;
            in.rdma_nics = r < s.no_rdma_racks || !in.rdma_known ? 0 : s.rdma;
            if (topo_cluster_add(c, &in, err) != TPX_OK)
                goto fail;
        }
    }
    if (topo_cluster_seal(c, err) != TPX_OK)
        goto fail;
    return c;
fail:
    topo_cluster_free(c);
    return NULL;
}

size_t topo_synthetic_node_labels(const struct topo_cluster *c, size_t i, struct topo_kv *out,
                                  char storage[][64], size_t max)
{
    const struct topo_node_info *in = topo_cluster_node(c, i);
    size_t n = 0;
    unsigned dpn;

    if (!in)
        return 0;
    dpn = in->domains_per_node ? in->domains_per_node : 1;
#define PUT(k, ...)                                                                                \
    do {                                                                                           \
        if (n < max) {                                                                             \
            snprintf(storage[n], 64, __VA_ARGS__);                                                 \
            out[n].key = (k);                                                                      \
            out[n].value = storage[n];                                                             \
            n++;                                                                                   \
        }                                                                                          \
    } while (0)
    if (in->rack)
        PUT("topox.io/rack", "%.63s", in->rack);
    if (in->block)
        PUT("topox.io/block", "%.63s", in->block);
    if (in->zone)
        PUT("topology.kubernetes.io/zone", "%.63s", in->zone);
    if (in->domain)
        PUT("nvidia.com/gpu.clique", "%.63s", in->domain);
    PUT("topox.io/interconnect", "%s", topo_fabric_name(in->fabric));
    PUT("topox.io/domain-size", "%u", in->domain_size ? in->domain_size : in->accel_alloc / dpn);
    PUT("topox.io/domains-per-node", "%u", dpn);
    if (in->rdma_known)
        PUT("topox.io/rdma-nics", "%u", in->rdma_nics);
#undef PUT
    return n;
}
