/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_yamljson.c - YAML to jansson: scalars, multi-docs, anchors, merge keys,
 * errors with line numbers, and hostile documents refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/buf.h"
#include "objects/yamljson.h"

static json_t *one(const char *yaml)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    json_t *j;

    cr_assert_eq(obj_yaml_parse(yaml, strlen(yaml), "t.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(d.n, 1);
    j = json_incref(d.docs[0]);
    obj_yaml_docs_release(&d);
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

Test(obj_yamljson, core_schema_scalars)
{
    expect_json(
        "a: 8\nb: \"8\"\nc: true\nd: ~\ne: 1.5\nf: \"yes\"\ng: '-3'\nh: -3\ni: 1e3\nj: 0x10\n",
        "{\"a\":8,\"b\":\"8\",\"c\":true,\"d\":null,\"e\":1.5,\"f\":\"yes\",\"g\":\"-3\","
        "\"h\":-3,\"i\":1000,\"j\":16}");
}

/* issue 21, item 4: plain scalars as kubectl reads them (sigs.k8s.io/yaml -> go-yaml v2's
 * resolve(): '_' stripped, strconv.ParseInt(s, 0, 64), then the float pattern; YAML 1.1 bools). */
Test(obj_yamljson, plain_scalars_resolve_as_kubectl_does)
{
    expect_json("a: 010\nb: 0x8\nc: 0b1000\nd: 1_0\ne: +8\nf: 0o10\ng: -0x8\nh: 08\ni: 0_10\n"
                "j: 1_000.5\nk: +.5\nl: 0x\nm: 1__\nn: _1\no: 0b102\np: 9223372036854775808\n"
                "q: -9223372036854775808\nr: 1.\ns: .5\nt: 12e\n",
                "{\"a\":8,\"b\":8,\"c\":8,\"d\":10,\"e\":8,\"f\":8,\"g\":-8,\"h\":8,\"i\":8,"
                "\"j\":1000.5,\"k\":0.5,\"l\":\"0x\",\"m\":1,\"n\":\"_1\",\"o\":\"0b102\","
                "\"p\":\"9223372036854775808\",\"q\":-9223372036854775808,\"r\":1,\"s\":0.5,"
                "\"t\":\"12e\"}");
    expect_json("a: yes\nb: Yes\nc: YES\nd: y\ne: on\nf: ON\ng: no\nh: N\ni: off\nj: Off\nk: yES\n"
                "l: '010'\n",
                "{\"a\":true,\"b\":true,\"c\":true,\"d\":true,\"e\":true,\"f\":true,"
                "\"g\":false,\"h\":false,\"i\":false,\"j\":false,\"k\":\"yES\",\"l\":\"010\"}");
}

Test(obj_yamljson, json_is_yaml)
{
    expect_json("{\"kind\":\"List\",\"items\":[{\"a\":[1,2,{\"b\":null}]}]}",
                "{\"kind\":\"List\",\"items\":[{\"a\":[1,2,{\"b\":null}]}]}");
}

Test(obj_yamljson, anchors_and_merge_keys_explicit_wins)
{
    expect_json("base: &b {x: 1, y: 2}\n"
                "other: &o {z: 3}\n"
                "m:\n  y: 20\n  <<: [*b, *o]\n"
                "alias: *b\n",
                "{\"base\":{\"x\":1,\"y\":2},\"other\":{\"z\":3},\"m\":{\"x\":1,\"y\":20,\"z\":3},"
                "\"alias\":{\"x\":1,\"y\":2}}");
}

Test(obj_yamljson, multi_document_stream_skips_empty)
{
    const char *y = "---\na: 1\n---\n---\nb: 2\n...\n";
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "s.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(json_integer_value(json_object_get(d.docs[1], "b")), 2);
    obj_yaml_docs_release(&d);
}

Test(obj_yamljson, error_names_file_line_and_column)
{
    const char *y = "a: 1\nb: [1, 2\nc: 3\n";
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(obj_yaml_parse(y, strlen(y), "bad.yaml", &d, &err), TPX_EPARSE);
    cr_expect(strncmp(err.msg, "bad.yaml:", 9) == 0, "%s", err.msg);
    cr_expect_null(d.docs);
}

Test(obj_yamljson, alias_bomb_is_refused)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_yaml_docs d;

    tpx_buf_init(&b, 1 << 20);
    tpx_buf_adds(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n", &err);
    for (int i = 1; i < 10; i++) {
        tpx_buf_addf(&b, &err, "a%d: &a%d [", i, i);
        for (int k = 0; k < 10; k++)
            tpx_buf_addf(&b, &err, "%s*a%d", k ? ", " : "", i - 1);
        tpx_buf_adds(&b, "]\n", &err);
    }
    cr_assert_eq(err.code, TPX_OK);
    cr_expect_eq(obj_yaml_parse(b.data, b.len, "bomb.yaml", &d, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "too many values") != NULL, "%s", err.msg);
    tpx_buf_release(&b);
}

/* A merge key whose list holds itself: `merge_into` once recursed without end (SIGSEGV). */
Test(obj_yamljson, recursive_merge_key_is_refused_with_its_line)
{
    static const char *const cases[] = {
        "x:\n  <<: &s [*s]\n",
        "x:\n  <<: &s [[[*s]]]\n",
        "a: &m\n  <<: *m\n",
        "a: &m {k: 1, <<: [*m]}\n",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct obj_yaml_docs d;
        struct tpx_err err = TPX_ERR_INIT;
        enum tpx_code rc = obj_yaml_parse(cases[i], strlen(cases[i]), "m.yaml", &d, &err);

        cr_expect(rc == TPX_ETOOBIG || rc == TPX_EPARSE, "case %zu: rc %d", i, rc);
        cr_expect(strncmp(err.msg, "m.yaml:", 7) == 0, "case %zu: %s", i, err.msg);
        cr_expect_null(d.docs, "case %zu", i);
    }
}

/* Merge keys count against the alias budget: each level merges ten copies of the level below. */
Test(obj_yamljson, merge_key_bomb_is_refused)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_yaml_docs d;

    tpx_buf_init(&b, 1 << 20);
    tpx_buf_adds(&b, "m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n",
                 &err);
    for (int i = 1; i < 10; i++) {
        tpx_buf_addf(&b, &err, "m%d: &m%d {k%d: 0, <<: [", i, i, i);
        for (int k = 0; k < 10; k++)
            tpx_buf_addf(&b, &err, "%s*m%d", k ? ", " : "", i - 1);
        tpx_buf_adds(&b, "]}\n", &err);
    }
    cr_assert_eq(err.code, TPX_OK);
    cr_expect_eq(obj_yaml_parse(b.data, b.len, "mbomb.yaml", &d, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "mbomb.yaml:") == err.msg, "%s", err.msg);
    tpx_buf_release(&b);
}

/* Few nodes, many bytes: one 16 KiB string aliased 4 000 times would be 64 MB of copies. */
Test(obj_yamljson, alias_of_a_long_string_is_refused_by_the_byte_budget)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_yaml_docs d;

    tpx_buf_init(&b, 1 << 20);
    tpx_buf_adds(&b, "s: &s \"", &err);
    for (int i = 0; i < 16384 / 16; i++)
        tpx_buf_adds(&b, "xxxxxxxxxxxxxxxx", &err);
    tpx_buf_adds(&b, "\"\nl: [*s", &err);
    for (int i = 1; i < 4000; i++)
        tpx_buf_adds(&b, ",*s", &err);
    tpx_buf_adds(&b, "]\n", &err);
    cr_assert_eq(err.code, TPX_OK);
    cr_expect_eq(obj_yaml_parse(b.data, b.len, "long.yaml", &d, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "too many bytes") != NULL, "%s", err.msg);
    tpx_buf_release(&b);
}

/* Ordinary anchors stay well inside the budgets: a base mapping merged into a hundred others. */
Test(obj_yamljson, ordinary_merges_fit_the_budgets)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_yaml_docs d;

    tpx_buf_init(&b, 1 << 20);
    tpx_buf_adds(&b, "base: &b {image: vllm, env: [{name: A, value: '1'}], gpus: 8}\nitems:\n",
                 &err);
    for (int i = 0; i < 100; i++)
        tpx_buf_addf(&b, &err, "  - {<<: *b, name: pod-%d}\n", i);
    cr_assert_eq(err.code, TPX_OK);
    cr_assert_eq(obj_yaml_parse(b.data, b.len, "ok.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(json_array_size(json_object_get(d.docs[0], "items")), 100);
    obj_yaml_docs_release(&d);
    tpx_buf_release(&b);
}

/* Nesting deeper than OBJ_YAML_MAX_DEPTH is refused, also in flow style and in JSON. */
Test(obj_yamljson, deep_nesting_is_refused)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_yaml_docs d;

    tpx_buf_init(&b, 1 << 20);
    for (int i = 0; i < OBJ_YAML_MAX_DEPTH + 10; i++)
        tpx_buf_adds(&b, "[", &err);
    for (int i = 0; i < OBJ_YAML_MAX_DEPTH + 10; i++)
        tpx_buf_adds(&b, "]", &err);
    cr_assert_eq(err.code, TPX_OK);
    cr_expect_eq(obj_yaml_parse(b.data, b.len, "deep.json", &d, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "too deep") != NULL, "%s", err.msg);
    tpx_buf_release(&b);
}

/* A float that overflows a double keeps its text; an integer past uint64 is a float, as go-yaml v2
 * reads it (ParseInt and ParseUint fail, the float pattern matches). */
Test(obj_yamljson, huge_numbers_keep_their_text)
{
    expect_json("a: 1e999\nb: -1e999\nc: 99999999999999999999\nd: 1e-999\n",
                "{\"a\":\"1e999\",\"b\":\"-1e999\",\"c\":1e20,\"d\":0}");
}

/* NUL bytes inside quoted scalars survive as string bytes; raw NUL in the stream is refused. */
Test(obj_yamljson, nul_bytes)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    static const char raw[] = "a: b\0c\n";

    cr_assert_eq(obj_yaml_parse("a: \"x\\0y\"\n", 10, "n.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(json_string_length(json_object_get(d.docs[0], "a")), 3);
    obj_yaml_docs_release(&d);
    cr_expect_neq(obj_yaml_parse(raw, sizeof(raw) - 1, "n.yaml", &d, &err), TPX_OK);
    cr_expect(strncmp(err.msg, "n.yaml:", 7) == 0, "%s", err.msg);
}

/* A merge copies keys by length: "k\0x" and "k" are two keys, in the anchor and in the merge. */
Test(obj_yamljson, merge_keeps_keys_that_hold_a_nul)
{
    static const char y[] = "a: &a {\"k\\0x\": 1, k: 2}\nb: {<<: *a}\n";
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    json_t *b;

    cr_assert_eq(obj_yaml_parse(y, sizeof(y) - 1, "n.yaml", &d, &err), TPX_OK, "%s", err.msg);
    b = json_object_get(d.docs[0], "b");
    cr_expect_eq(json_object_size(b), 2);
    cr_expect_eq(json_integer_value(json_object_getn(b, "k\0x", 3)), 1);
    cr_expect_eq(json_integer_value(json_object_get(b, "k")), 2);
    obj_yaml_docs_release(&d);
}

/* A key that holds a NUL is written quoted and whole, so it reads back as itself. */
Test(obj_yamljson, dump_round_trips_a_key_with_a_nul)
{
    static const char y[] = "\"k\\0x\": 1\n";
    struct obj_yaml_docs d;
    struct obj_yaml_docs back;
    struct tpx_err err = TPX_ERR_INIT;
    struct tpx_buf out;

    cr_assert_eq(obj_yaml_parse(y, sizeof(y) - 1, "n.yaml", &d, &err), TPX_OK, "%s", err.msg);
    tpx_buf_init(&out, 1 << 16);
    cr_assert_eq(obj_yaml_dump(d.docs[0], &out, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_yaml_parse(out.data, out.len, "back.yaml", &back, &err), TPX_OK, "%s: %s",
                 err.msg, out.data);
    /* not json_equal(): jansson 2.14 compares objects by C-string keys */
    cr_expect_eq(json_object_size(back.docs[0]), 1, "dumped as %s", out.data);
    cr_expect_eq(json_integer_value(json_object_getn(back.docs[0], "k\0x", 3)), 1, "dumped as %s",
                 out.data);
    obj_yaml_docs_release(&back);
    obj_yaml_docs_release(&d);
    tpx_buf_release(&out);
}

/* Characters that JSON leaves raw but YAML reads otherwise (NEL, LS and PS are line breaks, folded
 * into a space; DEL, C1 controls, U+FEFF and U+FFFE are not allowed) are escaped by the dump. */
Test(obj_yamljson, dump_escapes_what_yaml_would_fold_or_refuse)
{
    static const char *const cases[] = {
        "ser\xc2\x85ving",
        "a\xe2\x80\xa8"
        "b\xe2\x80\xa9"
        "c",
        "del\x7f",
        "c1\xc2\x80\xc2\x9f",
        "bom\xef\xbb\xbfx",
        "nc\xef\xbf\xbe\xef\xbf\xbf",
        "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *v = json_pack("{ss}", "k", cases[i]);
        struct obj_yaml_docs back;
        struct tpx_err err = TPX_ERR_INIT;
        struct tpx_buf out;

        cr_assert_not_null(v, "case %zu", i);
        tpx_buf_init(&out, 1 << 16);
        cr_assert_eq(obj_yaml_dump(v, &out, &err), TPX_OK, "%s", err.msg);
        cr_assert_eq(obj_yaml_parse(out.data, out.len, "back.yaml", &back, &err), TPX_OK,
                     "case %zu: %s: %s", i, err.msg, out.data);
        cr_expect(json_equal(v, back.docs[0]), "case %zu dumped as %s", i, out.data);
        obj_yaml_docs_release(&back);
        tpx_buf_release(&out);
        json_decref(v);
    }
}

/* Input past OBJ_YAML_MAX_INPUT is refused before libyaml sees it (no allocation of that size:
 * the length is checked first). */
Test(obj_yamljson, input_over_the_size_budget_is_refused)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(obj_yaml_parse("a: 1\n", (size_t)OBJ_YAML_MAX_INPUT + 1, "big.yaml", &d, &err),
                 TPX_ETOOBIG);
    cr_expect(strncmp(err.msg, "big.yaml:", 9) == 0, "%s", err.msg);
}

Test(obj_yamljson, real_lws_manifest_loads)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_load_file(TPX_FIXTURES "/manifests/lws-vllm-gpu-llama405b-tp8-pp2.yaml",
                                    1 << 20, &d, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_str_eq(json_string_value(json_object_get(d.docs[0], "kind")), "LeaderWorkerSet");
    obj_yaml_docs_release(&d);
}

Test(obj_yamljson, missing_file_is_a_clear_error)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(obj_yaml_load_file("/nonexistent/x.yaml", 1024, &d, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "/nonexistent/x.yaml") != NULL, "%s", err.msg);
}

/* --- obj_yaml_dump ---------------------------------------------------------------------------- */

static void round_trip(const char *json_text)
{
    json_t *v = json_loads(json_text, JSON_DECODE_ANY, NULL);
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct obj_yaml_docs d;

    cr_assert_not_null(v, "bad test input %s", json_text);
    tpx_buf_init(&b, 1 << 20);
    cr_assert_eq(obj_yaml_dump(v, &b, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_yaml_parse(b.data, b.len, "dump.yaml", &d, &err), TPX_OK, "%s\n%s", err.msg,
                 b.data);
    cr_assert_eq(d.n, 1, "%s", b.data);
    cr_expect(json_equal(d.docs[0], v), "round trip changed the value:\n%s", b.data);
    obj_yaml_docs_release(&d);
    tpx_buf_release(&b);
    json_decref(v);
}

Test(obj_yamljson, dump_round_trips_tricky_scalars)
{
    round_trip("{\"a\":\"8\",\"b\":8,\"c\":\"true\",\"d\":\"yes\",\"e\":\"\",\"f\":\"x: y\","
               "\"g\":\"# no\",\"h\":\"line\\nbreak\",\"i\":null,\"j\":1.5,\"k\":\"0x10\","
               "\"l\":\"-3\",\"m\":\" lead\",\"n\":\"~\",\"o\":false,\"p\":\"nvidia.com/gpu\"}");
}

Test(obj_yamljson, dump_round_trips_nested_lists_and_maps)
{
    round_trip("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"n1\","
               "\"labels\":{\"topox.io/rack\":\"r01\"}},\"status\":{\"conditions\":[{\"type\":"
               "\"Ready\",\"status\":\"True\"}]}},[1,[2,3],{}],[],{}],\"empty\":{}}");
    round_trip("[[\"a\"],{\"k\":[{\"x\":1},{\"y\":[]}]}]");
    round_trip("\"just a string: here\"");
}

Test(obj_yamljson, dump_layout_is_kubectl_style)
{
    json_t *v =
        json_loads("{\"items\":[{\"a\":1,\"b\":[\"x\"]}],\"s\":\"8\"}", JSON_PRESERVE_ORDER, NULL);
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 4096);
    cr_assert_eq(obj_yaml_dump(v, &b, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(b.data, "items:\n- a: 1\n  b:\n  - x\ns: \"8\"\n");
    tpx_buf_release(&b);
    json_decref(v);
}

Test(obj_yamljson, dump_respects_the_buffer_cap)
{
    json_t *v = json_loads("{\"a\":\"0123456789012345678901234567890123456789\"}", 0, NULL);
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, 16);
    cr_expect_eq(obj_yaml_dump(v, &b, &err), TPX_ETOOBIG);
    tpx_buf_release(&b);
    json_decref(v);
}

/* --- positions (obj_yaml_pos) ----------------------------------------------------------------- */

static struct obj_yaml_docs parse_ok(const char *y, unsigned flags)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse_opts(y, strlen(y), "p.yaml", flags, &d, &err), TPX_OK, "%s",
                 err.msg);
    return d;
}

static void expect_pos(const struct obj_yaml_docs *d, const json_t *v, unsigned line, unsigned col,
                       const char *what)
{
    unsigned l = 99, c = 99;

    cr_assert_not_null(v, "%s: no such value", what);
    cr_expect(obj_yaml_pos(d, v, &l, &c), "%s: no position", what);
    cr_expect(l == line && c == col, "%s: at %u:%u, want %u:%u", what, l, c, line, col);
}

Test(obj_yamljson, positions_block_and_flow)
{
    struct obj_yaml_docs d = parse_ok("a: 1\n"
                                      "b:\n"
                                      "  c: [x, z]\n"
                                      "  d: {e: f}\n"
                                      "  g:\n"
                                      "  - h\n"
                                      "  - \"q\"\n",
                                      0);
    json_t *b = json_object_get(d.docs[0], "b");

    expect_pos(&d, d.docs[0], 1, 1, "document");
    expect_pos(&d, json_object_get(d.docs[0], "a"), 1, 4, "a");
    expect_pos(&d, b, 3, 3, "b");
    expect_pos(&d, json_object_get(b, "c"), 3, 6, "b.c");
    expect_pos(&d, json_array_get(json_object_get(b, "c"), 1), 3, 10, "b.c[1]");
    expect_pos(&d, json_object_get(b, "d"), 4, 6, "b.d");
    expect_pos(&d, json_object_get(json_object_get(b, "d"), "e"), 4, 10, "b.d.e");
    expect_pos(&d, json_object_get(b, "g"), 6, 3, "b.g");
    expect_pos(&d, json_array_get(json_object_get(b, "g"), 1), 7, 5, "b.g[1]");
    obj_yaml_docs_release(&d);
}

Test(obj_yamljson, positions_count_lines_across_documents)
{
    struct obj_yaml_docs d = parse_ok("# one\n---\na: 1\n---\n---\nkind: Pod\nspec:\n  x: 2\n", 0);

    cr_assert_eq(d.n, 2);
    expect_pos(&d, json_object_get(d.docs[0], "a"), 3, 4, "doc 1 a");
    expect_pos(&d, d.docs[1], 6, 1, "doc 2");
    expect_pos(&d, json_object_get(json_object_get(d.docs[1], "spec"), "x"), 8, 6, "doc 2 x");
    obj_yaml_docs_release(&d);
}

Test(obj_yamljson, positions_of_json_input)
{
    struct obj_yaml_docs d = parse_ok("{\"kind\": \"List\",\n"
                                      " \"items\": [\n"
                                      "  {\"n\": 1},\n"
                                      "  {\"n\": \"two\"}\n"
                                      " ]}\n",
                                      0);
    json_t *items = json_object_get(d.docs[0], "items");

    expect_pos(&d, items, 2, 11, "items");
    expect_pos(&d, json_array_get(items, 1), 4, 3, "items[1]");
    expect_pos(&d, json_object_get(json_array_get(items, 1), "n"), 4, 9, "items[1].n");
    obj_yaml_docs_release(&d);
}

Test(obj_yamljson, positions_of_aliases_merges_and_duplicate_keys)
{
    struct obj_yaml_docs d = parse_ok("base: &b {x: 1}\n"
                                      "m:\n"
                                      "  <<: *b\n"
                                      "  y: 2\n"
                                      "alias: *b\n"
                                      "dup: {p: 1}\n"
                                      "dup: {q: 2}\n",
                                      0);
    json_t *base = json_object_get(d.docs[0], "base");
    unsigned lb = 0, cb = 0;

    cr_assert(obj_yaml_pos(&d, base, &lb, &cb));
    cr_expect_eq(lb, 1);
    /* an alias is the anchor's node: the same position, though a separate value */
    expect_pos(&d, json_object_get(d.docs[0], "alias"), lb, cb, "alias");
    cr_expect_neq(json_object_get(d.docs[0], "alias"), base);
    expect_pos(&d, json_object_get(json_object_get(d.docs[0], "m"), "x"), 1, 14, "merged m.x");
    expect_pos(&d, json_object_get(json_object_get(d.docs[0], "m"), "y"), 4, 6, "m.y");
    /* the second `dup` replaced the first: its own line, never the freed value's */
    expect_pos(&d, json_object_get(d.docs[0], "dup"), 7, 6, "dup");
    obj_yaml_docs_release(&d);
}

Test(obj_yamljson, no_position_for_shared_singletons_or_when_turned_off)
{
    struct obj_yaml_docs d = parse_ok("a: true\nb: null\nc: x\n", 0);
    unsigned l = 7, c = 7;

    cr_expect_not(obj_yaml_pos(&d, json_object_get(d.docs[0], "a"), &l, &c));
    cr_expect(l == 0 && c == 0);
    cr_expect_not(obj_yaml_pos(&d, json_object_get(d.docs[0], "b"), NULL, NULL));
    cr_expect_not(obj_yaml_pos(&d, NULL, NULL, NULL));
    cr_expect(obj_yaml_pos(&d, json_object_get(d.docs[0], "c"), NULL, NULL));
    obj_yaml_docs_release(&d);

    d = parse_ok("a: 1\n", OBJ_YAML_NO_POSITIONS);
    cr_expect_not(obj_yaml_pos(&d, d.docs[0], &l, NULL));
    cr_expect_null(d.marks);
    obj_yaml_docs_release(&d);
}
