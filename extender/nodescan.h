/* SPDX-License-Identifier: Apache-2.0 */
/* extender/nodescan.h - a fast, allocation-light JSON tokenizer for the extender's hot paths: the
 * top level of ExtenderArgs (spans of Pod, Nodes, NodeNames), NodeNames arrays, and NodeList items
 * (each item's byte span plus only the fields the filter needs: name, labels, allocatable,
 * unschedulable, Ready). No JSON library: jansson stays for small documents (the Pod).
 *
 * Every function is reentrant and reads only [p, p + len): hostile input gives TPX_EPARSE (with a
 * byte offset) or TPX_ETOOBIG (nesting past EXT_SCAN_MAX_DEPTH), never a read out of bounds. */
#ifndef TPX_EXTENDER_NODESCAN_H
#define TPX_EXTENDER_NODESCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "topology/labels.h"

#define EXT_SCAN_MAX_DEPTH 512

/* A byte range of the input; null is true when the value there is the literal null (or absent). */
struct ext_nodescan_span {
    size_t off;
    size_t len;
    bool present; /* the key was there (even with null) */
    bool null;    /* absent or null */
};

/* Check that [p, p + len) is exactly one JSON value (surrounded by whitespace only). */
enum tpx_code ext_nodescan_validate(const char *p, size_t len, struct tpx_err *err);

/*
 * Scan one JSON object and record the span of the value of each key in keys[] (at most 16),
 * matched the way Go's encoding/json matches struct fields: the key unescaped, then compared
 * under case folding; when a key occurs more than once, in any spelling, the last occurrence wins.
 * spans[i] has present=false, null=true when keys[i] is absent. Other keys are skipped (and
 * validated). TPX_EPARSE when the input is not one JSON object.
 * Bit i of deferred: the caller parses the value of keys[i] with a validating parser of its own,
 * so an array or object there is only skipped by its brackets here (one pass over it instead of
 * two); if the caller does not parse such a span after all, it must ext_nodescan_validate() it. A
 * deferred value that a duplicate key replaces is validated here.
 */
enum tpx_code ext_nodescan_object_keys(const char *p, size_t len, const char *const *keys,
                                       size_t nkeys, unsigned deferred,
                                       struct ext_nodescan_span *spans, struct tpx_err *err);

/*
 * The same, but the value of keys[i] with bit i of hooked set is handed to hook(ctx, i, at, rest,
 * &used, err) instead: at is where the value starts, rest the bytes from there to the end of the
 * input; the hook parses one value from the start (validating it) and sets *used to its length.
 * It is called for every occurrence (the last one wins, as above). An error from it ends the scan.
 */
typedef enum tpx_code ext_nodescan_hook_fn(void *ctx, size_t key, const char *at, size_t rest,
                                           size_t *used, struct tpx_err *err);
enum tpx_code ext_nodescan_object_keys_hook(const char *p, size_t len, const char *const *keys,
                                            size_t nkeys, unsigned deferred, unsigned hooked,
                                            ext_nodescan_hook_fn *hook, void *ctx,
                                            struct ext_nodescan_span *spans, struct tpx_err *err);

/* Whether a decoded object key of len bytes matches the field name as Go's encoding/json matches
 * struct fields (the rule of ext_nodescan_object_keys()). */
bool ext_nodescan_key_is(const char *key, size_t len, const char *name);

/* The length of the array or object at the start of [p, p + len) by its brackets and quotes
 * alone, as a deferred value is skipped (validated only when it is no array or object). */
enum tpx_code ext_nodescan_span_len(const char *p, size_t len, size_t *used, struct tpx_err *err);

/* The length of the one JSON value at the start of [p, p + len) (validated), in *used. */
enum tpx_code ext_nodescan_value_len(const char *p, size_t len, size_t *used, struct tpx_err *err);

/*
 * A JSON array of strings -> decoded, NUL-terminated strings. *out is one malloc'd block: the
 * pointer array followed by the characters; free(*out) releases everything. TPX_EPARSE when an
 * element is not a string.
 */
enum tpx_code ext_nodescan_string_array(const char *p, size_t len, char ***out, size_t *n,
                                        struct tpx_err *err);

/* NodeNames: the same, for candidate node names (issue 12, item 6). Each entry must be 1..
 * EXT_SCAN_NAME_MAX bytes once decoded and hold no NUL or control byte: TPX_EINVAL naming the
 * entry. More than max entries: TPX_ETOOBIG, before anything is allocated for the rest. Escaped
 * entries are checked after decoding; plain ones cannot hold control bytes (string_tok refuses
 * them), so the common case costs no extra pass. */
#define EXT_SCAN_NAME_MAX 253
enum tpx_code ext_nodescan_node_names(const char *p, size_t len, size_t max, char ***out, size_t *n,
                                      struct tpx_err *err);

/* The same for the array at the start of [p, p + len), whatever follows it; *used: its length. */
enum tpx_code ext_nodescan_node_names_prefix(const char *p, size_t len, size_t max, char ***out,
                                             size_t *n, size_t *used, struct tpx_err *err);

/* One Node object of a NodeList, as the filter needs it. Strings point into the result's arena. */
struct ext_nodescan_node {
    size_t off; /* the item's bytes in the scanned input (relative to the p given) */
    size_t len;
    const char *name; /* metadata.name, or NULL when missing */
    size_t labels;    /* first label in ext_nodescan_nodes.kv */
    size_t nlabels;
    size_t alloc; /* first allocatable entry in ext_nodescan_nodes.kv */
    size_t nalloc;
    bool unschedulable; /* spec.unschedulable */
    bool ready;         /* status.conditions[type=Ready].status == "True", or no Ready seen */
};

/* Owned by the caller: ext_nodescan_nodes_release(). */
struct ext_nodescan_nodes {
    struct ext_nodescan_node *items;
    size_t n;
    struct topo_kv *kv; /* labels and allocatable pairs of every item */
    size_t nkv;
    char *arena; /* decoded strings */
};

/*
 * Scan a NodeList object ({"metadata":{},"items":[...]}, "items" matched as above, the last one
 * winning) or a bare array of Node objects. Inside an item only the exact key spellings that
 * Kubernetes writes (metadata, name, labels, spec, status, ...) are read. A null list gives zero
 * items. Every item is validated as JSON; items must be objects.
 */
enum tpx_code ext_nodescan_nodelist(const char *p, size_t len, struct ext_nodescan_nodes *out,
                                    struct tpx_err *err);
/* The NodeList value at the start of [p, p + len), whatever follows it; *used: its length. Item
 * offsets are relative to p. For ext_nodescan_object_keys_hook(). */
enum tpx_code ext_nodescan_nodelist_prefix(const char *p, size_t len,
                                           struct ext_nodescan_nodes *out, size_t *used,
                                           struct tpx_err *err);
void ext_nodescan_nodes_release(struct ext_nodescan_nodes *s);

/*
 * The victims map of ExtenderPreemptionArgs (NodeNameToMetaVictims with meta, NodeNameToVictims
 * without), read in one pass with nothing copied (issue 21, item 1): a node name and each victim's
 * UID are kept as byte ranges of the input, 8 bytes a victim and 24 a node, so a request costs
 * less than its body. Go's rules (encoding/json decode.go): the map's keys are exact, and every
 * key is kept in order (a repeated node comes twice; the caller keeps the last); inside a node's
 * value "Pods" and "NumPDBViolations" match case-insensitively (key_matches above) and the last
 * wins, a null Pods empties the list and a null NumPDBViolations changes nothing; inside a pod
 * "UID" (meta) or "metadata" then "uid" (full Pods) likewise, the last non-null string winning. A
 * node whose value is null or has no victims is kept only as a name (in empty), for the caller's
 * last-wins rule. A node name that cannot be a node (empty, over EXT_SCAN_NAME_MAX bytes decoded,
 * a control byte) is skipped. More than max_nodes keys or max_victims victims: TPX_ETOOBIG before
 * anything more is stored. A UID that is not a string, or a count that is not an integer:
 * TPX_EPARSE.
 */
#define EXT_SCAN_RAW_ESC 0x80000000U /* in a raw length: the bytes hold an escape */
struct ext_nodescan_raw {
    uint32_t off; /* the bytes between the quotes, relative to the p given */
    uint32_t len; /* | EXT_SCAN_RAW_ESC when they hold an escape */
};
struct ext_nodescan_vnode {
    struct ext_nodescan_raw name;
    uint32_t first; /* victims: uids[first, first + n) */
    uint32_t n;
    long long pdb; /* NumPDBViolations */
};
struct ext_nodescan_victims {
    struct ext_nodescan_vnode *nodes; /* nodes with at least one victim, in input order */
    size_t n;
    struct ext_nodescan_raw *empty; /* names of nodes without victims, in input order */
    size_t nempty;
    struct ext_nodescan_raw *uids;
    size_t nuids;
};
enum tpx_code ext_nodescan_victims(const char *p, size_t len, bool meta, size_t max_nodes,
                                   size_t max_victims, struct ext_nodescan_victims *out,
                                   struct tpx_err *err);
void ext_nodescan_victims_release(struct ext_nodescan_victims *v);

/* Decode the raw string bytes r of p into dst (room for (r.len & ~EXT_SCAN_RAW_ESC) + 1 bytes),
 * NUL-terminated; returns the decoded length. */
size_t ext_nodescan_raw_decode(const char *p, struct ext_nodescan_raw r, char *dst);

#endif
