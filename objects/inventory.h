/* SPDX-License-Identifier: Apache-2.0 */
/* objects/inventory.h - the rack/block/NVLink-domain inventory of `topox label --inventory` (YAML
 * or CSV: node -> rack, block, nvlink-domain), and the node names and labels of a NodeList file
 * (`kubectl get nodes -o json|yaml`) to compare it with. No logging. */
#ifndef TPX_OBJECTS_INVENTORY_H
#define TPX_OBJECTS_INVENTORY_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"
#include "objects/label_patch.h"

/* One node's row. Strings are malloc'd and owned by the inventory; NULL when the column is empty
 * or absent (the label is then removed from the node). */
struct obj_inventory_row {
    char *node;
    char *rack;
    char *block;
    char *domain; /* topox.io/nvlink-domain */
    size_t line;  /* where the row starts in the file (1-based), 0 when unknown */
};

/* Owns rows: obj_inventory_release(). Rows keep file order. */
struct obj_inventory {
    struct obj_inventory_row *rows;
    size_t n;
};

/*
 * Read an inventory. A name ending in ".csv" is CSV: '#' comments and blank lines skipped, an
 * optional header "node,rack,block,nvlink-domain" (columns in any order; "name" and "domain" are
 * accepted too), else those four columns in that order; fields may be double-quoted. Anything else
 * is YAML/JSON through obj_yaml_load_file(): {nodes: [{name|node, rack, block, nvlink-domain}]},
 * a top-level list of such rows, or a map {NODE: {rack, block, nvlink-domain}}.
 * Every value must be a valid label value and every node name appear once.
 * Errors (TPX_EPARSE/TPX_EINVAL) read "FILE:LINE: what" where a line is known, else "FILE: what";
 * TPX_ENOENT/TPX_EIO when it cannot be read. *out is zeroed first; release it also on failure.
 */
enum tpx_code obj_inventory_load(const char *path, struct obj_inventory *out, struct tpx_err *err);

/* Parse CSV text of len bytes; name is used in messages. Same rules as above. */
enum tpx_code obj_inventory_parse_csv(const char *data, size_t len, const char *name,
                                      struct obj_inventory *out, struct tpx_err *err);

/* The wanted inventory labels of one row (up to 3, only non-NULL columns), borrowed from row. */
size_t obj_inventory_row_labels(const struct obj_inventory_row *row, struct obj_kv out[3]);

/* The row of a node, or NULL. Borrowed. */
const struct obj_inventory_row *obj_inventory_find(const struct obj_inventory *inv,
                                                   const char *node);

void obj_inventory_release(struct obj_inventory *inv);

/* One node of a NodeList: its name and labels (all malloc'd, owned by the list). */
struct obj_node_entry {
    char *name;
    struct obj_kv *labels; /* key/value strings owned here (cast away const to free) */
    size_t n_labels;
    char *topology; /* the topox.io/topology annotation, or NULL */
};

struct obj_nodelist {
    struct obj_node_entry *nodes;
    size_t n;
};

/* Load a NodeList (or a single Node, or a stream of Nodes) from a JSON/YAML file. TPX_EPARSE when
 * it holds no Node objects or an item lacks metadata.name. *out is zeroed first; release it also
 * on failure. */
enum tpx_code obj_nodelist_load(const char *path, struct obj_nodelist *out, struct tpx_err *err);

/* Append the Nodes of one decoded document (a NodeList or a Node, e.g. an API server answer);
 * name is used in messages. The value is only read. */
enum tpx_code obj_nodelist_add_json(struct obj_nodelist *l, json_t *doc, const char *name,
                                    struct tpx_err *err);

const struct obj_node_entry *obj_nodelist_find(const struct obj_nodelist *l, const char *name);

void obj_nodelist_release(struct obj_nodelist *l);

#endif
