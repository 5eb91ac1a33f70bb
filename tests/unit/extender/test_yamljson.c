/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_yamljson.c - YAML to jansson: scalars, multi-docs, anchors, merge keys,
 * errors with line numbers, and hostile documents refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/buf.h"
#include "extender/yamljson.h"

static json_t *one(const char *yaml)
{
    struct ext_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    json_t *j;

    cr_assert_eq(ext_yaml_parse(yaml, strlen(yaml), "t.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(d.n, 1);
    j = json_incref(d.docs[0]);
    ext_yaml_docs_release(&d);
    return j;
}

static void expect_json(const char *yaml, const char *want_json)
{
    json_t *got = one(yaml);
    json_t *want = json_loads(want_json, 0, NULL);
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);

    cr_assert_not_null(want, "bad expectation %s", want_json);
    cr_expect(json_equal(got, want), "yaml:\n%s\ngot  %s\nwant %s", yaml, g, want_json);
    free(g);
    json_decref(got);
    json_decref(want);
}

Test(ext_yamljson, core_schema_scalars)
{
    expect_json("a: 8\nb: \"8\"\nc: true\nd: ~\ne: 1.5\nf: yes\ng: '-3'\nh: -3\ni: 1e3\nj: 0x10\n",
                "{\"a\":8,\"b\":\"8\",\"c\":true,\"d\":null,\"e\":1.5,\"f\":\"yes\",\"g\":\"-3\","
                "\"h\":-3,\"i\":1000.0,\"j\":\"0x10\"}");
}

Test(ext_yamljson, json_is_yaml)
{
    expect_json("{\"kind\":\"List\",\"items\":[{\"a\":[1,2,{\"b\":null}]}]}",
                "{\"kind\":\"List\",\"items\":[{\"a\":[1,2,{\"b\":null}]}]}");
}

Test(ext_yamljson, anchors_and_merge_keys_explicit_wins)
{
    expect_json("base: &b {x: 1, y: 2}\n"
                "other: &o {z: 3}\n"
                "m:\n  y: 20\n  <<: [*b, *o]\n"
                "alias: *b\n",
                "{\"base\":{\"x\":1,\"y\":2},\"other\":{\"z\":3},\"m\":{\"x\":1,\"y\":20,\"z\":3},"
                "\"alias\":{\"x\":1,\"y\":2}}");
}

Test(ext_yamljson, multi_document_stream_skips_empty)
{
    const char *y = "---\na: 1\n---\n---\nb: 2\n...\n";
    struct ext_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_yaml_parse(y, strlen(y), "s.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(json_integer_value(json_object_get(d.docs[1], "b")), 2);
    ext_yaml_docs_release(&d);
}

Test(ext_yamljson, error_names_file_line_and_column)
{
    const char *y = "a: 1\nb: [1, 2\nc: 3\n";
    struct ext_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(ext_yaml_parse(y, strlen(y), "bad.yaml", &d, &err), TPX_EPARSE);
    cr_expect(strncmp(err.msg, "bad.yaml:", 9) == 0, "%s", err.msg);
    cr_expect_null(d.docs);
}

Test(ext_yamljson, alias_bomb_is_refused)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_yaml_docs d;

    tpx_buf_init(&b, 1 << 20);
    tpx_buf_adds(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n", &err);
    for (int i = 1; i < 10; i++) {
        tpx_buf_addf(&b, &err, "a%d: &a%d [", i, i);
        for (int k = 0; k < 10; k++)
            tpx_buf_addf(&b, &err, "%s*a%d", k ? ", " : "", i - 1);
        tpx_buf_adds(&b, "]\n", &err);
    }
    cr_assert_eq(err.code, TPX_OK);
    cr_expect_eq(ext_yaml_parse(b.data, b.len, "bomb.yaml", &d, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "too many values") != NULL, "%s", err.msg);
    tpx_buf_release(&b);
}

Test(ext_yamljson, real_lws_manifest_loads)
{
    struct ext_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_yaml_load_file(TPX_FIXTURES "/manifests/lws-vllm-gpu-llama405b-tp8-pp2.yaml",
                                    1 << 20, &d, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_str_eq(json_string_value(json_object_get(d.docs[0], "kind")), "LeaderWorkerSet");
    ext_yaml_docs_release(&d);
}

Test(ext_yamljson, missing_file_is_a_clear_error)
{
    struct ext_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(ext_yaml_load_file("/nonexistent/x.yaml", 1024, &d, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "/nonexistent/x.yaml") != NULL, "%s", err.msg);
}

/* --- ext_yaml_dump ---------------------------------------------------------------------------- */

static void round_trip(const char *json_text)
{
    json_t *v = json_loads(json_text, JSON_DECODE_ANY, NULL);
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_yaml_docs d;

    cr_assert_not_null(v, "bad test input %s", json_text);
    tpx_buf_init(&b, 1 << 20);
    cr_assert_eq(ext_yaml_dump(v, &b, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(ext_yaml_parse(b.data, b.len, "dump.yaml", &d, &err), TPX_OK, "%s\n%s", err.msg,
                 b.data);
    cr_assert_eq(d.n, 1, "%s", b.data);
    cr_expect(json_equal(d.docs[0], v), "round trip changed the value:\n%s", b.data);
    ext_yaml_docs_release(&d);
    tpx_buf_release(&b);
    json_decref(v);
}

Test(ext_yamljson, dump_round_trips_tricky_scalars)
{
    round_trip("{\"a\":\"8\",\"b\":8,\"c\":\"true\",\"d\":\"yes\",\"e\":\"\",\"f\":\"x: y\","
               "\"g\":\"# no\",\"h\":\"line\\nbreak\",\"i\":null,\"j\":1.5,\"k\":\"0x10\","
               "\"l\":\"-3\",\"m\":\" lead\",\"n\":\"~\",\"o\":false,\"p\":\"nvidia.com/gpu\"}");
}

Test(ext_yamljson, dump_round_trips_nested_lists_and_maps)
{
    round_trip("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"n1\","
               "\"labels\":{\"topox.io/rack\":\"r01\"}},\"status\":{\"conditions\":[{\"type\":"
               "\"Ready\",\"status\":\"True\"}]}},[1,[2,3],{}],[],{}],\"empty\":{}}");
    round_trip("[[\"a\"],{\"k\":[{\"x\":1},{\"y\":[]}]}]");
    round_trip("\"just a string: here\"");
}

Test(ext_yamljson, dump_layout_is_kubectl_style)
{
    json_t *v =
        json_loads("{\"items\":[{\"a\":1,\"b\":[\"x\"]}],\"s\":\"8\"}", JSON_PRESERVE_ORDER, NULL);
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 4096);
    cr_assert_eq(ext_yaml_dump(v, &b, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(b.data, "items:\n- a: 1\n  b:\n  - x\ns: \"8\"\n");
    tpx_buf_release(&b);
    json_decref(v);
}

Test(ext_yamljson, dump_respects_the_buffer_cap)
{
    json_t *v = json_loads("{\"a\":\"0123456789012345678901234567890123456789\"}", 0, NULL);
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 16);
    cr_expect_eq(ext_yaml_dump(v, &b, &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
    json_decref(v);
}
