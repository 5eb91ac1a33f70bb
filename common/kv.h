/* SPDX-License-Identifier: Apache-2.0 */
/* common/kv.h - a borrowed key/value pair (labels, annotations, resource quantities, the keys of an
 * engine's config file) and the lookup every reader of them shares. The struct keeps the name it
 * had in topology/, where it began (docs/ARCHITECTURE.md, "Names"). Pure: cannot fail. */
#ifndef TPX_COMMON_KV_H
#define TPX_COMMON_KV_H

#include <stddef.h>

struct topo_kv {
    const char *key;
    const char *value;
};

/* The value of the first pair whose key is key (pairs with a NULL key or value are skipped), or
 * NULL. An empty value is returned as "" (a caller that reads "" as absent tests it). */
const char *tpx_kv_get(const struct topo_kv *kv, size_t n, const char *key);

#endif
