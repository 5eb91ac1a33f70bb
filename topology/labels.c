/* SPDX-License-Identifier: Apache-2.0 */
/* topology/labels.c - node labels -> model values (DESIGN.md precedence table) and hygiene checks.
 * Pure string code: no JSON, no I/O, no logging. */
#include "topology/labels.h"

#include <stdlib.h>
#include <string.h>

const char *topo_level_name(enum topo_level level)
{
    static const char *const names[] = {"domain", "rack", "block", "zone"};
    return (unsigned)level < TOPO_LEVEL_COUNT ? names[level] : "unknown";
}

const struct topo_label_config *topo_label_config_default(void)
{
    static const struct topo_label_config cfg = {{NULL}, {0}, NULL, 0};
    return &cfg;
}

enum tpx_code topo_labels_decode(const struct topo_label_config *cfg, const struct topo_kv *labels,
                                 size_t nlabels, const struct topo_kv *alloc, size_t nalloc,
                                 struct topo_node_info *out, struct topo_label_explain *explain,
                                 struct tpx_err *err)
{
    (void)cfg;
    (void)labels;
    (void)nlabels;
    (void)alloc;
    (void)nalloc;
    (void)out;
    (void)explain;
    return tpx_err_set(err, TPX_ENOTSUP, "labels: not implemented yet");
}

bool topo_quantity_whole(const char *s, unsigned *out)
{
    (void)s;
    (void)out;
    return false;
}

size_t topo_labels_hygiene(const struct topo_cluster *c, char ***out)
{
    (void)c;
    *out = NULL;
    return 0;
}

void topo_warnings_free(char **w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i]);
    free(w);
}
