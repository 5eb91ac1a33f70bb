/* SPDX-License-Identifier: Apache-2.0 */
/* topology/model.c - the cluster model: nodes copied in, then sealed into racks (scoped by block),
 * blocks, zones and interconnect domains with an O(1) name index. Pure C: no I/O. */
#include "topology/model.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/sat.h"
#include "common/map.h"

/* A node as stored: the info with its strings owned by the cluster. */
struct node_rec {
    struct topo_node_info info;
    size_t rack;
    size_t block;
    size_t zone;
    size_t domain_first;
    size_t domain_count;
};

struct domain_rec {
    char *name;
    unsigned size;
    bool multinode;
    enum topo_fabric fabric;
    size_t *nodes; /* owned; nnodes entries */
    size_t nnodes;
};

struct rack_rec {
    char *name;
    size_t *nodes;
    size_t nnodes;
    unsigned capacity;
};

struct topo_cluster {
    bool sealed;
    struct node_rec *nodes;
    size_t nnodes;
    size_t nodes_cap;
    struct tpx_map node_index; /* node name (borrowed) -> index */
    struct rack_rec *racks;
    size_t nracks;
    char **blocks;
    size_t nblocks;
    char **zones;
    size_t nzones;
    struct domain_rec *domains;
    size_t ndomains;
    size_t largest_domain; /* TOPO_NONE when there is none */
};

static char *dup_or_null(const char *s, bool *oom)
{
    char *d;

    if (!s)
        return NULL;
    d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

struct topo_cluster *topo_cluster_new(struct tpx_err *err)
{
    struct topo_cluster *c = calloc(1, sizeof(*c));

    if (!c) {
        tpx_err_set(err, TPX_ENOMEM, "cluster: out of memory");
        return NULL;
    }
    c->largest_domain = TOPO_NONE;
    return c;
}

static void free_info_strings(struct topo_node_info *in)
{
    free((char *)in->name);
    free((char *)in->rack);
    free((char *)in->block);
    free((char *)in->zone);
    free((char *)in->domain);
    free((char *)in->resource);
}

enum tpx_code topo_cluster_add(struct topo_cluster *c, const struct topo_node_info *info,
                               struct tpx_err *err)
{
    struct node_rec *r;
    bool oom = false;

    if (c->sealed)
        return tpx_err_set(err, TPX_EINVAL, "cluster: cannot add node '%s' after sealing",
                           info->name ? info->name : "");
    if (!info->name || !info->name[0])
        return tpx_err_set(err, TPX_EINVAL, "cluster: node without a name");
    if (info->domains_per_node > TOPO_DOMAINS_PER_NODE_MAX)
        return tpx_err_set(err, TPX_EINVAL,
                           "cluster: node '%s': domains-per-node %u is more than %d", info->name,
                           info->domains_per_node, TOPO_DOMAINS_PER_NODE_MAX);
    if (info->accel_alloc > TOPO_ACCEL_MAX || info->accel_used > TOPO_ACCEL_MAX ||
        info->domain_size > TOPO_ACCEL_MAX)
        return tpx_err_set(
            err, TPX_EINVAL,
            "cluster: node '%s': more than %u accelerators (allocatable %u, used %u, "
            "domain size %u)",
            info->name, TOPO_ACCEL_MAX, info->accel_alloc, info->accel_used, info->domain_size);
    if (tpx_map_index(&c->node_index, info->name, TOPO_NONE) != TOPO_NONE)
        return tpx_err_set(err, TPX_EEXIST, "cluster: duplicate node '%s'", info->name);
    if (!TPX_GROW(c->nodes, c->nodes_cap, c->nnodes + 1))
        return tpx_err_set(err, TPX_ENOMEM, "cluster: out of memory");
    r = &c->nodes[c->nnodes];
    memset(r, 0, sizeof(*r));
    r->info = *info;
    r->info.name = dup_or_null(info->name, &oom);
    r->info.rack = dup_or_null(info->rack, &oom);
    r->info.block = dup_or_null(info->block, &oom);
    r->info.zone = dup_or_null(info->zone, &oom);
    r->info.domain = dup_or_null(info->domain, &oom);
    r->info.resource = dup_or_null(info->resource, &oom);
    if (oom || !tpx_map_put_index(&c->node_index, r->info.name, c->nnodes)) {
        free_info_strings(&r->info);
        return tpx_err_set(err, TPX_ENOMEM, "cluster: out of memory");
    }
    c->nnodes++;
    return TPX_OK;
}

/* Intern name into a growable string array via map; returns its index or TOPO_NONE on ENOMEM. */
static size_t intern(char ***arr, size_t *n, struct tpx_map *m, const char *name)
{
    size_t i = tpx_map_index(m, name, TOPO_NONE);
    char **na;
    char *d;

    if (i != TOPO_NONE)
        return i;
    na = realloc(*arr, (*n + 1) * sizeof(**arr));
    if (!na)
        return TOPO_NONE;
    *arr = na;
    d = strdup(name);
    if (!d)
        return TOPO_NONE;
    if (!tpx_map_put_index(m, d, *n)) {
        free(d);
        return TOPO_NONE;
    }
    na[*n] = d;
    return (*n)++;
}

/* a + b, or UINT_MAX when that wraps: a sum of capacities saturates rather than shrinks */
static unsigned node_domain_size(const struct topo_node_info *in)
{
    unsigned dpn = in->domains_per_node ? in->domains_per_node : 1;

    if (in->domain_size)
        return in->domain_size;
    return in->accel_alloc / dpn;
}

static bool push_index(size_t **arr, size_t *n, size_t v)
{
    size_t *na;

    /* grow at powers of two */
    if ((*n & (*n - 1)) == 0 || *n == 0) {
        size_t ncap = *n ? *n * 2 : 4;
        na = realloc(*arr, ncap * sizeof(**arr));
        if (!na)
            return false;
        *arr = na;
    }
    (*arr)[(*n)++] = v;
    return true;
}

/*
 * The rack a node names, as a (not NUL-terminated) prefix: its rack label; else, for a clique that
 * stands for the rack, the domain up to its last '.' (GFD writes "<ClusterUUID>.<CliqueID>");
 * else the node's own name (a rack of one).
 */
static const char *rack_value(const struct topo_node_info *in, size_t *len)
{
    const char *dot;

    if (in->rack) {
        *len = strlen(in->rack);
        return in->rack;
    }
    if (in->rack_from_domain && in->domain) {
        dot = strrchr(in->domain, '.');
        *len = dot && dot != in->domain ? (size_t)(dot - in->domain) : strlen(in->domain);
        return in->domain;
    }
    *len = strlen(in->name);
    return in->name;
}

static enum tpx_code seal_racks(struct topo_cluster *c, struct tpx_err *err)
{
    struct tpx_map rmap = {0}, bmap = {0}, zmap = {0};
    char **rnames = NULL;
    size_t nr = 0;
    bool any_block = false;
    enum tpx_code rc = TPX_OK;

    for (size_t i = 0; i < c->nnodes; i++)
        any_block = any_block || c->nodes[i].info.block;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node_rec *r = &c->nodes[i];
        const struct topo_node_info *in = &r->info;
        char key[512];
        size_t len;
        size_t rl;
        const char *rv = rack_value(in, &rl);

        r->block = in->block ? intern(&c->blocks, &c->nblocks, &bmap, in->block) : TOPO_NONE;
        r->zone = in->zone ? intern(&c->zones, &c->nzones, &zmap, in->zone) : TOPO_NONE;
        if ((in->block && r->block == TOPO_NONE) || (in->zone && r->zone == TOPO_NONE))
            goto oom;
        /* racks are scoped by block: the display name "b1/r3" is also the key */
        key[0] = '\0';
        if (any_block && rv != in->name) {
            len = strlen(in->block ? in->block : "-");
            if (len > 250)
                len = 250;
            memcpy(key, in->block ? in->block : "-", len);
            key[len++] = '/';
            key[len] = '\0';
        }
        len = strlen(key);
        if (rl > sizeof(key) - len - 1)
            rl = sizeof(key) - len - 1;
        memcpy(key + len, rv, rl);
        key[len + rl] = '\0';
        r->rack = intern(&rnames, &nr, &rmap, key);
        if (r->rack == TOPO_NONE)
            goto oom;
    }
    c->racks = calloc(nr ? nr : 1, sizeof(*c->racks));
    if (!c->racks)
        goto oom;
    c->nracks = nr;
    for (size_t k = 0; k < nr; k++) {
        c->racks[k].name = rnames[k];
        rnames[k] = NULL;
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        struct rack_rec *rk = &c->racks[c->nodes[i].rack];
        if (!push_index(&rk->nodes, &rk->nnodes, i))
            goto oom;
        rk->capacity = tpx_sat_add(rk->capacity, c->nodes[i].info.accel_alloc);
    }
    goto out;
oom:
    rc = tpx_err_set(err, TPX_ENOMEM, "cluster: out of memory");
out:
    for (size_t k = 0; k < nr; k++)
        free(rnames ? rnames[k] : NULL);
    free(rnames);
    tpx_map_release(&rmap);
    tpx_map_release(&bmap);
    tpx_map_release(&zmap);
    return rc;
}

static enum tpx_code seal_domains(struct topo_cluster *c, struct tpx_err *err)
{
    struct tpx_map dmap = {0};
    size_t total = 0;
    enum tpx_code rc = TPX_OK;

    /* upper bound: every multi-node value once, plus domains_per_node per plain node */
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct topo_node_info *in = &c->nodes[i].info;
        total += in->domain ? 1 : (in->domains_per_node ? in->domains_per_node : 1);
    }
    c->domains = calloc(total ? total : 1, sizeof(*c->domains));
    if (!c->domains)
        return tpx_err_set(err, TPX_ENOMEM, "cluster: out of memory");
    for (size_t i = 0; i < c->nnodes; i++) {
        struct node_rec *r = &c->nodes[i];
        const struct topo_node_info *in = &r->info;

        if (in->domain) {
            size_t d = tpx_map_index(&dmap, in->domain, TOPO_NONE);
            if (d == TOPO_NONE) {
                d = c->ndomains++;
                c->domains[d].name = strdup(in->domain);
                c->domains[d].multinode = true;
                c->domains[d].fabric = in->fabric;
                if (!c->domains[d].name || !tpx_map_put_index(&dmap, c->domains[d].name, d))
                    goto oom;
            }
            if (!push_index(&c->domains[d].nodes, &c->domains[d].nnodes, i))
                goto oom;
            c->domains[d].size = tpx_sat_add(c->domains[d].size, in->accel_alloc);
            if (in->fabric > c->domains[d].fabric)
                c->domains[d].fabric = in->fabric;
            r->domain_first = d;
            r->domain_count = 1;
            continue;
        }
        unsigned dpn = in->domains_per_node ? in->domains_per_node : 1;
        r->domain_first = c->ndomains;
        r->domain_count = dpn;
        for (unsigned k = 0; k < dpn; k++) {
            struct domain_rec *dr = &c->domains[c->ndomains++];
            size_t nl = strlen(in->name) + 16;
            dr->name = malloc(nl);
            if (!dr->name)
                goto oom;
            if (dpn == 1)
                snprintf(dr->name, nl, "%s", in->name);
            else
                snprintf(dr->name, nl, "%s/d%u", in->name, k);
            dr->size = node_domain_size(in);
            dr->multinode = false;
            dr->fabric = in->fabric;
            if (!push_index(&dr->nodes, &dr->nnodes, i))
                goto oom;
        }
    }
    for (size_t d = 0; d < c->ndomains; d++) {
        const struct domain_rec *dr = &c->domains[d];
        if (c->largest_domain == TOPO_NONE || dr->size > c->domains[c->largest_domain].size ||
            (dr->size == c->domains[c->largest_domain].size &&
             dr->fabric > c->domains[c->largest_domain].fabric))
            c->largest_domain = d;
    }
    goto out;
oom:
    rc = tpx_err_set(err, TPX_ENOMEM, "cluster: out of memory");
out:
    tpx_map_release(&dmap);
    return rc;
}

/*
 * A rack where one node has a clique is an NVL72 rack (GFD labels a node only once its fabric is
 * COMPLETED), so an accelerator node there without one is not on the fabric. Incomplete nodes
 * lose any multi-node domain value, whichever key gave it: they must not be counted in a domain.
 */
static void mark_incomplete(struct topo_cluster *c)
{
    for (size_t k = 0; k < c->nracks; k++) {
        const struct rack_rec *rk = &c->racks[k];
        bool nvl_rack = false;

        for (size_t j = 0; j < rk->nnodes && !nvl_rack; j++)
            nvl_rack = c->nodes[rk->nodes[j]].info.nvl == TOPO_NVL_COMPLETED;
        for (size_t j = 0; j < rk->nnodes && nvl_rack; j++) {
            struct topo_node_info *in = &c->nodes[rk->nodes[j]].info;
            if (in->nvl == TOPO_NVL_NONE && in->resource && in->accel_alloc > 0)
                in->nvl = TOPO_NVL_INCOMPLETE;
        }
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        struct topo_node_info *in = &c->nodes[i].info;
        if (in->nvl == TOPO_NVL_INCOMPLETE && in->domain) {
            free((char *)in->domain);
            in->domain = NULL;
        }
    }
}

enum tpx_code topo_cluster_seal(struct topo_cluster *c, struct tpx_err *err)
{
    enum tpx_code rc;

    if (c->sealed)
        return TPX_OK;
    rc = seal_racks(c, err);
    if (rc == TPX_OK) {
        mark_incomplete(c);
        rc = seal_domains(c, err);
    }
    if (rc == TPX_OK)
        c->sealed = true;
    return rc;
}

void topo_cluster_free(struct topo_cluster *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nnodes; i++)
        free_info_strings(&c->nodes[i].info);
    free(c->nodes);
    tpx_map_release(&c->node_index);
    for (size_t k = 0; k < c->nracks; k++) {
        free(c->racks[k].name);
        free(c->racks[k].nodes);
    }
    free(c->racks);
    for (size_t k = 0; k < c->nblocks; k++)
        free(c->blocks[k]);
    free(c->blocks);
    for (size_t k = 0; k < c->nzones; k++)
        free(c->zones[k]);
    free(c->zones);
    for (size_t d = 0; d < c->ndomains; d++) {
        free(c->domains[d].name);
        free(c->domains[d].nodes);
    }
    free(c->domains);
    free(c);
}

size_t topo_cluster_node_count(const struct topo_cluster *c)
{
    return c->nnodes;
}

const struct topo_node_info *topo_cluster_node(const struct topo_cluster *c, size_t i)
{
    return i < c->nnodes ? &c->nodes[i].info : NULL;
}

size_t topo_cluster_find(const struct topo_cluster *c, const char *name)
{
    return tpx_map_index(&c->node_index, name, TOPO_NONE);
}

size_t topo_cluster_rack_count(const struct topo_cluster *c)
{
    return c->nracks;
}

size_t topo_cluster_node_rack(const struct topo_cluster *c, size_t node)
{
    return node < c->nnodes ? c->nodes[node].rack : TOPO_NONE;
}

const char *topo_cluster_rack_name(const struct topo_cluster *c, size_t rack)
{
    return rack < c->nracks ? c->racks[rack].name : NULL;
}

const size_t *topo_cluster_rack_nodes(const struct topo_cluster *c, size_t rack, size_t *n)
{
    if (rack >= c->nracks) {
        *n = 0;
        return NULL;
    }
    *n = c->racks[rack].nnodes;
    return c->racks[rack].nodes;
}

unsigned topo_cluster_rack_capacity(const struct topo_cluster *c, size_t rack)
{
    return rack < c->nracks ? c->racks[rack].capacity : 0;
}

enum topo_nvl topo_cluster_node_nvl(const struct topo_cluster *c, size_t node)
{
    return node < c->nnodes ? c->nodes[node].info.nvl : TOPO_NVL_NONE;
}

size_t topo_cluster_block_count(const struct topo_cluster *c)
{
    return c->nblocks;
}

size_t topo_cluster_node_block(const struct topo_cluster *c, size_t node)
{
    return node < c->nnodes ? c->nodes[node].block : TOPO_NONE;
}

const char *topo_cluster_block_name(const struct topo_cluster *c, size_t block)
{
    return block < c->nblocks ? c->blocks[block] : NULL;
}

size_t topo_cluster_zone_count(const struct topo_cluster *c)
{
    return c->nzones;
}

size_t topo_cluster_node_zone(const struct topo_cluster *c, size_t node)
{
    return node < c->nnodes ? c->nodes[node].zone : TOPO_NONE;
}

const char *topo_cluster_zone_name(const struct topo_cluster *c, size_t zone)
{
    return zone < c->nzones ? c->zones[zone] : NULL;
}

size_t topo_cluster_domain_count(const struct topo_cluster *c)
{
    return c->ndomains;
}

size_t topo_cluster_node_domain(const struct topo_cluster *c, size_t node)
{
    return node < c->nnodes ? c->nodes[node].domain_first : TOPO_NONE;
}

size_t topo_cluster_node_domains(const struct topo_cluster *c, size_t node, size_t *n)
{
    if (node >= c->nnodes) {
        *n = 0;
        return TOPO_NONE;
    }
    *n = c->nodes[node].domain_count;
    return c->nodes[node].domain_first;
}

const char *topo_cluster_domain_name(const struct topo_cluster *c, size_t domain)
{
    return domain < c->ndomains ? c->domains[domain].name : NULL;
}

unsigned topo_cluster_domain_size(const struct topo_cluster *c, size_t domain)
{
    return domain < c->ndomains ? c->domains[domain].size : 0;
}

bool topo_cluster_domain_is_multinode(const struct topo_cluster *c, size_t domain)
{
    return domain < c->ndomains && c->domains[domain].multinode;
}

enum topo_fabric topo_cluster_domain_fabric(const struct topo_cluster *c, size_t domain)
{
    return domain < c->ndomains ? c->domains[domain].fabric : TOPO_FABRIC_UNKNOWN;
}

const size_t *topo_cluster_domain_nodes(const struct topo_cluster *c, size_t domain, size_t *n)
{
    if (domain >= c->ndomains) {
        *n = 0;
        return NULL;
    }
    *n = c->domains[domain].nnodes;
    return c->domains[domain].nodes;
}

unsigned topo_cluster_largest_domain(const struct topo_cluster *c, enum topo_fabric *fabric,
                                     bool *multinode)
{
    const struct domain_rec *d;

    if (c->largest_domain == TOPO_NONE) {
        if (fabric)
            *fabric = TOPO_FABRIC_UNKNOWN;
        if (multinode)
            *multinode = false;
        return 0;
    }
    d = &c->domains[c->largest_domain];
    if (fabric)
        *fabric = d->fabric;
    if (multinode)
        *multinode = d->multinode;
    return d->size;
}

size_t topo_cluster_largest_domain_index(const struct topo_cluster *c)
{
    return c->largest_domain;
}

static bool str_same(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

bool topo_node_info_same_place(const struct topo_node_info *a, const struct topo_node_info *b)
{
    return str_same(a->rack, b->rack) && str_same(a->block, b->block) &&
           str_same(a->zone, b->zone) && str_same(a->domain, b->domain) &&
           str_same(a->resource, b->resource) && a->accel_alloc == b->accel_alloc &&
           a->fabric == b->fabric && a->domain_size == b->domain_size &&
           a->domains_per_node == b->domains_per_node && a->unschedulable == b->unschedulable &&
           a->nvl == b->nvl && a->rack_from_domain == b->rack_from_domain &&
           a->rdma_known == b->rdma_known && a->rdma_nics == b->rdma_nics;
}
