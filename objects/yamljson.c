/* SPDX-License-Identifier: Apache-2.0 */
/* objects/yamljson.c - libyaml document graph -> jansson values, with YAML 1.2 core-schema
 * scalars, `<<` merge keys, and hard limits on depth and alias expansion. */
#include "objects/yamljson.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "common/buf.h"
#include "common/file.h"
#include "common/jsonstr.h"

/* The budgets of yamljson.h make hostile documents fail fast instead of eating memory: a real
 * manifest is a few dozen values deep, and aliases may expand a document to at most a few times
 * its own node count and byte length (plus slack for small files), so a "billion laughs" stops
 * early. */

/* One recorded position. seq orders the records of one address: a value freed during the parse
 * (a duplicate key's first value, a merged mapping's copy) may leave its address to a later one,
 * and the later record is the live one. */
struct obj_yaml_mark {
    const json_t *v;
    uint32_t line;
    uint32_t col;
    uint32_t seq;
};

struct conv {
    yaml_document_t *doc;
    const char *name;
    size_t values; /* JSON values created so far */
    size_t budget; /* most values this document may expand to */
    size_t *bytes; /* string and key bytes made so far in the stream */
    size_t bytes_budget;
    struct tpx_err *err;
    struct obj_yaml_docs *out; /* where marks go; NULL when positions are not recorded */
    size_t amarks;
};

static json_t *convert(struct conv *cv, yaml_node_t *node, unsigned depth);

/* Remember where v (just created from node) starts. false only when out of memory. */
static bool record(struct conv *cv, const json_t *v, const yaml_node_t *node)
{
    struct obj_yaml_docs *d = cv->out;

    if (!d || !v || json_is_null(v) || json_is_boolean(v))
        return true;
    if (d->nmarks == cv->amarks) {
        size_t na = cv->amarks ? cv->amarks * 2 : 256;
        struct obj_yaml_mark *nm = na <= UINT32_MAX ? realloc(d->marks, na * sizeof(*nm)) : NULL;
        if (!nm)
            return false;
        d->marks = nm;
        cv->amarks = na;
    }
    d->marks[d->nmarks] =
        (struct obj_yaml_mark){v, (uint32_t)node->start_mark.line + 1,
                               (uint32_t)node->start_mark.column + 1, (uint32_t)d->nmarks};
    d->nmarks++;
    return true;
}

/*
 * Plain scalars are resolved as kubectl resolves them (issue 21, item 4): sigs.k8s.io/yaml turns
 * YAML into JSON with its fork of go-yaml v2, whose resolve() (resolve.go, gopkg.in/yaml.v2
 * v2.4.0, the 'D' and 'S' cases) strips every '_' from a scalar that starts with a digit or a
 * sign, then tries strconv.ParseInt(plain, 0, 64): Go's base prefixes 0x, 0o and 0b, a leading 0
 * for octal (YAML 1.1: 010 is 8), an optional sign. Failing that ParseUint, then the float pattern
 * ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ (so 08 and 09 are the floats 8 and 9).
 * A scalar starting with '.' is a float when strconv.ParseFloat takes it whole. Anything else is
 * a string. JSON then carries a float64 with no fraction as an integer ("8", not "8.0": Go's
 * encoding/json writes 1e3 as 1000), so such floats become integers here too.
 */

/* strconv.ParseInt(s, 0, 64) on s without underscores; with u, strconv.ParseUint(s, 0, 64) (no
 * sign; the value is not stored). */
static bool go_parse_int(const char *s, bool u, long long *out)
{
    const char *p = s;
    bool neg = false;
    unsigned base = 10;
    unsigned long long v = 0, lim;

    if (!u && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
        base = 8;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        base = 2;
        p += 2;
    } else if (p[0] == '0' && p[1]) {
        base = 8;
        p++;
    }
    if (!*p)
        return false;
    lim = u ? ~0ULL : neg ? 9223372036854775808ULL : 9223372036854775807ULL;
    for (; *p; p++) {
        unsigned d = *p >= '0' && *p <= '9'   ? (unsigned)(*p - '0')
                     : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10)
                     : *p >= 'A' && *p <= 'F' ? (unsigned)(*p - 'A' + 10)
                                              : 99;

        if (d >= base || v > (lim - d) / base)
            return false;
        v = v * base + d;
    }
    if (!u)
        *out = neg ? (long long)(0 - v) : (long long)v;
    return true;
}

/* go-yaml v2's yamlStyleFloat pattern. */
static bool yaml_style_float(const char *s)
{
    const char *p = s;
    bool digits = false;

    if (*p == '-' || *p == '+')
        p++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
            digits = true;
        }
    } else {
        while (*p >= '0' && *p <= '9') {
            p++;
            digits = true;
        }
        if (digits && *p == '.') {
            p++;
            while (*p >= '0' && *p <= '9')
                p++;
        }
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

/* A finite double as JSON carries it: an integer when it has no fraction and Go would write it
 * without an exponent (below 1e21) within int64, else a real. */
static json_t *number_json(double d)
{
    if (d > -9.2e18 && d < 9.2e18 && (double)(json_int_t)d == d)
        return json_integer((json_int_t)d);
    return json_real(d);
}

/* A number for a plain scalar as go-yaml v2 reads one, or NULL when it is none (a string), or
 * when its value has no JSON form here (an integer past int64, a NaN, an infinity). */
static json_t *go_yaml_number(const char *s, size_t len)
{
    char *plain;
    size_t n = 0;
    long long iv;
    json_t *v = NULL;

    if (*s == '.') { /* ParseFloat(in) on the scalar as written */
        if (yaml_style_float(s)) {
            double d = strtod(s, NULL);
            if (isfinite(d))
                return number_json(d);
        }
        return NULL;
    }
    if (!((*s >= '0' && *s <= '9') || *s == '+' || *s == '-'))
        return NULL;
    plain = malloc(len + 1);
    if (!plain)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '_')
            plain[n++] = s[i];
    }
    plain[n] = '\0';
    if (go_parse_int(plain, false, &iv)) {
        v = json_integer(iv);
    } else if (go_parse_int(plain, true, &iv)) {
        v = NULL; /* a uint64 past int64: its text */
    } else if (yaml_style_float(plain)) {
        double d = strtod(plain, NULL);
        if (isfinite(d))
            v = number_json(d);
    }
    free(plain);
    return v;
}

static bool one_of(const char *s, const char *const *words)
{
    for (; *words; words++) {
        if (strcmp(s, *words) == 0)
            return true;
    }
    return false;
}

static enum tpx_code too_big(struct conv *cv, yaml_node_t *node, const char *what)
{
    return tpx_err_set(cv->err, TPX_ETOOBIG, "%s:%zu:%zu: %s", cv->name, node->start_mark.line + 1,
                       node->start_mark.column + 1, what);
}

/* Charge n string or key bytes made at node to the stream's byte budget. */
static bool spend_bytes(struct conv *cv, yaml_node_t *node, size_t n)
{
    if (n > cv->bytes_budget - *cv->bytes) {
        too_big(cv, node, "document expands to too many bytes (alias of a long string?)");
        return false;
    }
    *cv->bytes += n;
    return true;
}

int obj_yaml_bool_word(const char *s)
{
    /* go-yaml v2's resolve table (resolve.go, resolveMapList): YAML 1.1's booleans */
    static const char *const trues[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                        "True", "TRUE", "on",  "On",  "ON",  NULL};
    static const char *const falses[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                         "False", "FALSE", "off", "Off", "OFF", NULL};

    return one_of(s, trues) ? 1 : one_of(s, falses) ? 0 : -1;
}

/* Plain scalars resolved as kubectl's YAML reader resolves them (go_yaml_number() above); quoted
 * scalars are always strings. Numbers that do not fit an int64 or a finite double keep their text
 * (jansson has no value for them). */
static json_t *scalar(yaml_node_t *node)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    json_t *num;
    int b;
    const char *s = (const char *)node->data.scalar.value;
    size_t len = node->data.scalar.length;

    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || strlen(s) != len)
        return json_stringn(s, len);
    if (one_of(s, nulls))
        return json_null();
    if ((b = obj_yaml_bool_word(s)) >= 0)
        return b ? json_true() : json_false();
    num = go_yaml_number(s, len);
    if (num)
        return num;
    return json_stringn(s, len);
}

/* Copy the keys of `from` (a mapping, or a sequence of mappings) into obj where obj lacks them:
 * explicit keys always win over merged ones. Each step and each copied key is charged to the
 * budgets, and the depth is checked, since an anchor may name a sequence that holds itself. */
static enum tpx_code merge_into(struct conv *cv, json_t *obj, yaml_node_t *from, unsigned depth)
{
    if (depth > OBJ_YAML_MAX_DEPTH)
        return too_big(cv, from, "nesting too deep (recursive alias?)");
    if (++cv->values > cv->budget)
        return too_big(cv, from, "document expands to too many values (alias bomb?)");
    if (from->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = from->data.sequence.items.start;
             it < from->data.sequence.items.top; it++) {
            yaml_node_t *m = yaml_document_get_node(cv->doc, *it);
            if (!m || merge_into(cv, obj, m, depth + 1) != TPX_OK)
                return cv->err->code ? cv->err->code : TPX_EPARSE;
        }
        return TPX_OK;
    }
    if (from->type != YAML_MAPPING_NODE) {
        return tpx_err_set(cv->err, TPX_EPARSE,
                           "%s:%zu:%zu: '<<' needs a mapping or a list of mappings", cv->name,
                           from->start_mark.line + 1, from->start_mark.column + 1);
    }
    json_t *src = convert(cv, from, depth + 1);
    const char *key;
    size_t klen;
    json_t *val;

    if (!src)
        return cv->err->code;
    /* keys by length: a quoted key may hold a NUL ("k\0x" is not "k") */
    json_object_keylen_foreach(src, key, klen, val)
    {
        if (json_object_getn(obj, key, klen))
            continue;
        if (++cv->values > cv->budget) {
            too_big(cv, from, "document expands to too many values (alias bomb?)");
            break;
        }
        if (!spend_bytes(cv, from, klen))
            break;
        if (json_object_setn(obj, key, klen, val) != 0) {
            tpx_err_set(cv->err, TPX_ENOMEM, "%s: out of memory", cv->name);
            break;
        }
    }
    json_decref(src);
    return cv->err->code;
}

static json_t *mapping(struct conv *cv, yaml_node_t *node, unsigned depth)
{
    json_t *obj = json_object();
    yaml_node_pair_t *pair;

    if (!obj || !record(cv, obj, node))
        goto nomem;
    /* Explicit keys first, merges second, so explicit keys win wherever `<<` stands. */
    for (int pass = 0; pass < 2; pass++) {
        for (pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; pair++) {
            yaml_node_t *k = yaml_document_get_node(cv->doc, pair->key);
            yaml_node_t *v = yaml_document_get_node(cv->doc, pair->value);
            bool is_merge;

            if (!k || !v)
                continue;
            if (k->type != YAML_SCALAR_NODE) {
                tpx_err_set(cv->err, TPX_EPARSE, "%s:%zu:%zu: mapping keys must be scalars",
                            cv->name, k->start_mark.line + 1, k->start_mark.column + 1);
                goto fail;
            }
            is_merge = k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                       strcmp((const char *)k->data.scalar.value, "<<") == 0;
            if (pass == 0 && !is_merge) {
                json_t *jv;

                if (!spend_bytes(cv, k, k->data.scalar.length))
                    goto fail;
                jv = convert(cv, v, depth + 1);
                if (!jv)
                    goto fail;
                if (json_object_setn_new(obj, (const char *)k->data.scalar.value,
                                         k->data.scalar.length, jv) != 0)
                    goto nomem;
            } else if (pass == 1 && is_merge) {
                if (merge_into(cv, obj, v, depth) != TPX_OK)
                    goto fail;
            }
        }
    }
    return obj;
nomem:
    tpx_err_set(cv->err, TPX_ENOMEM, "%s: out of memory", cv->name);
fail:
    json_decref(obj);
    return NULL;
}

static json_t *convert(struct conv *cv, yaml_node_t *node, unsigned depth)
{
    json_t *v = NULL;

    if (depth > OBJ_YAML_MAX_DEPTH) {
        too_big(cv, node, "nesting too deep (recursive alias?)");
        return NULL;
    }
    if (++cv->values > cv->budget) {
        too_big(cv, node, "document expands to too many values (alias bomb?)");
        return NULL;
    }
    switch (node->type) {
    case YAML_SCALAR_NODE:
        if (!spend_bytes(cv, node, node->data.scalar.length))
            return NULL;
        v = scalar(node);
        if (v && !record(cv, v, node)) {
            json_decref(v);
            v = NULL;
        }
        break;
    case YAML_SEQUENCE_NODE:
        v = json_array();
        if (v && !record(cv, v, node)) {
            json_decref(v);
            v = NULL;
        }
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             v && it < node->data.sequence.items.top; it++) {
            yaml_node_t *child = yaml_document_get_node(cv->doc, *it);
            json_t *jc = child ? convert(cv, child, depth + 1) : json_null();
            if (!jc) {
                json_decref(v);
                return NULL;
            }
            json_array_append_new(v, jc);
        }
        break;
    case YAML_MAPPING_NODE:
        return mapping(cv, node, depth);
    default:
        v = json_null();
        break;
    }
    if (!v)
        tpx_err_set(cv->err, TPX_ENOMEM, "%s: out of memory", cv->name);
    return v;
}

static enum tpx_code push_doc(struct obj_yaml_docs *out, json_t *doc, struct tpx_err *err)
{
    json_t **p = realloc(out->docs, (out->n + 1) * sizeof(*p));

    if (!p) {
        json_decref(doc);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    }
    out->docs = p;
    out->docs[out->n++] = doc;
    return TPX_OK;
}

static int mark_cmp(const void *a, const void *b)
{
    const struct obj_yaml_mark *x = a;
    const struct obj_yaml_mark *y = b;
    uintptr_t px = (uintptr_t)x->v;
    uintptr_t py = (uintptr_t)y->v;

    if (px != py)
        return px < py ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the marks by address and keep the last record of each address (the live value's). */
static void seal_marks(struct obj_yaml_docs *d)
{
    size_t k = 0;

    if (!d->marks)
        return;
    qsort(d->marks, d->nmarks, sizeof(*d->marks), mark_cmp);
    for (size_t i = 0; i < d->nmarks; i++) {
        if (i + 1 < d->nmarks && d->marks[i + 1].v == d->marks[i].v)
            continue;
        d->marks[k++] = d->marks[i];
    }
    d->nmarks = k;
}

bool obj_yaml_pos(const struct obj_yaml_docs *d, const json_t *v, unsigned *line, unsigned *col)
{
    size_t lo = 0;
    size_t hi = d && v ? d->nmarks : 0;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t pm = (uintptr_t)d->marks[mid].v;
        if (pm == (uintptr_t)v) {
            if (line)
                *line = d->marks[mid].line;
            if (col)
                *col = d->marks[mid].col;
            return true;
        }
        if (pm < (uintptr_t)v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (line)
        *line = 0;
    if (col)
        *col = 0;
    return false;
}

enum tpx_code obj_yaml_parse(const char *data, size_t len, const char *name,
                             struct obj_yaml_docs *out, struct tpx_err *err)
{
    return obj_yaml_parse_opts(data, len, name, 0, out, err);
}

enum tpx_code obj_yaml_parse_opts(const char *data, size_t len, const char *name, unsigned flags,
                                  struct obj_yaml_docs *out, struct tpx_err *err)
{
    yaml_parser_t parser;
    enum tpx_code rc = TPX_OK;
    size_t amarks = 0;
    size_t bytes = 0;
    size_t bytes_budget = len * OBJ_YAML_BYTES_FACTOR + OBJ_YAML_BYTES_SLACK;

    memset(out, 0, sizeof(*out));
    if (len > OBJ_YAML_MAX_INPUT)
        return tpx_err_set(err, TPX_ETOOBIG, "%s:1:1: input larger than %zu bytes", name,
                           OBJ_YAML_MAX_INPUT);
    if (!yaml_parser_initialize(&parser))
        return tpx_err_set(err, TPX_ENOMEM, "%s: cannot initialise the YAML parser", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    for (;;) {
        yaml_document_t doc;
        yaml_node_t *root;
        struct conv cv = {&doc,   name,         0,   0,
                          &bytes, bytes_budget, err, (flags & OBJ_YAML_NO_POSITIONS) ? NULL : out,
                          amarks};
        json_t *j;

        if (!yaml_parser_load(&parser, &doc)) {
            rc = tpx_err_set(err, TPX_EPARSE, "%s:%zu:%zu: %s%s%s", name,
                             parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                             parser.problem ? parser.problem : "invalid YAML",
                             parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        root = yaml_document_get_root_node(&doc);
        if (!root) { /* end of stream */
            yaml_document_delete(&doc);
            break;
        }
        cv.budget = (size_t)(doc.nodes.top - doc.nodes.start) * OBJ_YAML_VALUE_FACTOR +
                    OBJ_YAML_VALUE_SLACK;
        j = convert(&cv, root, 0);
        amarks = cv.amarks;
        yaml_document_delete(&doc);
        if (!j) {
            rc = err->code ? err->code : tpx_err_set(err, TPX_EPARSE, "%s: invalid YAML", name);
            break;
        }
        if (json_is_null(j)) { /* an empty document between two `---` */
            json_decref(j);
            continue;
        }
        rc = push_doc(out, j, err);
        if (rc != TPX_OK)
            break;
    }
    yaml_parser_delete(&parser);
    if (rc != TPX_OK)
        obj_yaml_docs_release(out);
    else
        seal_marks(out);
    return rc;
}

enum tpx_code obj_yaml_load_file(const char *path, size_t max_bytes, struct obj_yaml_docs *out,
                                 struct tpx_err *err)
{
    return obj_yaml_load_file_opts(path, max_bytes, 0, out, err);
}

enum tpx_code obj_yaml_load_file_opts(const char *path, size_t max_bytes, unsigned flags,
                                      struct obj_yaml_docs *out, struct tpx_err *err)
{
    char *data;
    size_t len;
    enum tpx_code rc;

    memset(out, 0, sizeof(*out));
    if (tpx_read_file(path, max_bytes, &data, &len, err) != TPX_OK)
        return err->code;
    rc = obj_yaml_parse_opts(data, len, strcmp(path, "-") == 0 ? "<stdin>" : path, flags, out, err);
    free(data);
    return rc;
}

void obj_yaml_docs_release(struct obj_yaml_docs *d)
{
    for (size_t i = 0; i < d->n; i++)
        json_decref(d->docs[i]);
    free(d->docs);
    free(d->marks);
    d->docs = NULL;
    d->n = 0;
    d->marks = NULL;
    d->nmarks = 0;
}

/* --- emitter ---------------------------------------------------------------------------------- */

#define DUMP_DEPTH_MAX 64

static bool plain_safe(const char *s)
{
    static const char *const reserved[] = {"true", "false", "null", "yes", "no", "on",
                                           "off",  "y",     "n",    "~",   NULL};
    const unsigned char *p = (const unsigned char *)s;

    if (!*p) /* a number starts with a digit, a sign or '.', none of them allowed below */
        return false;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == '/'))
        return false;
    for (; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '/' || *p == '.' || *p == '-'))
            return false;
    }
    for (const char *const *w = reserved; *w; w++) {
        if (strcasecmp(s, *w) == 0)
            return false;
    }
    return true;
}

/* Append JSON-escaped text q (tpx_json_escape(), no quotes) to out inside YAML double quotes. JSON
 * escapes are YAML escapes, but JSON leaves some characters raw that YAML reads otherwise: NEL
 * (U+0085), LS and PS (U+2028, U+2029) are line breaks there, folded into a space, and DEL, the
 * other C1 controls, U+FEFF, U+FFFE and U+FFFF are not allowed in a YAML stream at all. Those are
 * escaped as \uXXXX. */
static enum tpx_code add_yaml_quoted(const char *q, struct tpx_buf *out, struct tpx_err *err)
{
    const unsigned char *p = (const unsigned char *)q;
    const unsigned char *run = p;

    for (; *p; p++) {
        unsigned cp;
        size_t n;

        if (p[0] == 0x7f) {
            cp = 0x7f;
            n = 1;
        } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            cp = p[1];
            n = 2;
        } else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            cp = 0x2000u | (p[2] - 0x80u);
            n = 3;
        } else if (p[0] == 0xef && ((p[1] == 0xbb && p[2] == 0xbf) ||
                                    (p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)))) {
            cp = 0xf000u | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
            n = 3;
        } else {
            continue;
        }
        if (tpx_buf_add(out, (const char *)run, (size_t)(p - run), err) != TPX_OK ||
            tpx_buf_addf(out, err, "\\u%04x", cp) != TPX_OK)
            return err->code;
        p += n - 1;
        run = p + 1;
    }
    return tpx_buf_add(out, (const char *)run, (size_t)(p - run), err);
}

/* A plain scalar when that reads back the same, else a double-quoted one. */
static enum tpx_code dump_str(const char *s, size_t len, struct tpx_buf *out, struct tpx_err *err)
{
    struct tpx_buf q;
    enum tpx_code rc;

    if (strlen(s) == len && plain_safe(s))
        return tpx_buf_adds(out, s, err);
    tpx_buf_init(&q, out->cap);
    rc = tpx_json_escape(&q, s, len, err);
    if (rc == TPX_OK)
        rc = tpx_buf_add(out, "\"", 1, err);
    if (rc == TPX_OK)
        rc = add_yaml_quoted(q.data ? q.data : "", out, err);
    if (rc == TPX_OK)
        rc = tpx_buf_add(out, "\"", 1, err);
    tpx_buf_release(&q);
    return rc;
}

static bool is_block(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

static enum tpx_code dump_scalar(const json_t *v, struct tpx_buf *out, struct tpx_err *err)
{
    char num[64];

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return tpx_buf_adds(out, "{}", err);
    case JSON_ARRAY:
        return tpx_buf_adds(out, "[]", err);
    case JSON_STRING:
        return dump_str(json_string_value(v), json_string_length(v), out, err);
    case JSON_INTEGER:
        return tpx_buf_addf(out, err, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    case JSON_REAL:
        /* the shortest of 10, 15 and 17 digits that reads back as the same double: a number
         * with no fraction left after rounding would read back as an integer (go_yaml_number) */
        snprintf(num, sizeof(num), "%.10g", json_real_value(v));
        if (strtod(num, NULL) != json_real_value(v))
            snprintf(num, sizeof(num), "%.15g", json_real_value(v));
        if (strtod(num, NULL) != json_real_value(v))
            snprintf(num, sizeof(num), "%.17g", json_real_value(v));
        if (!strpbrk(num, ".eEn"))
            return tpx_buf_addf(out, err, "%s.0", num);
        return tpx_buf_adds(out, num, err);
    case JSON_TRUE:
        return tpx_buf_adds(out, "true", err);
    case JSON_FALSE:
        return tpx_buf_adds(out, "false", err);
    default:
        return tpx_buf_adds(out, "null", err);
    }
}

static enum tpx_code dump_block(const json_t *v, unsigned indent, bool inline_first, unsigned depth,
                                struct tpx_buf *out, struct tpx_err *err);

static enum tpx_code pad(unsigned n, struct tpx_buf *out, struct tpx_err *err)
{
    static const char spaces[] = "                                ";

    while (n > 0) {
        unsigned k = n < sizeof(spaces) - 1 ? n : (unsigned)sizeof(spaces) - 1;
        if (tpx_buf_add(out, spaces, k, err) != TPX_OK)
            return err->code;
        n -= k;
    }
    return TPX_OK;
}

/* After "key:" or "- ": a scalar on the same line, or a nested block. */
static enum tpx_code dump_value(const json_t *v, unsigned indent, bool in_seq, unsigned depth,
                                struct tpx_buf *out, struct tpx_err *err)
{
    if (!is_block(v)) {
        if ((!in_seq && tpx_buf_adds(out, " ", err) != TPX_OK) ||
            dump_scalar(v, out, err) != TPX_OK)
            return err->code;
        return tpx_buf_adds(out, "\n", err);
    }
    if (in_seq && json_is_object(v))
        return dump_block(v, indent + 2, true, depth + 1, out, err);
    if (tpx_buf_adds(out, "\n", err) != TPX_OK)
        return err->code;
    /* kubectl writes a sequence under a key at the key's own indent */
    return dump_block(v, json_is_array(v) && !in_seq ? indent : indent + 2, false, depth + 1, out,
                      err);
}

static enum tpx_code dump_block(const json_t *v, unsigned indent, bool inline_first, unsigned depth,
                                struct tpx_buf *out, struct tpx_err *err)
{
    bool first = true;

    if (depth > DUMP_DEPTH_MAX)
        return tpx_err_set(err, TPX_ETOOBIG, "yaml dump: nesting deeper than %d", DUMP_DEPTH_MAX);
    if (json_is_object(v)) {
        const char *key;
        size_t klen;
        json_t *val;
        /* by length: a key may hold a NUL, which dump_str() then quotes as \u0000 */
        json_object_keylen_foreach((json_t *)v, key, klen, val)
        {
            if (!(first && inline_first) && pad(indent, out, err) != TPX_OK)
                return err->code;
            first = false;
            if (dump_str(key, klen, out, err) != TPX_OK || tpx_buf_adds(out, ":", err) != TPX_OK ||
                dump_value(val, indent, false, depth, out, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val)
        {
            if (!(first && inline_first) && pad(indent, out, err) != TPX_OK)
                return err->code;
            first = false;
            if (tpx_buf_adds(out, "- ", err) != TPX_OK ||
                dump_value(val, indent, true, depth, out, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (dump_scalar(v, out, err) != TPX_OK)
        return err->code;
    return tpx_buf_adds(out, "\n", err);
}

enum tpx_code obj_yaml_dump(const json_t *v, struct tpx_buf *out, struct tpx_err *err)
{
    if (!v)
        return tpx_err_set(err, TPX_EINVAL, "yaml dump: no value");
    if (!is_block(v)) {
        if (dump_scalar(v, out, err) != TPX_OK)
            return err->code;
        return tpx_buf_adds(out, "\n", err);
    }
    return dump_block(v, 0, false, 0, out, err);
}

const char *obj_yaml_library_version(void)
{
    return yaml_get_version_string();
}

const char *obj_json_library_version(void)
{
    return jansson_version_str();
}
