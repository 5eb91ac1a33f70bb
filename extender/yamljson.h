/* SPDX-License-Identifier: Apache-2.0 */
/* extender/yamljson.h - YAML and JSON documents in, jansson values out (libyaml + jansson), so one
 * decoder serves manifests, configs, kubeconfigs and the wire. Reentrant. */
#ifndef TPX_EXTENDER_YAMLJSON_H
#define TPX_EXTENDER_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

/* The documents of one YAML (or JSON: JSON is YAML) stream, in order. Empty documents are skipped.
 * Scalars become JSON strings, except plain (unquoted) scalars that read as YAML 1.2 core-schema
 * null, booleans, integers or floats. Anchors, aliases and `<<` merge keys are resolved.
 * Owns its values: free with ext_yaml_docs_release(). */
struct ext_yaml_docs {
    json_t **docs;
    size_t n;
};

/* Parse `len` bytes. `name` is used in error messages ("FILE:LINE:COL: what"). TPX_EPARSE on bad
 * YAML, TPX_ETOOBIG when nesting or alias expansion goes past the built-in limits (a "billion
 * laughs" document is refused, not expanded), TPX_ENOMEM. */
enum tpx_code ext_yaml_parse(const char *data, size_t len, const char *name,
                             struct ext_yaml_docs *out, struct tpx_err *err);

/* Read a whole file ("-" is stdin) of at most max_bytes and parse it. TPX_EIO/TPX_ENOENT when it
 * cannot be read, TPX_ETOOBIG past max_bytes. */
enum tpx_code ext_yaml_load_file(const char *path, size_t max_bytes, struct ext_yaml_docs *out,
                                 struct tpx_err *err);

/* Read a whole file ("-" for stdin) into a malloc'd NUL-terminated buffer (free it). */
enum tpx_code ext_read_file(const char *path, size_t max_bytes, char **data, size_t *len,
                            struct tpx_err *err);

void ext_yaml_docs_release(struct ext_yaml_docs *d);

/* Append v as a block-style YAML document (kubectl's layout: sequence items at their key's indent)
 * to out. Strings are double-quoted (JSON escapes) whenever a plain scalar could read as something
 * else (numbers, booleans, null, leading indicators, ": ", " #"), so ext_yaml_parse() gives v back.
 * TPX_ETOOBIG past out's cap or a nesting deeper than 64, TPX_ENOMEM. */
enum tpx_code ext_yaml_dump(const json_t *v, struct tpx_buf *out, struct tpx_err *err);

#endif
