/* SPDX-License-Identifier: Apache-2.0 */
/* objects/dra.h - GPUs that Dynamic Resource Allocation hands out (resource.k8s.io v1, v1beta1,
 * v1beta2): ResourceSlices give each node its accelerator devices, allocated ResourceClaims take
 * some of them, DeviceClasses say which devices are accelerators, ResourceClaimTemplates and claims
 * give a pod's demand, and NVIDIA ComputeDomains (resource.nvidia.com) make their claimants one
 * group that must share one multi-node NVLink domain. Pure parsing into plain records; the rules
 * are in docs/dra.md. Reentrant: no globals. */
#ifndef TPX_OBJECTS_DRA_H
#define TPX_OBJECTS_DRA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/map.h"
#include "policy/policy.h"

struct obj_manifest;

/* One device of a ResourceSlice. Strings are owned by the struct obj_dra. */
struct obj_dra_device {
    char *node;      /* spec.nodeName; NULL for a pool that is not node-local */
    char *driver;    /* spec.driver */
    char *pool;      /* spec.pool.name */
    char *name;      /* devices[].name */
    char *pcie_root; /* attribute resource.kubernetes.io/pcieRoot, NULL when absent */
    long numa;       /* attribute resource.kubernetes.io/numaNode or numaNode; -1 when absent */
    bool accel;      /* counted as an accelerator (docs/dra.md: the rule) */
    bool taken;      /* named by an allocated claim's status.allocation.devices.results */
};

struct obj_dra_class {
    char *name;
    char *driver;       /* the driver its CEL selectors name ("device.driver == '...'"), or NULL */
    char *ext_resource; /* spec.extendedResourceName (KEP-5004), or NULL */
    bool accel;
};

/* A ComputeDomain: its claimants are the pods whose resourceClaims name channel_template. */
struct obj_dra_domain {
    char *ns;
    char *name;
    char *channel_template; /* spec.channel.resourceClaimTemplate.name */
    unsigned num_nodes;     /* spec.numNodes; 0 when not set */
};

/*
 * What a snapshot and job manifests say about DRA. Caller-allocated: obj_dra_init(), then
 * obj_dra_add_docs() any number of times, then obj_dra_finish() once; free with
 * obj_dra_release(). Claims and templates are kept as new references to their JSON objects.
 */
struct obj_dra {
    struct obj_dra_device *dev;
    size_t ndev, adev;
    struct obj_dra_class *cls;
    size_t ncls, acls;
    struct obj_dra_domain *cd;
    size_t ncd, acd;
    json_t *claims;    /* array of ResourceClaim objects */
    json_t *templates; /* array of ResourceClaimTemplate objects */
    bool finished;     /* devices sorted and marked since the last slice came in */
    /* "ns/name" -> claim, built by obj_dra_finish() (stale: claims are scanned) */
    struct tpx_map claim_ix;
    char **claim_keys;
    size_t nclaim_keys;
    bool claim_ix_stale;
};

/* Most devices one snapshot may list; more is TPX_ETOOBIG. */
#define OBJ_DRA_MAX_DEVICES 1000000u

void obj_dra_init(struct obj_dra *d);

/* Take every DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate and ComputeDomain
 * in docs (Lists are opened); other kinds are left alone. TPX_EINVAL naming the object for a
 * slice without a driver or a device without a name; TPX_ETOOBIG; TPX_ENOMEM. */
enum tpx_code obj_dra_add_docs(struct obj_dra *d, json_t *const *docs, size_t ndocs,
                               struct tpx_err *err);

/* Mark the devices allocated claims hold and sort the devices by node (the getters below need
 * it; a slice added later needs another finish). O(n log n). Cannot fail. */
void obj_dra_finish(struct obj_dra *d);

/* obj_dra_finish(), except that the claims for which skip(ctx, claim) is true take no device
 * (serve: a bound pod counts those itself). Taken marks of an earlier finish are reset. */
void obj_dra_finish_skip(struct obj_dra *d, bool (*skip)(void *ctx, const json_t *claim),
                         void *ctx);

/* True for the objects obj_dra_add_docs() takes, by API group and kind (so other loaders can skip
 * them quietly). */
bool obj_dra_is_object(const json_t *obj);

/* Accelerator devices on node: all of them (*total) and those allocated claims hold (*taken).
 * After obj_dra_finish(); O(log n). */
void obj_dra_node_count(const struct obj_dra *d, const char *node, unsigned *total,
                        unsigned *taken);

/* The resource name DRA accelerators go by on nodes: the extendedResourceName of the first
 * accelerator DeviceClass, else "nvidia.com/gpu". Borrowed until release. */
const char *obj_dra_resource(const struct obj_dra *d);

/* Whether the claim ns/name is in the snapshot and allocated. */
bool obj_dra_claim_allocated(const struct obj_dra *d, const char *ns, const char *name);

/*
 * Accelerators a pod or pod template asks for through its claims: for each spec.resourceClaims
 * entry, the requests of the named ResourceClaim or ResourceClaimTemplate (in ns; a NULL ns or an
 * object without one matches any) whose class is an accelerator class: exactly.count (v1) or count
 * (v1beta1), 1 by default; allocationMode All counts the class's devices on no node, so it is
 * refused. *domain (may be NULL) receives the ComputeDomain whose channel template the pod claims,
 * or NULL. TPX_ENOENT naming the claim for a claim or template that is not found; TPX_EINVAL
 * for allocationMode All.
 */
enum tpx_code obj_dra_pod_demand(const struct obj_dra *d, const json_t *pod, const char *ns,
                                 unsigned *accel, const struct obj_dra_domain **domain,
                                 struct tpx_err *err);

/* obj_dra_pod_demand(), and a template whose claim the controller made (the pod's
 * status.resourceClaimStatuses names it) is read from that claim when the template itself is not
 * known. owned(ctx, claim) (owned may be NULL) receives each claim whose requests added
 * accelerators. */
enum tpx_code obj_dra_pod_demand_owned(const struct obj_dra *d, const json_t *pod, const char *ns,
                                       unsigned *accel, const struct obj_dra_domain **domain,
                                       void (*owned)(void *ctx, const json_t *claim), void *ctx,
                                       struct tpx_err *err);

/*
 * Add what one pod or template asks for through DRA to its facts f (f->ns, f->accel and
 * f->resource as obj_pod_facts_from_json() set them): its claims' demand; when it asks for
 * nothing, the extended resource an accelerator DeviceClass maps; the resource is then
 * obj_dra_resource() (borrowed from d). owned (may be NULL) receives the claims whose devices
 * the pod's count covers (those of obj_dra_pod_demand_owned(), and the claim of
 * status.extendedResourceClaimStatus when the pod counts accelerators). TPX_ENOENT (with the
 * message, f still completed without that claim's part) for a claim or template that is not
 * known; other errors as obj_dra_pod_demand().
 */
enum tpx_code obj_dra_facts_demand(const struct obj_dra *d, const json_t *pod,
                                   struct pol_pod_facts *f,
                                   void (*owned)(void *ctx, const json_t *claim), void *ctx,
                                   struct tpx_err *err);

/* Accelerators a pod asks for through an extended resource that an accelerator DeviceClass maps
 * (spec.extendedResourceName, KEP-5004), counted as obj_pod_accel() counts resources; *resource
 * receives that name (borrowed) or NULL. TPX_EINVAL for a bad quantity. */
enum tpx_code obj_dra_extended_demand(const struct obj_dra *d, const json_t *pod, unsigned *accel,
                                      const char **resource, struct tpx_err *err);

/* Add each manifest template's claim demand to its facts (before obj_manifest_finish()), with
 * obj_dra_resource() as the resource when the template names none. Errors as
 * obj_dra_pod_demand(), prefixed with the template's pod name, except that a claim or template
 * that is not found is a note (note may be NULL) and counts nothing. A template that asks for no
 * accelerator the default resources know and claims none takes obj_dra_extended_demand(). */
enum tpx_code obj_dra_manifest_demand(const struct obj_dra *d, struct obj_manifest *m,
                                      void (*note)(void *ctx, const char *line), void *ctx,
                                      struct tpx_err *err);

/*
 * After obj_manifest_finish(): make every replica (group) with a claimant of a ComputeDomain join
 * the domain whole: one group that must share one multi-node interconnect domain (its
 * tensor-parallel size is the whole domain: every accelerator of every claimant), like an LWS
 * group, in the order the manifest lists them; a prefill group and a decode group sharing one
 * domain land in one clique. note(ctx, line) receives a line when numNodes differs from the
 * claimants and when several groups share a domain. Cannot fail (TPX_OK).
 */
enum tpx_code obj_dra_manifest_domains(const struct obj_dra *d, struct obj_manifest *m,
                                       void (*note)(void *ctx, const char *line), void *ctx,
                                       struct tpx_err *err);

/* Make wl a member of ComputeDomain cd's group: n pods with accel accelerators in all (0: n),
 * one tensor-parallel group that must share one multi-node interconnect domain, pp 1, dp 1, this
 * pod at index (-1: any free slot). The layout is certain (a known size and one clique are the
 * domain's own word), so a group no clique can hold is rejected, not merely scored. The one rule
 * that plan (obj_dra_manifest_domains()) and serve use. Cannot fail. */
void obj_dra_domain_member(const struct obj_dra_domain *cd, unsigned n, unsigned accel, int index,
                           struct pol_workload *wl);

/* The ComputeDomain whose channel template pod (or template) claims in ns (NULL: any), or NULL. */
const struct obj_dra_domain *obj_dra_pod_domain(const struct obj_dra *d, const json_t *pod,
                                                const char *ns);

/* A reason the policy gave for a ComputeDomain member wl (obj_dra_domain_member()), said in the
 * domain's words into out (len bytes): true when reworded; false (out untouched) for another
 * workload or a reason that is not about the largest interconnect domain. */
bool obj_dra_domain_reason(const struct pol_workload *wl, const char *reason, char *out,
                           size_t len);

/* After pol_plan(): say a rejected ComputeDomain group's shortfall in its own words (the policy
 * speaks of a tensor-parallel size and suggests pipeline stages, which a ComputeDomain cannot
 * take). Cannot fail. */
void obj_dra_reword_rejects(const struct obj_manifest *m, struct pol_plan_result *res);

void obj_dra_release(struct obj_dra *d); /* safe twice */

#endif
