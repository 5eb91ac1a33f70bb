/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/diagnose_gen.c - writes one generated case of diagnose/gen.c into a folder,
 * for test_diagnose.c: plan.json, run.json (the query_range matrix), base.json (the same at
 * pp 1) and bench-pp{1,2,4,8}.json (vLLM at pp 1 and 4, SGLang at 2 and 8). A program of its
 * own, so that the Criterion test links no project library (under ThreadSanitizer the project's
 * libraries are instrumented, and Criterion does not run instrumented: Snaipe/Criterion#274).
 *
 *   tpx_diagnose_gen DIR bubble|slow-stage|slow-links PP TP UBATCHES
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/gen.h"

static int put(const char *dir, const char *name, struct tpx_buf *b)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    tpx_buf_reset(b);
    return 0;
}

int main(int argc, char **argv)
{
    static const unsigned at[] = {1, 2, 4, 8};
    struct tpx_err err = TPX_ERR_INIT;
    struct dg_gen_case c;
    struct tpx_buf b;
    enum dg_gen_kind k;
    int rc = 0;

    if (argc != 6) {
        fprintf(stderr, "usage: tpx_diagnose_gen DIR bubble|slow-stage|slow-links PP TP M\n");
        return 2;
    }
    k = strcmp(argv[2], "slow-stage") == 0   ? DG_GEN_SLOW_STAGE
        : strcmp(argv[2], "slow-links") == 0 ? DG_GEN_SLOW_LINKS
                                             : DG_GEN_BUBBLE;
    c = dg_gen_default(k, (unsigned)strtoul(argv[3], NULL, 10),
                       (unsigned)strtoul(argv[4], NULL, 10), (unsigned)strtoul(argv[5], NULL, 10));
    tpx_buf_init(&b, (size_t)1 << 28);
    rc |= dg_gen_plan(&c, &b, &err) != TPX_OK || put(argv[1], "plan.json", &b);
    rc |= dg_gen_matrix(&c, false, &b, &err) != TPX_OK || put(argv[1], "run.json", &b);
    rc |= dg_gen_matrix(&c, true, &b, &err) != TPX_OK || put(argv[1], "base.json", &b);
    for (size_t i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof(name), "bench-pp%u.json", at[i]);
        rc |= dg_gen_bench(&c, at[i], i % 2 ? "sglang" : "vllm", &b, &err) != TPX_OK ||
              put(argv[1], name, &b);
    }
    tpx_buf_release(&b);
    if (err.code != TPX_OK)
        fprintf(stderr, "tpx_diagnose_gen: %s\n", err.msg);
    return rc;
}
