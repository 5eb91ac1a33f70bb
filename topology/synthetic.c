/* SPDX-License-Identifier: Apache-2.0 */
/* topology/synthetic.c - clusters from a one-line spec. Pure: no I/O. */
#include "topology/synthetic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct topo_cluster *topo_cluster_synthetic(const char *spec, struct tpx_err *err)
{
    (void)spec;
    tpx_err_set(err, TPX_ENOTSUP, "synthetic: not implemented yet");
    return NULL;
}

size_t topo_synthetic_node_labels(const struct topo_cluster *c, size_t i, struct topo_kv *out,
                                  char storage[][64], size_t max)
{
    (void)c;
    (void)i;
    (void)out;
    (void)storage;
    (void)max;
    return 0;
}
