/* SPDX-License-Identifier: Apache-2.0 */
/* objects/inventory.c - inventory files (CSV by hand, YAML through yamljson) and NodeList files.
 * jansson values come from obj_yaml_load_file() and are decoded into C structs at once. */
#include "objects/inventory.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/file.h"
#include "objects/podfacts.h"
#include "objects/yamljson.h"
#include "topology/discover.h"
#include "common/banned.h"

enum { MAX_FILE = 64 << 20, MAX_FIELD = 256 };

enum col { COL_NODE, COL_RACK, COL_BLOCK, COL_DOMAIN, COL_COUNT };

static const char *const col_label[COL_COUNT] = {"node", "topox.io/rack", "topox.io/block",
                                                 "topox.io/nvlink-domain"};

void obj_inventory_release(struct obj_inventory *inv)
{
    for (size_t i = 0; i < inv->n; i++) {
        free(inv->rows[i].node);
        free(inv->rows[i].rack);
        free(inv->rows[i].block);
        free(inv->rows[i].domain);
    }
    free(inv->rows);
    inv->rows = NULL;
    inv->n = 0;
}

static char **row_field(struct obj_inventory_row *r, enum col c)
{
    switch (c) {
    case COL_NODE:
        return &r->node;
    case COL_RACK:
        return &r->rack;
    case COL_BLOCK:
        return &r->block;
    default:
        return &r->domain;
    }
}

static void row_release(struct obj_inventory_row *r)
{
    free(r->node);
    free(r->rack);
    free(r->block);
    free(r->domain);
    memset(r, 0, sizeof(*r));
}

/* "FILE:LINE: " or "FILE: " */
static void where(char *dst, size_t size, const char *name, size_t line)
{
    if (line)
        snprintf(dst, size, "%s:%zu", name, line);
    else
        snprintf(dst, size, "%s", name);
}

/* Append a row after checking its values: a node name, label values, no duplicate. Takes
 * ownership of the row's strings whatever happens. */
static enum tpx_code add_row(struct obj_inventory *inv, struct obj_inventory_row *row,
                             const char *name, struct tpx_err *err)
{
    char at[512];
    struct obj_inventory_row *p;

    where(at, sizeof(at), name, row->line);
    if (!row->node || !*row->node) {
        tpx_err_set(err, TPX_EINVAL, "%s: row without a node name", at);
        goto fail;
    }
    for (int c = COL_NODE; c < COL_COUNT; c++) {
        const char *v = *row_field(row, (enum col)c);

        if (v && (!topo_label_value_valid(v) || (c == COL_NODE && strlen(v) > 253))) {
            tpx_err_set(err, TPX_EINVAL, "%s: %s '%s' is not a valid label value", at,
                        c == COL_NODE ? "node" : col_label[c], v);
            goto fail;
        }
    }
    if (obj_inventory_find(inv, row->node)) {
        tpx_err_set(err, TPX_EINVAL, "%s: node '%s' is listed twice", at, row->node);
        goto fail;
    }
    p = realloc(inv->rows, (inv->n + 1) * sizeof(*p));
    if (!p) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto fail;
    }
    inv->rows = p;
    inv->rows[inv->n++] = *row;
    return TPX_OK;
fail:
    row_release(row);
    return err->code;
}

static char *dup_field(const char *s, size_t n)
{
    char *p;

    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (n == 0)
        return NULL;
    p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* Split one CSV line into at most max fields (double quotes group, "" is a quote). Returns the
 * field count, or -1 on an unterminated quote or a field over MAX_FIELD. Fields are malloc'd
 * (NULL when empty). */
static int split_csv(const char *s, size_t n, char **fields, int max)
{
    int nf = 0;
    size_t i = 0;

    for (;;) {
        char buf[MAX_FIELD];
        size_t bl = 0;

        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n && s[i] == '"') {
            i++;
            for (;;) {
                if (i >= n)
                    return -1;
                if (s[i] == '"' && i + 1 < n && s[i + 1] == '"') {
                    i++;
                } else if (s[i] == '"') {
                    i++;
                    break;
                }
                if (bl + 1 >= sizeof(buf))
                    return -1;
                buf[bl++] = s[i++];
            }
            while (i < n && s[i] != ',')
                i++;
        } else {
            while (i < n && s[i] != ',') {
                if (bl + 1 >= sizeof(buf))
                    return -1;
                buf[bl++] = s[i++];
            }
        }
        if (nf < max)
            fields[nf] = dup_field(buf, bl);
        nf++;
        if (i >= n || s[i] != ',')
            break;
        i++;
    }
    return nf;
}

static bool col_from_header(const char *h, enum col *c)
{
    static const struct {
        const char *name;
        enum col c;
    } names[] = {{"node", COL_NODE},
                 {"name", COL_NODE},
                 {"rack", COL_RACK},
                 {"block", COL_BLOCK},
                 {"nvlink-domain", COL_DOMAIN},
                 {"domain", COL_DOMAIN},
                 {"nvlink_domain", COL_DOMAIN}};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (h && strcmp(h, names[i].name) == 0) {
            *c = names[i].c;
            return true;
        }
    }
    return false;
}

enum tpx_code obj_inventory_parse_csv(const char *data, size_t len, const char *name,
                                      struct obj_inventory *out, struct tpx_err *err)
{
    enum col map[8] = {COL_NODE, COL_RACK, COL_BLOCK, COL_DOMAIN};
    int ncols = 4;
    bool first = true;
    size_t line = 0;
    size_t pos = 0;

    memset(out, 0, sizeof(*out));
    while (pos < len) {
        const char *s = data + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        char *f[8] = {0};
        int nf;
        size_t k = 0;

        pos += n + (nl ? 1 : 0);
        line++;
        while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r'))
            k++;
        if (k == n || s[k] == '#')
            continue;
        nf = split_csv(s, n, f, 8);
        if (nf < 0 || nf > 8) {
            for (int i = 0; i < 8; i++)
                free(f[i]);
            return tpx_err_set(err, TPX_EPARSE, "%s:%zu: %s", name, line,
                               nf < 0 ? "bad quoting or a field too long" : "too many columns");
        }
        if (first) {
            enum col c;

            first = false;
            if (col_from_header(f[0], &c)) {
                for (int i = 0; i < nf; i++) {
                    if (!col_from_header(f[i], &map[i])) {
                        tpx_err_set(err, TPX_EPARSE,
                                    "%s:%zu: unknown column '%s' (want node, "
                                    "rack, block, nvlink-domain)",
                                    name, line, f[i] ? f[i] : "");
                        for (int j = 0; j < nf; j++)
                            free(f[j]);
                        return err->code;
                    }
                }
                ncols = nf;
                for (int i = 0; i < nf; i++)
                    free(f[i]);
                continue;
            }
        }
        {
            struct obj_inventory_row row;

            memset(&row, 0, sizeof(row));
            row.line = line;
            if (nf > ncols) {
                for (int i = 0; i < nf; i++)
                    free(f[i]);
                return tpx_err_set(err, TPX_EPARSE, "%s:%zu: %d columns, expected at most %d", name,
                                   line, nf, ncols);
            }
            for (int i = 0; i < nf; i++) {
                char **slot = row_field(&row, map[i]);

                free(*slot);
                *slot = f[i];
            }
            if (add_row(out, &row, name, err) != TPX_OK)
                return err->code;
        }
    }
    return TPX_OK;
}

/* A YAML scalar as a new string: strings, integers (rack: 12) or NULL for null/absent. */
static enum tpx_code scalar(json_t *v, const char *at, const char *what, char **out,
                            struct tpx_err *err)
{
    char num[32];

    *out = NULL;
    if (!v || json_is_null(v))
        return TPX_OK;
    if (json_is_string(v)) {
        *out = json_string_length(v) ? strdup(json_string_value(v)) : NULL;
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        *out = strdup(num);
    } else {
        return tpx_err_set(err, TPX_EPARSE, "%s: %s must be a string", at, what);
    }
    if (json_is_string(v) && json_string_length(v) && !*out)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    return TPX_OK;
}

static enum tpx_code yaml_row(struct obj_inventory *inv, const char *name, const char *node_key,
                              json_t *obj, size_t idx, struct tpx_err *err)
{
    struct obj_inventory_row row;
    char at[512];
    const char *key;
    json_t *val;

    memset(&row, 0, sizeof(row));
    if (node_key)
        snprintf(at, sizeof(at), "%s: node '%s'", name, node_key);
    else
        snprintf(at, sizeof(at), "%s: row %zu", name, idx + 1);
    if (!json_is_object(obj))
        return tpx_err_set(err, TPX_EPARSE, "%s: expected a mapping", at);
    json_object_foreach(obj, key, val)
    {
        enum col c;
        char **slot;

        if (!col_from_header(key, &c)) {
            row_release(&row);
            return tpx_err_set(err, TPX_EPARSE,
                               "%s: unknown key '%s' (want name, rack, block, nvlink-domain)", at,
                               key);
        }
        slot = row_field(&row, c);
        free(*slot);
        *slot = NULL;
        if (scalar(val, at, key, slot, err) != TPX_OK) {
            row_release(&row);
            return err->code;
        }
    }
    if (node_key) {
        free(row.node);
        row.node = strdup(node_key);
        if (!row.node) {
            row_release(&row);
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        }
    }
    return add_row(inv, &row, name, err);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s);
    size_t m = strlen(suffix);

    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static enum tpx_code yaml_rows(struct obj_inventory *inv, const char *name, json_t *doc,
                               struct tpx_err *err)
{
    json_t *nodes = json_is_object(doc) ? json_object_get(doc, "nodes") : NULL;
    size_t i;
    json_t *v;
    const char *key;

    if (json_is_array(nodes))
        doc = nodes;
    if (json_is_array(doc)) {
        json_array_foreach(doc, i, v)
        {
            if (yaml_row(inv, name, NULL, v, i, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (json_is_object(doc) && !nodes) {
        i = 0;
        json_object_foreach(doc, key, v)
        {
            if (yaml_row(inv, name, key, v, i++, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    return tpx_err_set(err, TPX_EPARSE,
                       "%s: expected 'nodes:' with a list of rows, a list, or a map of nodes",
                       name);
}

enum tpx_code obj_inventory_load(const char *path, struct obj_inventory *out, struct tpx_err *err)
{
    struct obj_yaml_docs docs = {0};

    memset(out, 0, sizeof(*out));
    if (has_suffix(path, ".csv")) {
        char *data = NULL;
        size_t len = 0;

        if (tpx_read_file(path, MAX_FILE, &data, &len, err) != TPX_OK)
            return err->code;
        obj_inventory_parse_csv(data, len, path, out, err);
        free(data);
        return err->code;
    }
    if (obj_yaml_load_file(path, MAX_FILE, &docs, err) != TPX_OK)
        return err->code;
    for (size_t d = 0; d < docs.n && err->code == TPX_OK; d++)
        yaml_rows(out, path, docs.docs[d], err);
    if (err->code == TPX_OK && out->n == 0)
        tpx_err_set(err, TPX_EPARSE, "%s: no nodes in the inventory", path);
    obj_yaml_docs_release(&docs);
    return err->code;
}

size_t obj_inventory_row_labels(const struct obj_inventory_row *row, struct obj_kv out[3])
{
    size_t n = 0;

    if (row->rack)
        out[n++] = (struct obj_kv){col_label[COL_RACK], row->rack};
    if (row->block)
        out[n++] = (struct obj_kv){col_label[COL_BLOCK], row->block};
    if (row->domain)
        out[n++] = (struct obj_kv){col_label[COL_DOMAIN], row->domain};
    return n;
}

const struct obj_inventory_row *obj_inventory_find(const struct obj_inventory *inv,
                                                   const char *node)
{
    for (size_t i = 0; i < inv->n; i++) {
        if (strcmp(inv->rows[i].node, node) == 0)
            return &inv->rows[i];
    }
    return NULL;
}

/* ---- NodeList ---- */

static void entry_release(struct obj_node_entry *e)
{
    for (size_t i = 0; i < e->n_labels; i++) {
        free((char *)e->labels[i].key);
        free((char *)e->labels[i].value);
    }
    free(e->labels);
    free(e->name);
    free(e->topology);
}

void obj_nodelist_release(struct obj_nodelist *l)
{
    for (size_t i = 0; i < l->n; i++)
        entry_release(&l->nodes[i]);
    free(l->nodes);
    l->nodes = NULL;
    l->n = 0;
}

const struct obj_node_entry *obj_nodelist_find(const struct obj_nodelist *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->nodes[i].name, name) == 0)
            return &l->nodes[i];
    }
    return NULL;
}

static enum tpx_code add_node(struct obj_nodelist *l, const char *path, json_t *node,
                              struct tpx_err *err)
{
    json_t *meta = json_object_get(node, "metadata");
    json_t *labels = json_object_get(meta, "labels");
    json_t *ann = json_object_get(json_object_get(meta, "annotations"), TOPO_ANNOTATION_TOPOLOGY);
    const char *name = json_string_value(json_object_get(meta, "name"));
    struct obj_node_entry e;
    struct obj_node_entry *p;
    const char *key;
    json_t *v;

    if (!name)
        return tpx_err_set(err, TPX_EPARSE, "%s: a Node without metadata.name", path);
    memset(&e, 0, sizeof(e));
    e.name = strdup(name);
    e.labels = calloc(json_object_size(labels) + 1, sizeof(*e.labels));
    if (json_is_string(ann))
        e.topology = strdup(json_string_value(ann));
    if (!e.name || !e.labels || (json_is_string(ann) && !e.topology))
        goto nomem;
    json_object_foreach(labels, key, v)
    {
        char *k;
        char *val;

        if (!json_is_string(v))
            continue;
        k = strdup(key);
        val = strdup(json_string_value(v));
        if (!k || !val) {
            free(k);
            free(val);
            goto nomem;
        }
        e.labels[e.n_labels++] = (struct obj_kv){k, val};
    }
    p = realloc(l->nodes, (l->n + 1) * sizeof(*p));
    if (!p)
        goto nomem;
    l->nodes = p;
    l->nodes[l->n++] = e;
    return TPX_OK;
nomem:
    entry_release(&e);
    return tpx_err_set(err, TPX_ENOMEM, "out of memory");
}

enum tpx_code obj_nodelist_add_json(struct obj_nodelist *l, json_t *doc, const char *name,
                                    struct tpx_err *err)
{
    json_t *items = json_object_get(doc, "items");
    size_t i;
    json_t *n;

    if (json_is_array(items)) {
        json_array_foreach(items, i, n)
        {
            if (add_node(l, name, n, err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    if (obj_is_kind(doc, "", "Node"))
        return add_node(l, name, doc, err);
    return tpx_err_set(err, TPX_EPARSE, "%s: neither a NodeList nor a Node", name);
}

enum tpx_code obj_nodelist_load(const char *path, struct obj_nodelist *out, struct tpx_err *err)
{
    struct obj_yaml_docs docs = {0};

    memset(out, 0, sizeof(*out));
    if (obj_yaml_load_file(path, (size_t)MAX_FILE * 4, &docs, err) != TPX_OK)
        return err->code;
    for (size_t d = 0; d < docs.n && err->code == TPX_OK; d++)
        obj_nodelist_add_json(out, docs.docs[d], path, err);
    if (err->code == TPX_OK && out->n == 0)
        tpx_err_set(err, TPX_EPARSE, "%s: no Node objects", path);
    obj_yaml_docs_release(&docs);
    return err->code;
}
