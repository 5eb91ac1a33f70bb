/* SPDX-License-Identifier: Apache-2.0 */
/* extender/routes.h - what each URL of `topox serve` does: POST /filter, /prioritize, /bind,
 * /preempt (also under a prefix such as /v1/filter), GET /healthz, /readyz, /metrics, /version,
 * /debug/state; 404 for other paths, 405 for a wrong method. Decodes with codec.c, decides with
 * state.c and policy, answers per extender-protocol.md section 2 (filter and bind failures travel
 * in the Error field with HTTP 200; prioritize and preempt failures are non-200), counts metrics
 * and logs one line per decision. In bind mode api, bind records the placement, POSTs the Binding
 * through binder.c and takes the placement back when that fails; a placed pod gets a Normal Event
 * and a pod whose group fits nowhere a (deduplicated) Warning. No MHD here: http.c calls
 * ext_routes_handle() (and ext_routes_handle_admin() on the admin listener). */
#ifndef TPX_EXTENDER_ROUTES_H
#define TPX_EXTENDER_ROUTES_H

#include "extender/binder.h"
#include "extender/codec.h"
#include "extender/cpumembers.h"
#include "extender/config.h"
#include "extender/http.h"
#include "extender/metrics.h"
#include "extender/held.h"
#include "extender/nominate.h"
#include "extender/state.h"

/* Everything a handler needs. Borrowed: the caller keeps these alive while the server runs. */
struct ext_routes {
    struct ext_state *state;
    struct ext_metrics *metrics;
    struct ext_codec_opts opts;
    enum ext_bind_mode bind_mode;
    size_t max_response;             /* cap on a response body */
    const char *scheduler_name;      /* the schedulerName served (for messages; borrowed) */
    struct ext_binder *binder;       /* the API server: Bindings (bind mode api) and Events; NULL:
                                      * none (api mode then answers bind with an Error) */
    struct ext_nominator *nominator; /* --nominate: told of each hold a bind or a gang's filter
                                      * makes; NULL: none */
    struct ext_cpu_members *cpu_members; /* the groups' members without accelerators
                                          * (cpumembers.h); NULL: none remembered */
    enum pol_uncertain uncertain;        /* what a layout topox cannot read for certain gets */
    bool admin_elsewhere;  /* --admin-listen: /metrics and /debug/state are 404 here */
    bool lean_filter;      /* --lean-filter: unresolvable nodes left out of a filter
                            * answer that passes any node */
    struct ext_held *held; /* --one-held-node (with lean_filter): a held member's
                            * answer is its one held node; NULL: off */
};

/* The ext_http_handler_fn for http.c; ctx is a struct ext_routes. Thread-safe. */
void ext_routes_handle(void *ctx, const struct ext_http_req *rq, struct ext_http_resp *rp);

/* The handler of the admin listener (--admin-listen): GET /metrics, /debug/state, /healthz,
 * /readyz and /version only; the extender verbs and every other path are 404 there, so nothing
 * on it changes state. ctx is the same struct ext_routes. Thread-safe. */
void ext_routes_handle_admin(void *ctx, const struct ext_http_req *rq, struct ext_http_resp *rp);

#endif
