/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_tmp.h - for targets whose decoder reads a path: write the input to one private file
 * per process (under $TMPDIR, removed at exit) and hand back its name. Header-only, static. */
#ifndef TPX_FUZZ_TMP_H
#define TPX_FUZZ_TMP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_tmp_dir[256];
static char fuzz_tmp_path[320];

static void fuzz_tmp_cleanup(void)
{
    if (fuzz_tmp_path[0])
        unlink(fuzz_tmp_path);
    if (fuzz_tmp_dir[0])
        rmdir(fuzz_tmp_dir);
}

/* The file `name` in the private folder, holding exactly data[0..size). NULL when it cannot be
 * written (the input is then skipped). The same name is reused by every call. */
static const char *fuzz_tmp_write(const uint8_t *data, size_t size, const char *name)
{
    FILE *f;

    if (!fuzz_tmp_dir[0]) {
        const char *t = getenv("TMPDIR");

        snprintf(fuzz_tmp_dir, sizeof(fuzz_tmp_dir), "%s/topox-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_tmp_dir)) {
            fuzz_tmp_dir[0] = '\0';
            return NULL;
        }
        atexit(fuzz_tmp_cleanup);
    }
    if (fuzz_tmp_path[0] && strcmp(strrchr(fuzz_tmp_path, '/') + 1, name) != 0)
        unlink(fuzz_tmp_path);
    snprintf(fuzz_tmp_path, sizeof(fuzz_tmp_path), "%s/%s", fuzz_tmp_dir, name);
    f = fopen(fuzz_tmp_path, "wb");
    if (!f)
        return NULL;
    if (size > 0 && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return NULL;
    }
    if (fclose(f) != 0)
        return NULL;
    return fuzz_tmp_path;
}

#endif
