/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_labels.c - libFuzzer target for node labels -> model (topology/labels.c): up to 16
 * nodes, each a block of "key=value" lines (labels, then a "--" line, then allocatable resources
 * as "name=quantity"), separated by "==" lines. Every node goes through topo_labels_decode() with
 * the default label config, the ones that decode are added to one cluster, which is sealed and
 * checked by topo_labels_hygiene(); every value also goes through topo_quantity_whole().
 *   build/fuzz/fuzz/fuzz_labels -dict=fuzz/dict/labels.dict fuzz/seeds/fuzz_labels */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/labels.h"
#include "topology/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_NODES = 16, MAX_KV = 64 };

struct node_in {
    struct topo_kv labels[MAX_KV];
    size_t nlabels;
    struct topo_kv alloc[MAX_KV];
    size_t nalloc;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    struct node_in *nodes = calloc(MAX_NODES, sizeof(*nodes));
    size_t nn = 1;
    bool in_alloc = false;
    struct topo_cluster *c = NULL;
    struct tpx_err err = TPX_ERR_INIT;
    char *p;

    if (!text || !nodes)
        goto out;
    memcpy(text, data, size);
    text[size] = '\0';
    /* strtok_r is banned in the project; a NUL in the input simply ends it here. */
    for (p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        char *eq;
        struct node_in *cur = &nodes[nn - 1];

        if (nl)
            *nl = '\0';
        if (strcmp(p, "==") == 0) {
            if (nn == MAX_NODES)
                break;
            nn++;
            in_alloc = false;
        } else if (strcmp(p, "--") == 0) {
            in_alloc = true;
        } else if ((eq = strchr(p, '=')) != NULL) {
            struct topo_kv *kv = in_alloc ? cur->alloc : cur->labels;
            size_t *n = in_alloc ? &cur->nalloc : &cur->nlabels;
            unsigned q;

            *eq = '\0';
            if (*n < MAX_KV) {
                kv[*n].key = p;
                kv[*n].value = eq + 1;
                (*n)++;
            }
            (void)topo_quantity_whole(eq + 1, &q);
        }
        p = nl ? nl + 1 : NULL;
    }
    c = topo_cluster_new(&err);
    if (!c)
        goto out;
    for (size_t i = 0; i < nn; i++) {
        struct topo_node_info info;
        struct topo_label_explain ex;
        char name[32];

        memset(&info, 0, sizeof(info));
        tpx_err_clear(&err);
        if (topo_labels_decode(topo_label_config_default(), nodes[i].labels, nodes[i].nlabels,
                               nodes[i].alloc, nodes[i].nalloc, &info, &ex, &err) != TPX_OK)
            continue;
        snprintf(name, sizeof(name), "n%zu", i);
        info.name = name;
        tpx_err_clear(&err);
        (void)topo_cluster_add(c, &info, &err);
    }
    tpx_err_clear(&err);
    if (topo_cluster_seal(c, &err) == TPX_OK) {
        char **w = NULL;
        size_t nw = topo_labels_hygiene(c, &w);
        enum topo_fabric fab;

        topo_warnings_free(w, nw);
        (void)topo_cluster_largest_domain(c, &fab, NULL);
    }
out:
    topo_cluster_free(c);
    free(nodes);
    free(text);
    return 0;
}
