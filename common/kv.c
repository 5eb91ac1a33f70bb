/* SPDX-License-Identifier: Apache-2.0 */
/* common/kv.c - see kv.h. */
#include "common/kv.h"

#include <string.h>

const char *tpx_kv_get(const struct topo_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; kv && i < n; i++) {
        if (kv[i].key && kv[i].value && strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    }
    return NULL;
}
