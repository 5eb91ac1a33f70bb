/* SPDX-License-Identifier: Apache-2.0 */
/* common/file.c - whole-file reads through a capped buffer. */
#include "common/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"

enum tpx_code tpx_read_file(const char *path, size_t max_bytes, char **data, size_t *len,
                            struct tpx_err *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    struct tpx_buf b;
    char chunk[65536];
    size_t n;

    *data = NULL;
    *len = 0;
    if (!f)
        return tpx_err_errno(err, errno, "cannot open '%s'", path);
    tpx_buf_init(&b, max_bytes);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (tpx_buf_add(&b, chunk, n, err) != TPX_OK) {
            tpx_err_prefix(err, "'%s'", path);
            break;
        }
    }
    if (err->code == TPX_OK && ferror(f))
        tpx_err_errno(err, errno, "cannot read '%s'", path);
    if (!is_stdin)
        fclose(f);
    if (err->code != TPX_OK) {
        tpx_buf_release(&b);
        return err->code;
    }
    *data = tpx_buf_detach(&b, len);
    if (!*data)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory reading '%s'", path);
    return TPX_OK;
}
