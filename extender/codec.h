/* SPDX-License-Identifier: Apache-2.0 */
/* extender/codec.h - the kube-scheduler extender wire format (extender-protocol.md section 1):
 * decode ExtenderArgs, ExtenderBindingArgs and ExtenderPreemptionArgs into C structs, and encode
 * ExtenderFilterResult, HostPriorityList, ExtenderBindingResult and ExtenderPreemptionResult with
 * the exact upstream key spelling. Request top-level keys are matched case-insensitively (Go's
 * rule). The Pod goes through jansson (small); node lists go through the nodescan tokenizer, and
 * surviving full Node objects are copied back byte for byte. A json_t never leaves this file.
 * Reentrant. */
#ifndef TPX_EXTENDER_CODEC_H
#define TPX_EXTENDER_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "extender/nodescan.h"
#include "extender/state.h"
#include "policy/policy.h"
#include "topology/labels.h"

/* Decoded NodeNames lists kept by their exact bytes (issue 14): the prioritize after a filter,
 * and the filters of the next pods, usually carry the same list, so it is tokenized once and its
 * names resolved once per cluster snapshot (ext_state_resolution). A hit is an exact byte
 * comparison, never a hash alone. At most EXT_CODEC_NAMES_CACHED lists, each of at most
 * EXT_CODEC_NAMES_CACHE_MAX bytes, the least recently used replaced. Thread-safe. */
#define EXT_CODEC_NAMES_CACHED 4
#define EXT_CODEC_NAMES_CACHE_MAX (2U << 20)
struct ext_codec_names_cache;
struct ext_codec_names_entry;
struct ext_codec_names_cache *ext_codec_names_cache_new(struct tpx_err *err);
void ext_codec_names_cache_free(struct ext_codec_names_cache *c); /* accepts NULL */

/* How pods and nodes are read. Borrowed. */
struct ext_codec_opts {
    const struct topo_label_config *labels; /* NULL: topo_label_config_default() */
    enum pol_scope default_scope;           /* when the pod has no topox.io/pipeline-scope */
    size_t max_candidates;                  /* NodeNames or Nodes entries; 0: 100000 */
    /* What the watch knows about DRA (extender/state_feed.c), NULL: nothing. Called with the
     * decoded Pod (a jansson json_t, borrowed for the call): pod_facts before its intent is read
     * (claim demand into f; a resource name it sets goes into res, res_len bytes), pod_workload
     * after (ComputeDomain membership). */
    void (*pod_facts)(void *ctx, const void *pod, struct pol_pod_facts *f, char *res,
                      size_t res_len);
    void (*pod_workload)(void *ctx, const void *pod, struct pol_workload *wl);
    void *pod_ctx;
    struct ext_codec_names_cache *names_cache; /* NULL: every NodeNames list is decoded */
};

/* One decoded pod. Strings are owned (ext_codec_pod_release()). */
struct ext_codec_pod {
    char *name;
    char *ns;
    char *uid;
    struct pol_workload wl;
    bool infer_failed; /* its intent could not be read: msg says why */
    char msg[512];
};

/* ExtenderArgs (filter and prioritize). Owned: ext_codec_args_release(). */
struct ext_codec_args {
    struct ext_codec_pod pod;
    bool full_nodes; /* NCC=false: Nodes.items carried full Node objects */
    char **names;    /* candidate names in request order (both modes) */
    size_t nnames;
    struct ext_nodescan_nodes nodes; /* full mode: the scanned items, parallel to names */
    const char *body;                /* borrowed request body (item spans point into it) */
    size_t nodes_off;                /* where the Nodes value starts in body */
    /* names mode with a names cache: the shared entry names point into (a reference, dropped by
     * ext_codec_args_release()), and its resolution for ext_state_filter_res() and
     * ext_state_score_res() (with the state of opts' server only); NULL otherwise */
    struct ext_codec_names_entry *cached;
    struct ext_state_resolution *resolution;
    const uint32_t *plain;    /* with it: each name's length when it needs no escaping, else
                                 UINT32_MAX */
    const char *cached_bytes; /* with it: the NodeNames list as it came (validated) */
    size_t cached_len;
};

/* Decode a filter/prioritize body. TPX_EPARSE (with the byte offset) for malformed JSON or a
 * missing/non-object Pod; TPX_EINVAL for a NodeNames entry that is not a node name (empty, over
 * 253 bytes, a NUL or control byte); TPX_ETOOBIG for more than o->max_candidates nodes;
 * TPX_ENOMEM. body must outlive *a. */
enum tpx_code ext_codec_decode_args(const char *body, size_t len, const struct ext_codec_opts *o,
                                    struct ext_codec_args *a, struct tpx_err *err);
void ext_codec_args_release(struct ext_codec_args *a);
/* Read one Pod object (a jansson json_t, borrowed) as /filter reads the Pod of a request: its
 * name, namespace, uid and workload (with o's hooks and default scope). An intent that cannot be
 * read is infer_failed, not an error. TPX_EPARSE when pod is not an object; TPX_ENOMEM. Release
 * *out with ext_codec_pod_release(). */
enum tpx_code ext_codec_decode_pod(const void *pod, const struct ext_codec_opts *o,
                                   struct ext_codec_pod *out, struct tpx_err *err);
void ext_codec_pod_release(struct ext_codec_pod *p);

/* Full mode: the scanned nodes as model values (strings borrowed from *a; name from the item).
 * *out is malloc'd (free it); items without a name are skipped. TPX_EINVAL naming the node for a
 * malformed topox.io label. */
enum tpx_code ext_codec_node_infos(const struct ext_codec_args *a, const struct ext_codec_opts *o,
                                   struct topo_node_info **out, size_t *n, struct tpx_err *err);

/* A verdict the filter answer leaves out altogether: the node is neither passed nor listed.
 * kube-scheduler reads a node an extender drops silently as UnschedulableAndUnresolvable
 * (NewDefaultNodeToStatus, pkg/scheduler/framework/types.go), which is what
 * FailedAndUnresolvableNodes says, without the bytes (routes.c, lean_filter). */
#define EXT_VERDICT_OMIT ((enum pol_verdict)(POL_UNRESOLVABLE + 1))

/*
 * ExtenderFilterResult for a->names with a verdict and reason each (verdict NULL: every node
 * passes). Names mode: "NodeNames" (a subset of the input, in input order) and "Nodes":null; full
 * mode: "Nodes":{"metadata":{},"items":[...]} with the original bytes of every passing item and
 * "NodeNames":null. POL_FAIL -> FailedNodes, POL_UNRESOLVABLE -> FailedAndUnresolvableNodes,
 * EXT_VERDICT_OMIT -> nowhere.
 */
enum tpx_code ext_codec_filter_result(const struct ext_codec_args *a,
                                      const enum pol_verdict *verdict, const char *const *reason,
                                      struct tpx_buf *out, struct tpx_err *err);

/*
 * The same answer, written as it is sent (issue 14, and issue 12's budget of 4x the body per
 * request): the bytes equal ext_codec_filter_result()'s, but no answer buffer is ever built, so a
 * 35 MB full-node answer is copied once, from the request body into the socket's buffer, and an
 * answer for 100 000 unknown names costs no memory of its own. *a, verdict and reason are
 * borrowed until ext_codec_filter_stream_free(), which then calls release(release_ctx) (may be
 * NULL) so the caller can free them. NULL with *err when out of memory (release is not called:
 * the caller still owns them). *len: the answer's exact length.
 */
struct ext_codec_filter_stream;
struct ext_codec_filter_stream *
ext_codec_filter_stream_new(const struct ext_codec_args *a, const enum pol_verdict *verdict,
                            const char *const *reason, void (*release)(void *), void *release_ctx,
                            size_t *len, struct tpx_err *err);
/* Up to max bytes of the answer from offset pos (consecutive calls: pos is what was read so
 * far) into buf; returns how many (0 at the end). */
size_t ext_codec_filter_stream_read(struct ext_codec_filter_stream *f, size_t pos, char *buf,
                                    size_t max);
void ext_codec_filter_stream_free(struct ext_codec_filter_stream *f); /* accepts NULL */

/* A filter answer that carries only Error (HTTP 200: the scheduler reads the Error field). */
enum tpx_code ext_codec_filter_error(const char *msg, struct tpx_buf *out, struct tpx_err *err);

/* HostPriorityList: a bare array of {"Host","Score"}. */
enum tpx_code ext_codec_priorities(const char *const *names, const int *scores, size_t n,
                                   struct tpx_buf *out, struct tpx_err *err);
/* The same with each name's unescaped length known (ext_codec_args.plain; NULL: measured). */
enum tpx_code ext_codec_priorities_plain(const char *const *names, const uint32_t *plains,
                                         const int *scores, size_t n, struct tpx_buf *out,
                                         struct tpx_err *err);

/*
 * The same HostPriorityList for a->names and scores[0, a->nnames), written as it is sent (issue
 * 14): the bytes equal ext_codec_priorities_plain()'s, but each name's `{"Host":"NAME","Score":`
 * comes from a template made once per cached NodeNames list (per call otherwise), so the answer
 * costs a memcpy and the digits per name, and no answer buffer. *a and scores are borrowed until
 * ext_codec_priorities_stream_free(), which then calls release(release_ctx) (may be NULL). NULL
 * with *err when out of memory, or TPX_ETOOBIG when the answer is over cap bytes (release is not
 * called either way). *len: the answer's exact length.
 */
struct ext_codec_prio_stream;
struct ext_codec_prio_stream *ext_codec_priorities_stream_new(const struct ext_codec_args *a,
                                                              const int *scores, size_t cap,
                                                              void (*release)(void *),
                                                              void *release_ctx, size_t *len,
                                                              struct tpx_err *err);
/* Up to max bytes of the answer from offset pos (consecutive calls) into buf; 0 at the end. */
size_t ext_codec_priorities_stream_read(struct ext_codec_prio_stream *f, size_t pos, char *buf,
                                        size_t max);
void ext_codec_priorities_stream_free(struct ext_codec_prio_stream *f); /* accepts NULL */

/* ExtenderBindingArgs. Strings owned: ext_codec_bind_args_release(). TPX_EPARSE when malformed or
 * when PodUID or Node is missing. */
struct ext_codec_bind_args {
    char *pod_name;
    char *pod_ns;
    char *pod_uid;
    char *node;
};
enum tpx_code ext_codec_decode_bind(const char *body, size_t len, struct ext_codec_bind_args *b,
                                    struct tpx_err *err);
void ext_codec_bind_args_release(struct ext_codec_bind_args *b);

/* ExtenderBindingResult: {"Error":msg} ("" for success). */
enum tpx_code ext_codec_bind_result(const char *msg, struct tpx_buf *out, struct tpx_err *err);

/* ExtenderPreemptionArgs (issue 21, item 1: no jansson tree of the victims). The Pod is decoded
 * as for a filter; the victims map is read by ext_nodescan_victims(), so a victim costs 8 bytes
 * and a node 24 (plus its name, decoded once), against at least 11 and 25 bytes of body. Only
 * nodes with at least one victim are kept (only they can be in the answer); a node listed twice
 * keeps its last entry (Go's map decoding). At most o->max_candidates nodes (and never more
 * than EXT_CODEC_MAX_PREEMPT_NODES) and EXT_CODEC_MAX_VICTIMS victims: TPX_ETOOBIG. The body must
 * outlive *p. Owned: ext_codec_preempt_args_release(). */
#define EXT_CODEC_MAX_VICTIMS 1000000
/* kube-scheduler offers an extender the victims of its preemption candidates, at most
 * max(minCandidateNodesAbsolute 100, minCandidateNodesPercentage 10% of the nodes), all nodes at
 * 100%: 5,000 in the largest cluster Kubernetes supports. Twice that. A node with one victim costs
 * about 4x its bytes (its record, name, verdict and answer line), so the cap keeps that at about
 * 1 MiB in all. */
#define EXT_CODEC_MAX_PREEMPT_NODES 10000
struct ext_codec_preempt_args {
    struct ext_codec_pod pod;
    size_t n;           /* nodes with victims */
    const char **names; /* their names, decoded (one block with the characters) */
    /* private: where each node's victims are */
    const char *map; /* the victims map's bytes in the body */
    struct ext_nodescan_victims sv;
    uint32_t *idx; /* names[i] is sv.nodes[idx[i]] */
};
enum tpx_code ext_codec_decode_preempt(const char *body, size_t len, const struct ext_codec_opts *o,
                                       struct ext_codec_preempt_args *p, struct tpx_err *err);
void ext_codec_preempt_args_release(struct ext_codec_preempt_args *p);

/* ExtenderPreemptionResult: {"NodeNameToMetaVictims":{...}} with the nodes where keep[i] is true
 * (keep NULL: all), each with its victims' UIDs and NumPDBViolations. */
enum tpx_code ext_codec_preempt_result(const struct ext_codec_preempt_args *p, const bool *keep,
                                       struct tpx_buf *out, struct tpx_err *err);

/* /debug/state: nodes, racks with free capacity, domains count, groups and reservations. */
enum tpx_code ext_codec_debug_state(const struct pol_ledger *l, size_t pods_seen,
                                    struct tpx_buf *out, struct tpx_err *err);

#endif
