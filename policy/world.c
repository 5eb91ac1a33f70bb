/* SPDX-License-Identifier: Apache-2.0 */
/* policy/world.c - which pods are one communication world, one group (docs/workloads.md, "One
 * communication world, one group"), read from what their controllers, engines and gang objects
 * wrote on them, in one order for serve and plan; and other schedulers' topology intent, read as
 * topox intent and never contradicted. pol_workload_infer() (policy/workload.c) calls it; a new
 * world signal goes here (docs/ARCHITECTURE.md). Pure string code on plain structs. */
#include "policy/world.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/kv.h"
#include "topology/labels.h"
#include "workload/engines.h"

#define ANN "topox.io/"
#define LWS "leaderworkerset.sigs.k8s.io/"
#define JOBSET "jobset.sigs.k8s.io/"
#define RBG2 "rbg.workloads.x-k8s.io/" /* RoleBasedGroup v1alpha2 */

__attribute__((format(printf, 2, 3))) static void set_str(char *dst, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(dst, POL_KEY_MAX, fmt, ap);
    va_end(ap);
}

/*
 * Other schedulers' topology intent (docs/workloads.md), read as topox intent and never
 * contradicted, since that scheduler (Kueue's TAS, KAI) decides where the pods go and topox must
 * not refuse what it decides:
 *   required  kueue.x-k8s.io/podset-required-topology, kai.scheduler/topology-required-placement
 *             (KAI's annotations on the object, which plan hands its pods): the label key's
 *             level is the group's scope, wider or narrower than topox's own (rack); a key at a
 *             node or NVLink domain keeps topox's rack, which holds it; a key topox does not read
 *             makes the group preferred, as nothing topox checks could agree with it
 *   preferred kueue.x-k8s.io/podset-preferred-topology, -unconstrained-topology, slice
 *             constraints, kai.scheduler/topology-preferred-placement: the group is preferred
 *             (scored, never refused)
 * Sets wl->sched_scoped and sched_scope and, for a preference, *prefer with what said it in
 * *what.
 */
void pol_world_schedulers(const struct pol_pod_facts *f, struct pol_workload *wl, bool *prefer,
                          const char **what)
{
    static const char *const required[] = {"kueue.x-k8s.io/podset-required-topology",
                                           "kai.scheduler/topology-required-placement"};
    static const char *const preferred[] = {"kueue.x-k8s.io/podset-preferred-topology",
                                            "kueue.x-k8s.io/podset-unconstrained-topology",
                                            "kueue.x-k8s.io/podset-slice-required-topology",
                                            "kai.scheduler/topology-preferred-placement"};
    static const int scope_of_level[TOPO_LEVEL_COUNT] = {-1, POL_SCOPE_RACK, POL_SCOPE_BLOCK,
                                                         POL_SCOPE_ZONE};
    const struct topo_label_config *cfg = topo_label_config_default();

    *prefer = false;
    *what = NULL;
    for (size_t i = 0; i < sizeof(preferred) / sizeof(preferred[0]) && !*prefer; i++) {
        if (tpx_kv_get(f->annotations, f->nannotations, preferred[i])) {
            *prefer = true;
            *what = preferred[i];
        }
    }
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        const char *key = tpx_kv_get(f->annotations, f->nannotations, required[i]);
        int level = -2;

        if (!key)
            continue;
        if (strcmp(key, "kubernetes.io/hostname") == 0)
            level = -1;
        for (int lv = 0; lv < TOPO_LEVEL_COUNT && level == -2; lv++) {
            for (size_t k = 0; k < cfg->nkeys[lv]; k++) {
                if (strcmp(cfg->keys[lv][k], key) == 0)
                    level = scope_of_level[lv];
            }
        }
        if (level == -2) {
            *prefer = true; /* a key topox does not read: it cannot agree with it */
            *what = required[i];
        } else if (level >= 0 && (!wl->sched_scoped || level > (int)wl->sched_scope)) {
            wl->sched_scoped = true;
            wl->sched_scope = (enum pol_scope)level;
        }
    }
}

/* The last literal value of env var name in f's env, as a count; false when absent or not one. */
bool pol_world_env_count(const struct pol_pod_facts *f, const char *name, unsigned *out)
{
    for (size_t i = f->nenv; i-- > 0;) {
        if (f->env[i].name && strcmp(f->env[i].name, name) == 0)
            return f->env[i].value && wl_parse_count(f->env[i].value, true, out);
    }
    return false;
}

/*
 * One communication world read from what the pod's controller and engine wrote, where no group
 * label above named it (docs/workloads.md, "One communication world, one group"):
 *   a StatefulSet whose pods are the engine's nodes: the pod's apps.kubernetes.io/pod-index and
 *     statefulset.kubernetes.io/pod-name labels, and --nnodes N (SGLang, vLLM, torchrun): the
 *     set's pods [k*N, (k+1)*N) are world k, the pod's index inside it pod-index mod N;
 *   a Kubeflow training-operator job: its training.kubeflow.org/job-name label, with the
 *     WORLD_SIZE and RANK the operator writes into every pod's env.
 * A world whose size nothing says is not made a group (its pods stand alone, as before): a group
 * of unknown size could hold too few slots for its members.
 */
bool pol_world_signals(const struct pol_pod_facts *f, unsigned nnodes, struct pol_workload *wl,
                       unsigned *size, int *index)
{
    const char *ns = f->ns ? f->ns : "default";
    const char *idx = tpx_kv_get(f->labels, f->nlabels, "apps.kubernetes.io/pod-index");
    const char *pod = tpx_kv_get(f->labels, f->nlabels, "statefulset.kubernetes.io/pod-name");
    const char *job = tpx_kv_get(f->labels, f->nlabels, "training.kubeflow.org/job-name");
    unsigned i, n, rank, per = 0;

    if (idx && pod && nnodes > 1 && wl_parse_count(idx, true, &i)) {
        size_t len = strlen(pod), dl = strlen(idx);
        if (len > dl + 1 && strcmp(pod + len - dl, idx) == 0 && pod[len - dl - 1] == '-') {
            int set = (int)(len - dl - 1);
            set_str(wl->group, "%s/sts:%.*s/%u", ns, set, pod, i / nnodes);
            set_str(wl->display, "%s/%.*s world %u", ns, set, pod, i / nnodes);
            *size = nnodes;
            *index = (int)(i % nnodes);
            return true;
        }
    }
    /* the pods of the world: PET_NNODES where the operator writes it (torchrun's --nnodes); else
     * WORLD_SIZE, which counts processes (pods x nprocPerNode) where PET_NPROC_PER_NODE says
     * there are several a pod (training-operator pkg/controller.v1/pytorch envvar.go), pods in
     * the operator's older form */
    if (job && job[0] &&
        (pol_world_env_count(f, "PET_NNODES", &n) ||
         (pol_world_env_count(f, "WORLD_SIZE", &n) &&
          (!pol_world_env_count(f, "PET_NPROC_PER_NODE", &per) || per == 0 ||
           (n % per == 0 && (n /= per, true))))) &&
        n > 0) {
        set_str(wl->group, "%s/kubeflow:%s", ns, job);
        set_str(wl->display, "%s/%s", ns, job);
        *size = n;
        *index = (pol_world_env_count(f, "PET_NODE_RANK", &rank) ||
                  (!pol_world_env_count(f, "PET_NPROC_PER_NODE", &per) &&
                   pol_world_env_count(f, "RANK", &rank))) &&
                         rank < n
                     ? (int)rank
                     : -1;
        return true;
    }
    return false;
}

/* The pod's group from its annotation, its PodGroup or its controller's labels; *by_rbg when a
 * RoleBasedGroup v1alpha2 leaderWorkerPattern instance named it (its component-size and
 * component-index are then the group's size and the pod's index). A scheduling.k8s.io PodGroup
 * whose gang minCount is known is the group kube-scheduler gangs (KEP-4671), so it comes before
 * the controllers' labels (a JobSet's pods may name one); wl->gang says the pod is in such a gang,
 * also when a topox.io/group annotation names its group (the scheduler's cycle is the same). */
void pol_world_group(const struct pol_pod_facts *f, struct pol_workload *wl, bool *grouped,
                     bool *by_rbg)
{
    const char *ns = f->ns ? f->ns : "default";
    const char *pod = f->name ? f->name : "pod";
    const char *v;
    const char *lws_name = tpx_kv_get(f->labels, f->nlabels, LWS "name");
    const char *lws_gi = tpx_kv_get(f->labels, f->nlabels, LWS "group-index");

    *grouped = true;
    *by_rbg = false;
    wl->gang = f->pod_group && f->pod_group[0] && f->pod_group_min > 0;
    v = tpx_kv_get(f->annotations, f->nannotations, ANN "group");
    if (v && v[0]) {
        set_str(wl->group, "%s/%s", ns, v);
        set_str(wl->display, "%s/%s", ns, v);
        return;
    }
    if (wl->gang) {
        set_str(wl->group, "%s/podgroup:%s", ns, f->pod_group);
        set_str(wl->display, "%s/%s (PodGroup)", ns, f->pod_group);
        return;
    }
    v = tpx_kv_get(f->labels, f->nlabels, LWS "group-key");
    if ((v && v[0]) || (lws_name && lws_gi)) {
        if (v && v[0])
            set_str(wl->group, "%s/lws:%s", ns, v);
        else
            set_str(wl->group, "%s/lws:%s/%s", ns, lws_name, lws_gi);
        if (lws_name && lws_gi)
            set_str(wl->display, "%s/%s group %s", ns, lws_name, lws_gi);
        else
            set_str(wl->display, "%s/%s group %.8s", ns, lws_name ? lws_name : "lws", v);
        return;
    }
    v = tpx_kv_get(f->labels, f->nlabels, JOBSET "job-key");
    if (v && v[0]) {
        const char *js = tpx_kv_get(f->labels, f->nlabels, JOBSET "jobset-name");
        const char *ji = tpx_kv_get(f->labels, f->nlabels, JOBSET "job-index");
        set_str(wl->group, "%s/jobset:%s", ns, v);
        if (js && ji)
            set_str(wl->display, "%s/%s job %s", ns, js, ji);
        else
            set_str(wl->display, "%s/jobset job %.8s", ns, v);
        return;
    }
    /* RoleBasedGroup v1alpha2 leaderWorkerPattern: one RoleInstance of component-size pods
     * (api/workloads/constants/label.go). A v1alpha1 leader-worker role, or a v1alpha2 one still
     * run by a LeaderWorkerSet, has the LWS labels and is read above. A standalone instance, or a
     * customComponentsPattern one (its components share the instance name, and each one's
     * component-size counts that component only), is not known to be one group: each pod is its
     * own (wl_rbg_lwp_pod). */
    v = tpx_kv_get(f->labels, f->nlabels, RBG2 "role-instance-name");
    if (wl_rbg_lwp_pod(f)) {
        set_str(wl->group, "%s/rbg:%s", ns, v);
        set_str(wl->display, "%s/%s", ns, v);
        *by_rbg = true;
        return;
    }
    *grouped = false;
    wl->gang = false;
    wl->group[0] = '\0';
    set_str(wl->display, "%s/%s", ns, pod);
}
