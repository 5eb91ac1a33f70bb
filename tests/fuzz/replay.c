/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/replay.c - replays fuzz inputs through a fuzz target built without libFuzzer, so the
 * crashes kept in tests/fuzz/corpus/<target>/ (and the seeds) run in `make test` under the dev
 * preset's ASan+UBSan. Linked with one fuzz/fuzz_*.c, whose LLVMFuzzerTestOneInput() gets each
 * file's bytes in a malloc'd buffer of exactly that size, so a read past the end is caught.
 *   replay_fuzz_manifest DIR|FILE...    (a DIR that does not exist is skipped: no crash kept yet)
 * Exit status 0 when every input ran; a sanitizer report ends the process with its own status. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { REPLAY_MAX_BYTES = 16 << 20 };

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long n;

    if (!f) {
        fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > REPLAY_MAX_BYTES ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot size '%s' (at most %d bytes)\n", path, REPLAY_MAX_BYTES);
        fclose(f);
        return -1;
    }
    data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "replay: cannot read '%s'\n", path);
        free(data);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)n);
    free(data);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (so a failure names the same file every run). */
static int replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0;
    int rc = 0;

    if (!d) {
        fprintf(stderr, "replay: cannot open '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        char **nn;

        if (de->d_name[0] == '.')
            continue;
        nn = realloc(names, (n + 1) * sizeof(*names));
        if (!nn || !(nn[n] = strdup(de->d_name))) {
            names = nn ? nn : names;
            rc = -1;
            break;
        }
        names = nn;
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path) != 0)
                rc = -1;
            else
                (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int failed = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            printf("replay: skipping '%s' (absent)\n", argv[i]);
            continue;
        }
        if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) != 0 : replay_file(argv[i]) != 0)
            failed = 1;
        else if (!S_ISDIR(st.st_mode))
            count++;
    }
    printf("replay: %zu inputs ran\n", count);
    return failed;
}
