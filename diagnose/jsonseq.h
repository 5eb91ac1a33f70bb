/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/jsonseq.h - one JSON value after another (one document, JSON lines, or documents
 * written back to back), each handed to a callback with the line it starts on. Private to
 * diagnose/: bench.c and series.c read their files through it. */
#ifndef TPX_DIAGNOSE_JSONSEQ_H
#define TPX_DIAGNOSE_JSONSEQ_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"

/* Called once per value (borrowed for the call); a code other than TPX_OK stops the walk. */
typedef enum tpx_code (*dg_json_fn)(void *ctx, const json_t *v, size_t line, struct tpx_err *err);

/* TPX_EPARSE "NAME:LINE: truncated JSON: ..." or "... invalid JSON: ..." at the first bad value;
 * whatever fn returns; TPX_OK at the end of text. *count (may be NULL) is the number of values. */
enum tpx_code dg_json_each(const char *text, size_t len, const char *name, dg_json_fn fn, void *ctx,
                           size_t *count, struct tpx_err *err);

#endif
