/* SPDX-License-Identifier: Apache-2.0 */
/* cli/plan_render.h - a finished plan as text for people (table + rack picture), as data
 * (JSON/YAML: placements, rejected, estimates; or one diagnosis record per replica) and as an SVG
 * picture of the racks. Reads only: never changes the plan, ledger or cluster. */
#ifndef TPX_CLI_PLAN_RENDER_H
#define TPX_CLI_PLAN_RENDER_H

#include <jansson.h>
#include <stdbool.h>

#include "common/buf.h"
#include "common/err.h"
#include "objects/manifest.h"
#include "policy/policy.h"
#include "topology/model.h"

/* Everything a rendering needs; all borrowed. */
struct cmd_plan_view {
    const struct topo_cluster *cluster;
    const struct pol_ledger *ledger;     /* after pol_plan(): free capacity per node */
    const struct obj_manifest *manifest; /* jobs, replicas, pod facts */
    const struct pol_plan_result *plan;
};

/* The symbol of global replica r in the picture: 0-9, a-z, A-Z, then '*' beyond 62. */
char cmd_plan_symbol(size_t r);

/* Table of placements, the rack picture with its legend, estimates and rejections. Appends to out.
 * TPX_ETOOBIG past out's cap, TPX_ENOMEM. */
enum tpx_code cmd_plan_render_table(const struct cmd_plan_view *v, struct tpx_buf *out,
                                    struct tpx_err *err);

/* The plan as data: {summary, placements[], rejected[], estimates[], notes[]}; with record, a JSON
 * array of diagnosis records (model, hardware, parallelism, workload, utilization, status), one per
 * replica. New reference in *out. TPX_ENOMEM. */
enum tpx_code cmd_plan_to_json(const struct cmd_plan_view *v, bool record, json_t **out,
                               struct tpx_err *err);

/* `topox plan -o json --record` in-process, for `topox diagnose -f`: the job manifests on the
 * Node files or the synthetic cluster (one of them), planned by the same code as `topox plan`
 * (cmd_plan.c). Returns a CMD_* status (2 bad input, 1 failure) with err filled; *out is a new
 * reference on CMD_OK (NULL when nothing was planned). */
int cmd_plan_records(const char *const *files, size_t nfiles, const char *const *nodes,
                     size_t nnodes, const char *cluster, json_t **out, struct tpx_err *err);

/* The rack picture as a standalone SVG document (a rack per column, nodes as rows of accelerator
 * squares coloured by replica, a legend). Appends to out. */
enum tpx_code cmd_plan_render_svg(const struct cmd_plan_view *v, struct tpx_buf *out,
                                  struct tpx_err *err);

#endif
