/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_yaml.c - libFuzzer target for the YAML/JSON reader and writer alone
 * (objects/yamljson.c): bytes -> obj_yaml_parse() under its budgets -> obj_yaml_dump() of each
 * document -> obj_yaml_parse() again, which must give the same value back (the promise of
 * yamljson.h; reals within 1e-9, since the dump writes 10 significant digits). Positions are
 * looked up for every value on the way. A difference aborts.
 *   build/fuzz/fuzz/fuzz_yaml -dict=fuzz/dict/yaml.dict fuzz/seeds/fuzz_yaml
 * fuzz/seeds/fuzz_manifest */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objects/yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* json_equal, but reals compare within a relative 1e-9 and an integer may come back as a real
 * only when it was written as one. */
static bool same(const json_t *a, const json_t *b)
{
    if (json_is_real(a) && json_is_real(b)) {
        double x = json_real_value(a);
        double y = json_real_value(b);

        return fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)) || fabs(x - y) < 1e-300;
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return false;
        }
        return true;
    }
    if (json_is_object(a)) {
        const char *k;
        size_t kl;
        json_t *v;

        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_keylen_foreach((json_t *)a, k, kl, v)
        {
            json_t *w = json_object_getn(b, k, kl);
            if (!w || !same(v, w))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

static void positions(const struct obj_yaml_docs *d, const json_t *v, unsigned depth)
{
    unsigned line;
    unsigned col;

    if (obj_yaml_pos(d, v, &line, &col) && line == 0)
        abort(); /* a recorded position is 1-based */
    if (depth > OBJ_YAML_MAX_DEPTH + 1)
        abort(); /* the depth budget let a deeper value through */
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            positions(d, json_array_get(v, i), depth + 1);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *c;

        json_object_foreach((json_t *)v, k, c) positions(d, c, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    if (obj_yaml_parse((const char *)data, size, "fuzz.yaml", &d, &err) != TPX_OK)
        return 0;
    for (size_t i = 0; i < d.n; i++) {
        struct tpx_buf out;
        struct obj_yaml_docs back;

        positions(&d, d.docs[i], 0);
        tpx_buf_init(&out, (size_t)64 << 20);
        tpx_err_clear(&err);
        if (obj_yaml_dump(d.docs[i], &out, &err) != TPX_OK) {
            tpx_buf_release(&out); /* too deep or too large to write: refused, not wrong */
            continue;
        }
        tpx_err_clear(&err);
        if (obj_yaml_parse(out.data ? out.data : "", out.len, "dump.yaml", &back, &err) != TPX_OK ||
            back.n != 1 || !same(d.docs[i], back.docs[0])) {
            /* a scalar document of null dumps to "null", which reads back as an empty stream */
            if (!(json_is_null(d.docs[i]) && back.n == 0))
                abort();
        }
        obj_yaml_docs_release(&back);
        tpx_buf_release(&out);
    }
    obj_yaml_docs_release(&d);
    return 0;
}
