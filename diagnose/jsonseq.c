/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/jsonseq.c - a sequence of JSON values (diagnose/jsonseq.h). */
#include "diagnose/jsonseq.h"

#include <ctype.h>
#include <string.h>

#include "common/banned.h"

enum tpx_code dg_json_each(const char *text, size_t len, const char *name, dg_json_fn fn, void *ctx,
                           size_t *count, struct tpx_err *err)
{
    size_t off = 0, line = 1, n = 0;
    enum tpx_code rc = TPX_OK;

    for (;;) {
        json_error_t je;
        json_t *v;

        while (off < len && isspace((unsigned char)text[off])) {
            line += text[off] == '\n';
            off++;
        }
        if (off >= len)
            break;
        /* with JSON_DISABLE_EOF_CHECK, je.position is the number of bytes the value took */
        v = json_loadb(text + off, len - off, JSON_DISABLE_EOF_CHECK, &je);
        if (!v) {
            rc = tpx_err_set(err, TPX_EPARSE, "%s:%zu: %s JSON: %s", name,
                             line + (size_t)(je.line > 0 ? je.line - 1 : 0),
                             strstr(je.text, "end of") ? "truncated" : "invalid", je.text);
            break;
        }
        n++;
        rc = fn(ctx, v, line, err);
        json_decref(v);
        if (rc != TPX_OK)
            break;
        for (size_t i = 0; i < (size_t)je.position && off + i < len; i++)
            line += text[off + i] == '\n';
        off += (size_t)je.position;
    }
    if (count)
        *count = n;
    return rc;
}
