/* SPDX-License-Identifier: Apache-2.0 */
/* objects/yamljson.h - YAML and JSON documents in, jansson values out (libyaml + jansson), so one
 * decoder serves manifests, configs, kubeconfigs and the wire. Reentrant. */
#ifndef TPX_OBJECTS_YAMLJSON_H
#define TPX_OBJECTS_YAMLJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

/* Where one value started in the stream (private to yamljson.c; see obj_yaml_pos()). */
struct obj_yaml_mark;

/* The documents of one YAML (or JSON: JSON is YAML) stream, in order. Empty documents are skipped.
 * Scalars become JSON strings, except plain (unquoted) scalars that read as YAML 1.2 core-schema
 * null, booleans, integers or floats. Anchors, aliases and `<<` merge keys are resolved.
 * Owns its values: free with obj_yaml_docs_release(). Zero-initialise it or let a parse fill it. */
struct obj_yaml_docs {
    json_t **docs;
    size_t n;
    /* private: positions for obj_yaml_pos(), sorted by value address */
    struct obj_yaml_mark *marks;
    size_t nmarks;
};

/* Flags of obj_yaml_parse_opts() and obj_yaml_load_file_opts(). */
enum obj_yaml_flag {
    /* Do not record where each value started (obj_yaml_pos() then finds nothing). Recording costs
     * 24 bytes per object, array, string or number and about 6% of the parse time (a 5 040-node
     * NodeList: 47 ms -> 50 ms, 110 886 positions). */
    OBJ_YAML_NO_POSITIONS = 1u << 0,
};

/*
 * Budgets of every parse, so that a hostile document fails fast with TPX_ETOOBIG and a
 * "FILE:LINE:COL: what" message instead of eating the stack or the memory:
 *   - size: at most OBJ_YAML_MAX_INPUT bytes of input (1 GiB; callers cap their files lower);
 *   - depth: values nested at most OBJ_YAML_MAX_DEPTH (256) deep, merge keys included, so an
 *     alias or `<<` that refers to its own ancestor stops there;
 *   - values: a document expands to at most OBJ_YAML_VALUE_FACTOR (4) values per node libyaml
 *     built, plus OBJ_YAML_VALUE_SLACK (100 000); every value made through an alias, every
 *     `<<` merge step and every key a merge copies counts ("billion laughs" is refused);
 *   - bytes: the strings and keys made (copies through aliases and merges included) total at
 *     most OBJ_YAML_BYTES_FACTOR (4) times the input length plus OBJ_YAML_BYTES_SLACK (16 MiB)
 *     over the whole stream, so one long string aliased many times is refused too.
 * libyaml builds each document's node graph before the budgets are checked, so memory during a
 * parse is still proportional to the input (about 100 bytes per node).
 */
#define OBJ_YAML_MAX_INPUT ((size_t)1 << 30)
#define OBJ_YAML_MAX_DEPTH 256
#define OBJ_YAML_VALUE_FACTOR 4
#define OBJ_YAML_VALUE_SLACK 100000
#define OBJ_YAML_BYTES_FACTOR 4
#define OBJ_YAML_BYTES_SLACK ((size_t)16 << 20)

/* Parse `len` bytes. `name` is used in error messages ("FILE:LINE:COL: what"). TPX_EPARSE on bad
 * YAML, TPX_ETOOBIG past one of the budgets above, TPX_ENOMEM. Plain scalars that read as numbers
 * too large for int64 or a double keep their text. Records each value's position for
 * obj_yaml_pos(). */
enum tpx_code obj_yaml_parse(const char *data, size_t len, const char *name,
                             struct obj_yaml_docs *out, struct tpx_err *err);

/* Read a whole file ("-" is stdin) of at most max_bytes and parse it. TPX_EIO/TPX_ENOENT when it
 * cannot be read, TPX_ETOOBIG past max_bytes. */
enum tpx_code obj_yaml_load_file(const char *path, size_t max_bytes, struct obj_yaml_docs *out,
                                 struct tpx_err *err);

/* The same with flags (enum obj_yaml_flag, or'ed; 0 is what obj_yaml_parse/_load_file do). */
enum tpx_code obj_yaml_parse_opts(const char *data, size_t len, const char *name, unsigned flags,
                                  struct obj_yaml_docs *out, struct tpx_err *err);
enum tpx_code obj_yaml_load_file_opts(const char *path, size_t max_bytes, unsigned flags,
                                      struct obj_yaml_docs *out, struct tpx_err *err);

/*
 * Where value v (a value of one of d's documents, borrowed) started: 1-based line and column in
 * the stream (lines count across documents, as an editor does). An alias gets its anchor's
 * position, a value copied in by a `<<` merge key the position in the merged mapping. false, and
 * *line = *col = 0, when d was parsed with OBJ_YAML_NO_POSITIONS or for null, true and false
 * (jansson shares those). line or col may be NULL. Cannot fail; O(log n).
 */
bool obj_yaml_pos(const struct obj_yaml_docs *d, const json_t *v, unsigned *line, unsigned *col);

void obj_yaml_docs_release(struct obj_yaml_docs *d);

/* The libyaml and jansson versions, for `topox version`. Static storage. */
const char *obj_yaml_library_version(void);
const char *obj_json_library_version(void);

/* Append v as a block-style YAML document (kubectl's layout: sequence items at their key's indent)
 * to out. Strings are double-quoted (JSON escapes) whenever a plain scalar could read as something
 * else (numbers, booleans, null, leading indicators, ": ", " #"), so obj_yaml_parse() gives v back.
 * TPX_ETOOBIG past out's cap or a nesting deeper than 64, TPX_ENOMEM. */
enum tpx_code obj_yaml_dump(const json_t *v, struct tpx_buf *out, struct tpx_err *err);

/* A YAML 1.1 boolean word as kubectl's YAML reader (go-yaml v2) resolves a plain scalar: 1 for
 * y, Y, yes, Yes, YES, true, True, TRUE, on, On, ON; 0 for the n, no, false, off forms; -1 for
 * anything else. serve's boolean flags take the same words. */
int obj_yaml_bool_word(const char *s);

#endif
