/* SPDX-License-Identifier: Apache-2.0 */
/* kube/internal.h - helpers shared by the files of kube/ only (git's refs-internal.h pattern):
 * nothing outside kube/ includes this header. */
#ifndef TPX_KUBE_INTERNAL_H
#define TPX_KUBE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"

/* Cap on the small files kube/ reads: tokens, namespaces, CA bundles. */
#define KUBE_SMALL_FILE_CAP ((size_t)1 << 20)

/* A small file with trailing whitespace stripped (token, namespace): *out is malloc'd. */
enum tpx_code kube_read_trimmed(const char *path, char **out, struct tpx_err *err);

/* obj[key] when it is a string, else NULL. Borrowed from obj. */
static inline const char *kube_jstr(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_string(v) ? json_string_value(v) : NULL;
}

#endif
