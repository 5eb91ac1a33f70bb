/* SPDX-License-Identifier: Apache-2.0 */
/* common/file.h - read a whole file into memory, with a cap. */
#ifndef TPX_COMMON_FILE_H
#define TPX_COMMON_FILE_H

#include <stddef.h>

#include "common/err.h"

/* Read all of path ("-" is standard input) into *data (NUL-terminated; free() it) and its length
 * into *len. Going over max_bytes is an error (TPX_ETOOBIG), never a silent truncation. A file
 * that cannot be opened or read gives the code tpx_err_errno() picks (TPX_ENOENT, TPX_EIO, ...);
 * TPX_ENOMEM. On failure *data is NULL and *len 0. */
enum tpx_code tpx_read_file(const char *path, size_t max_bytes, char **data, size_t *len,
                            struct tpx_err *err);

#endif
