/* SPDX-License-Identifier: Apache-2.0 */
/* cli/plan_live.h - what `topox plan` reads from the live cluster: Nodes, bound Pods,
 * ResourceSlices, ResourceClaims, DeviceClasses and PodGroups, LISTed page by page through kube/
 * (as serve lists), gathered into one snapshot List that plan then reads as it reads
 * --snapshot FILE. Only GETs: nothing is ever written. */
#ifndef TPX_CLI_PLAN_LIVE_H
#define TPX_CLI_PLAN_LIVE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/err.h"

struct cmd_plan_live_opts {
    const char *kubeconfig; /* --kubeconfig, or NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    const char *context;    /* --context, or NULL: the kubeconfig's current-context */
    bool insecure;          /* --insecure: allow a plain http:// API server */
    bool pending;           /* --pending: also LIST the pending pods (cmd_plan_live.pending) */
    const char *pending_ns; /* of this namespace only (NULL: every namespace) */
    const char *selector;   /* -l: with these labels only (a label selector; NULL: any) */
};

/* What was read. Free with cmd_plan_live_release(). */
struct cmd_plan_live {
    json_t *list;    /* {"kind":"List","items":[...]}: every object with its kind and apiVersion */
    char *server;    /* the API server's URL */
    char *namespace; /* the context's namespace, or NULL */
    json_t *pending; /* --pending: the pending Pods not yet bound, each with kind and apiVersion,
                        as listed; else NULL */
};

/* LIST every kind; objects of kinds the server does not serve (404: no resource.k8s.io/v1, no
 * Workload API) are left out, with a note through note(ctx, line). Errors are one line naming the
 * server: TPX_ENOENT no kubeconfig, TPX_EIO/TPX_ETIMEOUT unreachable, TPX_EAPI 401/403 (naming
 * the verb and the resource the user lacks, and the ClusterRole that grants it) or another
 * status. */
enum tpx_code cmd_plan_live_read(const struct cmd_plan_live_opts *o, struct cmd_plan_live *out,
                                 void (*note)(void *ctx, const char *line), void *ctx,
                                 struct tpx_err *err);

void cmd_plan_live_release(struct cmd_plan_live *p); /* safe twice */

#endif
