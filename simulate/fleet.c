/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/fleet.c - the clusters `topox simulate --cluster` replays on: a synthetic spec
 * (topology/synthetic.c), several joined with '+' into one fleet (each part's racks, blocks and
 * NVLink domains kept apart by a prefix), or a named shape of docs/simulate.md ("Cluster shapes").
 */
#include "simulate/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/synthetic.h"

/* The named shapes: sized so that 20 seeds x 3 loads replay in minutes (docs/simulate.md). */
static const struct {
    const char *name, *spec;
} shapes[] = {
    /* 8-GPU NVSwitch nodes (HGX H100/H200) in racks of 8, two blocks of 8 racks */
    {"hgx", "racks=16,nodes-per-rack=8,gpus-per-node=8,blocks=2"},
    /* GB200 NVL72-like: 18 nodes of 4 GPUs a rack, one NVLink domain a rack, two blocks */
    {"gb200", "racks=8,nodes-per-rack=18,gpus-per-node=4,domain-nodes=18,blocks=2"},
    /* a mixed fleet: HGX racks of 8 and of 4 nodes, and 4 NVL72-like racks */
    {"mixed", "racks=8,nodes-per-rack=8,gpus-per-node=8,blocks=1+racks=4,nodes-per-rack=4,"
              "gpus-per-node=8,blocks=1+racks=4,nodes-per-rack=18,gpus-per-node=4,"
              "domain-nodes=18,blocks=1"},
    /* the openb trace's 1,213 GPU nodes by GPU count (617 x 8, 54 x 4, 518 x 2, 24 x 1), in
       racks of 8 nodes (SOURCES.md of tests/fixtures/simulate) */
    {"openb", "racks=77,nodes-per-rack=8,gpus-per-node=8,blocks=1+racks=7,nodes-per-rack=8,"
              "gpus-per-node=4,blocks=1+racks=65,nodes-per-rack=8,gpus-per-node=2,blocks=1+"
              "racks=3,nodes-per-rack=8,gpus-per-node=1,blocks=1"},
};

const char *sim_cluster_spec(const char *name)
{
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        if (strcmp(name, shapes[i].name) == 0)
            return shapes[i].spec;
    }
    return name;
}

/* Add every node of part (from a '+' spec) to c, names, racks, blocks and domains prefixed. */
static enum tpx_code add_part(struct topo_cluster *c, const struct topo_cluster *part, unsigned k,
                              struct tpx_err *err)
{
    for (size_t i = 0; i < topo_cluster_node_count(part); i++) {
        struct topo_node_info in = *topo_cluster_node(part, i);
        char name[160], rack[96], block[96], dom[96];
        snprintf(name, sizeof(name), "f%u-%s", k, in.name);
        snprintf(rack, sizeof(rack), "f%u-%s", k, in.rack ? in.rack : "r");
        snprintf(block, sizeof(block), "f%u-%s", k, in.block ? in.block : "b");
        in.name = name;
        in.rack = rack;
        in.block = in.block ? block : NULL;
        if (in.domain) {
            snprintf(dom, sizeof(dom), "f%u-%s", k, in.domain);
            in.domain = dom;
        }
        if (topo_cluster_add(c, &in, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

struct topo_cluster *sim_cluster_new(const char *spec, struct tpx_err *err)
{
    const char *text = sim_cluster_spec(spec);
    struct topo_cluster *c;
    unsigned k = 0;

    if (!strchr(text, '+'))
        return topo_cluster_synthetic(text, err);
    if (text[0] == '+' || text[strlen(text) - 1] == '+' || strstr(text, "++")) {
        tpx_err_set(err, TPX_EINVAL, "fleet '%s': an empty part", text);
        return NULL;
    }
    c = topo_cluster_new(err);
    if (!c)
        return NULL;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "+");
        char part_spec[512];
        struct topo_cluster *part;
        if (len == 0 || len >= sizeof(part_spec)) {
            tpx_err_set(err, TPX_EINVAL, "fleet '%s': an empty or too long part", text);
            goto fail;
        }
        memcpy(part_spec, p, len);
        part_spec[len] = '\0';
        part = topo_cluster_synthetic(part_spec, err);
        if (!part || add_part(c, part, ++k, err) != TPX_OK) {
            topo_cluster_free(part);
            goto fail;
        }
        topo_cluster_free(part);
        p += len + (p[len] == '+');
    }
    if (topo_cluster_seal(c, err) == TPX_OK)
        return c;
fail:
    topo_cluster_free(c);
    return NULL;
}
