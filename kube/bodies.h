/* SPDX-License-Identifier: Apache-2.0 */
/* kube/bodies.h - the requests with a body that topox sends through a kube/client: the pod
 * Binding (extender-protocol.md 5.1), the node merge PATCH of `topox label`, and core/v1 Events. */
#ifndef TPX_KUBE_BODIES_H
#define TPX_KUBE_BODIES_H

#include <stddef.h>
#include <time.h>

#include "common/err.h"
#include "kube/client.h"

/* One annotation for a Binding. Strings borrowed for the call. */
struct kube_kv {
    const char *key;
    const char *value;
};

/* POST /api/v1/namespaces/NS/pods/NAME/binding with the exact Binding of extender-protocol.md
 * 5.1: metadata {name, namespace, uid (precondition, omitted when NULL or ""), annotations},
 * target {apiVersion v1, kind Node, name node}. Any 2xx is success. 409, 404 and 403 become
 * clear TPX_EAPI messages ("pod 'ns/name' is already bound or was re-created (409 Conflict)...").
 */
enum tpx_code kube_bind(struct kube_client *k, const char *ns, const char *name, const char *uid,
                        const char *node, const struct kube_kv *annotations, size_t nann,
                        struct tpx_err *err);

/* PATCH /api/v1/nodes/NODE with Content-Type application/merge-patch+json; patch_json is the
 * patch text as the caller built it (e.g. {"metadata":{"labels":{...},"annotations":{...}}}). */
enum tpx_code kube_patch_node(struct kube_client *k, const char *node, const char *patch_json,
                              struct tpx_err *err);

/* PATCH /api/v1/namespaces/NS/pods/NAME/status (merge patch) with
 * {"status":{"nominatedNodeName":NODE}}, or null for NODE NULL or "" (the nomination is cleared).
 * kube-scheduler tries a pod's nominated node first and alone (pkg/scheduler/schedule_one.go,
 * evaluateNominatedNode). TPX_EAPI with err->http_status for 404, 409, 403... */
enum tpx_code kube_nominate(struct kube_client *k, const char *ns, const char *name,
                            const char *node, struct tpx_err *err);
/* The body kube_nominate() sends (malloc'd; free it), for tests. NULL when out of memory. */
char *kube_nominate_body(const char *node);

/* A core/v1 Event about a pod. Strings borrowed for the call; the caller deduplicates. */
struct kube_event {
    const char *ns;        /* the pod's namespace (where the event is created) */
    const char *pod;       /* involvedObject name */
    const char *pod_uid;   /* may be NULL */
    const char *type;      /* "Normal" or "Warning" */
    const char *reason;    /* CamelCase, e.g. "Placed", "GroupRejected" */
    const char *message;   /* e.g. "placed replica vllm/0 stage 1 in rack r3, domain n12" */
    const char *component; /* source.component and reportingComponent; NULL: "topox" */
    const char *name;      /* metadata.name, fixed for the event's life so a retry whose first
                            * try's answer was lost gets 409 instead of making a second Event
                            * (client-go's recorder does the same); NULL: generateName "POD." */
    time_t at;             /* when it happened (first and last timestamps); 0: now */
};

/* POST /api/v1/namespaces/NS/events with a new Event (count 1). A named event that already exists
 * (409 AlreadyExists: an earlier try went through) is success. */
enum tpx_code kube_event(struct kube_client *k, const struct kube_event *ev, struct tpx_err *err);

/* Build the Binding body kube_bind() sends (malloc'd JSON text; free it), for tests and
 * logs. NULL when out of memory. */
char *kube_binding_body(const char *ns, const char *name, const char *uid, const char *node,
                        const struct kube_kv *annotations, size_t nann);

#endif
