/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_training.c - the training operators' kinds as the pods they create (PyTorchJob,
 * MPIJob, TrainJob) and the Workload API's PodGroups. docs/workloads.md "Kinds read" names the
 * version and source of each. */
#include "objects/manifest_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects/podfacts.h"
#include "objects/yamljson.h"
#include "topology/labels.h"

/* The pod template and replicas of replica spec `type` (Master, Worker, Launcher) of a Kubeflow
 * job; false when absent. */
static bool replica_spec(const json_t *specs, const char *type, const json_t **rs)
{
    *rs = json_object_get(specs, type);
    return json_is_object(*rs);
}

/* Kubeflow's labels on every pod (kubeflow/common for training-operator; mpi-operator's
 * defaultLabels): job-name and operator-name, replica-type (training-operator only),
 * replica-index (not on an MPI launcher), job-role (a PyTorchJob's master-0, every MPI pod). */
static void kubeflow_labels(struct obj_manifest_pod *p, const char *job, bool mpi,
                            const char *rtype, unsigned long index, bool role_label)
{
    obj_mf_extra(p, false, "training.kubeflow.org/job-name", "%.70s", job);
    obj_mf_extra(p, false, "training.kubeflow.org/operator-name", "%s",
                 mpi ? "mpi-operator" : "pytorchjob-controller");
    if (!mpi)
        obj_mf_extra(p, false, "training.kubeflow.org/replica-type", "%s", rtype);
    if (!mpi || strcmp(rtype, "launcher") != 0)
        obj_mf_extra(p, false, "training.kubeflow.org/replica-index", "%lu", index);
    if (role_label)
        obj_mf_extra(p, false, "training.kubeflow.org/job-role", "%s", rtype);
}

/* The port named `name` of the container named `container` in template t, or def. */
static unsigned long named_port(const json_t *t, const char *container, const char *name,
                                unsigned long def)
{
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(json_object_get(t, "spec"), "containers"), i, c)
    {
        size_t k;
        const json_t *pt;
        const char *cn = json_string_value(json_object_get(c, "name"));
        if (!cn || strcmp(cn, container) != 0)
            continue;
        json_array_foreach(json_object_get(c, "ports"), k, pt)
        {
            const char *pn = json_string_value(json_object_get(pt, "name"));
            if (pn && strcmp(pn, name) == 0 &&
                json_is_integer(json_object_get(pt, "containerPort")))
                return (unsigned long)json_integer_value(json_object_get(pt, "containerPort"));
        }
    }
    return def;
}

/*
 * PyTorchJob (kubeflow.org/v1, kubeflow/training-operator pkg/controller.v1/pytorch envvar.go,
 * elastic.go): pods `<job>-master-0` and `<job>-worker-<i>`, the training.kubeflow.org labels,
 * and after every container's env PYTHONUNBUFFERED=0, then with a Master MASTER_PORT (its
 * `pytorchjob-port`, default 23456), MASTER_ADDR, WORLD_SIZE (all replicas) and RANK (workers
 * from 1), then with an elasticPolicy PET_RDZV_ENDPOINT, PET_RDZV_BACKEND, PET_NNODES,
 * PET_MAX_RESTARTS, PET_N_PROC_PER_NODE. The whole job is one group (one torch world): policy
 * reads it from topox.io/group, group-size and pod-index (the rank).
 */
enum tpx_code obj_mf_expand_pytorchjob(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *specs = json_object_get(spec, "pytorchReplicaSpecs");
    const json_t *ep = json_object_get(spec, "elasticPolicy");
    const char *job = obj_mf_obj_name(obj);
    static const char *const types[] = {"Master", "Worker"};
    struct expander x = {m, src, 0, 0};
    unsigned long n[2] = {0, 0};
    size_t t[2] = {0, 0};
    const json_t *rs[2];
    bool has[2];
    unsigned long port = 23456;
    char gkey[EXTRA_LEN];

    for (size_t k = 0; k < 2; k++) {
        has[k] = replica_spec(specs, types[k], &rs[k]);
        if (has[k] &&
            (obj_mf_get_count(m, rs[k], "replicas", 1, &n[k], err) != TPX_OK ||
             obj_mf_add_tmpl(m, json_object_get(rs[k], "template"), &t[k], err) != TPX_OK)) {
            tpx_err_prefix(err, "pytorchReplicaSpecs.%s", types[k]);
            return err->code;
        }
    }
    if (!has[0] && !has[1]) {
        m->err_at = specs ? specs : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.pytorchReplicaSpecs has no Master or Worker");
    }
    if (has[0])
        port = named_port(json_object_get(rs[0], "template"), "pytorch", "pytorchjob-port", port);
    if (obj_mf_add_job(m, obj, "PyTorchJob", src, &x.job, err) != TPX_OK ||
        obj_mf_reserve_pods(m, n[0] + n[1], err) != TPX_OK || obj_mf_new_replica(m, err) != TPX_OK)
        return err->code;
    snprintf(gkey, sizeof(gkey), "%.30s/%.40s", obj_mf_obj_ns(obj), job);
    for (size_t k = 0; k < 2; k++) {
        for (unsigned long i = 0; has[k] && i < n[k]; i++) {
            unsigned long rank = k == 1 && has[0] ? n[0] + i : i;
            struct obj_manifest_pod *p;
            char buf[64];

            x.tmpl = t[k];
            p = obj_mf_new_pod(&x, "%s-%s-%lu", job, k == 0 ? "master" : "worker", i);
            p->inj_mode = INJ_APPEND_ALL;
            kubeflow_labels(p, job, false, k == 0 ? "master" : "worker", i, k == 0 && i == 0);
            obj_mf_extra(p, true, "topox.io/group", "%s", gkey);
            obj_mf_extra(p, true, "topox.io/group-size", "%lu", n[0] + n[1]);
            obj_mf_extra(p, true, "topox.io/pod-index", "%lu", rank);
            obj_mf_inject(p, "PYTHONUNBUFFERED", "0");
            if (has[0]) {
                obj_mf_inject(p, "MASTER_PORT", "%lu", port);
                obj_mf_inject(p, "MASTER_ADDR", "%.70s-master-0", job);
                obj_mf_inject(p, "WORLD_SIZE", "%lu", n[0] + n[1]);
                obj_mf_inject(p, "RANK", "%lu", k == 1 ? i + 1 : i);
            }
            if (!ep)
                continue;
            {
                const char *host = json_string_value(json_object_get(ep, "rdzvHost"));
                const char *be = json_string_value(json_object_get(ep, "rdzvBackend"));
                const char *mn = obj_json_scalar(json_object_get(ep, "minReplicas"), buf, 32);
                const char *mx = obj_json_scalar(json_object_get(ep, "maxReplicas"), buf + 32, 32);
                char rp[32];
                const char *rport = obj_json_scalar(json_object_get(ep, "rdzvPort"), rp, 32);
                char mr[32];
                const char *maxr = obj_json_scalar(json_object_get(ep, "maxRestarts"), mr, 32);
                char np[32];
                const char *nproc = obj_json_scalar(json_object_get(ep, "nProcPerNode"), np, 32);

                if (host)
                    obj_mf_inject(p, "PET_RDZV_ENDPOINT", "%.60s:%s", host, rport ? rport : "");
                else
                    obj_mf_inject(p, "PET_RDZV_ENDPOINT", "%.60s-worker-0:%s", job,
                                  rport ? rport : "");
                obj_mf_inject(p, "PET_RDZV_BACKEND", "%s", be ? be : "c10d");
                if (mn || mx)
                    obj_mf_inject(p, "PET_NNODES", "%s:%s", mn ? mn : "", mx ? mx : "");
                else
                    obj_mf_inject(p, "PET_NNODES", "%lu", n[1]);
                if (maxr)
                    obj_mf_inject(p, "PET_MAX_RESTARTS", "%s", maxr);
                if (nproc)
                    obj_mf_inject(p, "PET_N_PROC_PER_NODE", "%s", nproc);
            }
        }
    }
    return TPX_OK;
}

/*
 * MPIJob (kubeflow.org/v2beta1, kubeflow/mpi-operator pkg/controller/mpi_job_controller.go):
 * the launcher `<job>-launcher` (a Job's pod upstream, with a generated suffix) is a replica of
 * its own when it asks for accelerators, else it is left out with a note; the workers
 * `<job>-worker-<i>` are one group. Labels training.kubeflow.org/
 * {operator-name mpi-operator, job-name, job-role, replica-index}; after the first container's
 * env, K_MPI_JOB_ROLE, and on the launcher OpenMPI's OMPI_MCA_orte_keep_fqdn_hostnames,
 * OMPI_MCA_orte_default_hostfile, OMPI_MCA_plm_rsh_args and OMPI_MCA_orte_set_default_slots
 * (slotsPerWorker, default 1).
 */
enum tpx_code obj_mf_expand_mpijob(struct obj_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *specs = json_object_get(spec, "mpiReplicaSpecs");
    const char *job = obj_mf_obj_name(obj);
    struct expander x = {m, src, 0, 0};
    const json_t *lrs;
    const json_t *wrs;
    bool hl = replica_spec(specs, "Launcher", &lrs);
    bool hw = replica_spec(specs, "Worker", &wrs);
    unsigned long nl = 0;
    unsigned long nw = 0;
    unsigned long slots;
    size_t lt = 0;
    size_t wt = 0;
    char gkey[EXTRA_LEN];

    if (!hl && !hw) {
        m->err_at = specs ? specs : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.mpiReplicaSpecs has no Launcher or Worker");
    }
    if (obj_mf_get_count(m, spec, "slotsPerWorker", 1, &slots, err) != TPX_OK ||
        (hl && (obj_mf_get_count(m, lrs, "replicas", 1, &nl, err) != TPX_OK ||
                obj_mf_add_tmpl(m, json_object_get(lrs, "template"), &lt, err) != TPX_OK)) ||
        (hw && (obj_mf_get_count(m, wrs, "replicas", 1, &nw, err) != TPX_OK ||
                obj_mf_add_tmpl(m, json_object_get(wrs, "template"), &wt, err) != TPX_OK)) ||
        obj_mf_add_job(m, obj, "MPIJob", src, &x.job, err) != TPX_OK ||
        obj_mf_reserve_pods(m, nl + nw, err) != TPX_OK)
        return err->code;
    snprintf(gkey, sizeof(gkey), "%.30s/%.40s", obj_mf_obj_ns(obj), job);
    if (nl && m->tmpl[lt].facts.accel == 0) {
        /* a launcher that asks for no accelerators has nothing to place (objects/dra.c and the
         * plan then see the workers only) */
        obj_mf_add_note(m,
                        "%s: MPIJob '%s': the launcher is not placed (it asks for no accelerators)",
                        src, job);
        nl = 0;
    }
    if (nl) {
        struct obj_manifest_pod *p;
        x.tmpl = lt;
        if (obj_mf_new_replica(m, err) != TPX_OK)
            return err->code;
        p = obj_mf_new_pod(&x, "%s-launcher", job);
        p->inj_mode = INJ_APPEND_FIRST;
        kubeflow_labels(p, job, true, "launcher", 0, true);
        obj_mf_inject(p, "K_MPI_JOB_ROLE", "launcher");
        obj_mf_inject(p, "OMPI_MCA_orte_keep_fqdn_hostnames", "true");
        obj_mf_inject(p, "OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile");
        obj_mf_inject(p, "OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10");
        obj_mf_inject(p, "OMPI_MCA_orte_set_default_slots", "%lu", slots);
    }
    if (nw && obj_mf_new_replica(m, err) != TPX_OK)
        return err->code;
    for (unsigned long i = 0; i < nw; i++) {
        struct obj_manifest_pod *p;
        x.tmpl = wt;
        p = obj_mf_new_pod(&x, "%s-worker-%lu", job, i);
        p->inj_mode = INJ_APPEND_FIRST;
        kubeflow_labels(p, job, true, "worker", i, true);
        obj_mf_extra(p, true, "topox.io/group", "%s", gkey);
        obj_mf_extra(p, true, "topox.io/group-size", "%lu", nw);
        obj_mf_extra(p, true, "topox.io/pod-index", "%lu", i);
        obj_mf_inject(p, "K_MPI_JOB_ROLE", "worker");
    }
    return TPX_OK;
}

/*
 * PodGroup (scheduling.k8s.io v1alpha2 in Kubernetes 1.36, v1beta1 in 1.37; KEP-4671 gang
 * scheduling, KEP-5732 topology-aware workload scheduling): no pods of its own; kept for
 * obj_mf_workload_groups(). Other versions are read the same, with a note.
 */
enum tpx_code obj_mf_read_podgroup(struct obj_manifest *m, const json_t *obj, struct tpx_err *err)
{
    const json_t **np;

    np = realloc((void *)m->podgroups, (m->npodgroups + 1) * sizeof(*np));
    if (!np)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    m->podgroups = np;
    m->podgroups[m->npodgroups++] = obj;
    return TPX_OK;
}

/* The pipeline scope a topology key names (obj_podgroup_key_scope with the default labels):
 * "rack", "block", "zone"; NULL for the NVLink domain level and unknown keys. */
static const char *key_scope(const char *key)
{
    static const char *const names[] = {"rack", "block", "zone"};
    int s = obj_podgroup_key_scope(NULL, key);

    return s < 0 ? NULL : names[s];
}

struct pg_ref {
    const char *name; /* spec.schedulingGroup.podGroupName */
    size_t pod;
};

static int pg_ref_cmp(const void *a, const void *b)
{
    const struct pg_ref *x = a;
    const struct pg_ref *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->pod > y->pod) - (x->pod < y->pod);
}

static const char *pod_group_name(const struct obj_manifest *m, size_t i)
{
    const json_t *t = m->tmpl_json[m->pods[i].tmpl];

    return json_string_value(json_object_get(
        json_object_get(json_object_get(t, "spec"), "schedulingGroup"), "podGroupName"));
}

/* The scope the topology keys of PodGroup obj set (NULL: none), with a note for other keys. */
static const char *podgroup_scope(struct obj_manifest *m, const json_t *obj, const char *pg)
{
    const char *scope = NULL;
    size_t k;
    const json_t *tc;

    json_array_foreach(
        json_object_get(json_object_get(json_object_get(obj, "spec"), "schedulingConstraints"),
                        "topology"),
        k, tc)
    {
        const char *key = json_string_value(json_object_get(tc, "key"));
        const char *sc = key ? key_scope(key) : NULL;
        if (sc && !scope)
            scope = sc;
        else if (key && !sc)
            obj_mf_add_note(
                m,
                "PodGroup '%s': topology key '%s' is no rack, block or zone label topox "
                "reads; kept as a constraint it does not check",
                pg, key);
    }
    return scope;
}

/*
 * The Workload API's groups: a pod whose template sets spec.schedulingGroup.podGroupName is in
 * that PodGroup (topox.io/group `<ns>/<name>`, group-size the pods of this manifest in it,
 * pod-index their order), and the PodGroup's schedulingConstraints.topology[].key, when it is a
 * label key topox reads for a rack, block or zone, sets topox.io/pipeline-scope; any other key
 * is kept as a note. Run once by _finish() before the facts are built; O(n log n).
 */
enum tpx_code obj_mf_workload_groups(struct obj_manifest *m, struct tpx_err *err)
{
    struct pg_ref *refs;
    size_t n = 0;

    for (size_t i = 0; i < m->npods; i++)
        n += pod_group_name(m, i) != NULL;
    if (n == 0)
        return TPX_OK;
    refs = malloc(n * sizeof(*refs));
    if (!refs)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    n = 0;
    for (size_t i = 0; i < m->npods; i++) {
        const char *pg = pod_group_name(m, i);
        if (pg)
            refs[n++] = (struct pg_ref){pg, i};
    }
    qsort(refs, n, sizeof(*refs), pg_ref_cmp);
    for (size_t a = 0, b; a < n; a = b) {
        const char *pg = refs[a].name;
        const char *scope = NULL;
        const json_t *obj = NULL;
        const char *job = m->jobs[m->pods[refs[a].pod].job].name; /* "ns/name" */
        char ns[POL_KEY_MAX];
        char gkey[EXTRA_LEN];
        int gl;

        for (b = a; b < n && strcmp(refs[b].name, pg) == 0; b++)
            ;
        for (size_t g = 0; g < m->npodgroups && !obj; g++) {
            if (strcmp(obj_mf_obj_name(m->podgroups[g]), pg) == 0)
                obj = m->podgroups[g];
        }
        if (obj)
            scope = podgroup_scope(m, obj, pg);
        else
            obj_mf_add_note(
                m, "pod '%s': PodGroup '%s' is not in this manifest; grouped by its name only",
                m->pods[refs[a].pod].name, pg);
        obj_mf_copy_str(ns, sizeof(ns), job);
        ns[strcspn(ns, "/")] = '\0';
        gl = snprintf(gkey, sizeof(gkey), "%.60s/%.200s", ns, pg);
        if (gl < 0 || (size_t)gl >= sizeof(gkey))
            obj_mf_hash_key(gkey, ns, pg, 0);
        for (size_t k = a; k < b; k++) {
            struct obj_manifest_pod *p = &m->pods[refs[k].pod];
            obj_mf_extra(p, true, "topox.io/group", "%s", gkey);
            obj_mf_extra(p, true, "topox.io/group-size", "%zu", b - a);
            obj_mf_extra(p, true, "topox.io/pod-index", "%zu", k - a);
            if (scope)
                obj_mf_extra(p, true, "topox.io/pipeline-scope", "%s", scope);
        }
    }
    free(refs);
    return TPX_OK;
}

/* Set env var name of container c to value (a string, or NULL for a valueFrom placeholder
 * dropped later), in place when c has it, else appended: the trainer's apply.UpsertEnvVar. */
static void upsert_env(json_t *c, const char *name, const char *value)
{
    json_t *env = json_object_get(c, "env");
    json_t *e = value ? json_pack("{s:s,s:s}", "name", name, "value", value)
                      : json_pack("{s:s,s:{}}", "name", name, "valueFrom");
    size_t i;
    json_t *old;

    if (!e)
        return;
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(c, "env", env);
    }
    json_array_foreach(env, i, old)
    {
        const char *n = json_string_value(json_object_get(old, "name"));
        if (n && strcmp(n, name) == 0) {
            json_array_set_new(env, i, e);
            return;
        }
    }
    json_array_append_new(env, e);
}

/* The trainer's replicated job of a runtime's JobSet spec: the one labelled
 * trainer.kubeflow.org/trainjob-ancestor-step: trainer, else the one named "node". */
static json_t *trainer_rjob(json_t *jsspec)
{
    size_t i;
    json_t *rj;
    json_t *named = NULL;

    json_array_foreach(json_object_get(jsspec, "replicatedJobs"), i, rj)
    {
        const char *n = json_string_value(json_object_get(rj, "name"));
        const char *a = json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(rj, "template"), "metadata"), "labels"),
            "trainer.kubeflow.org/trainjob-ancestor-step"));
        if (a && strcmp(a, "trainer") == 0)
            return rj;
        if (n && strcmp(n, "node") == 0)
            named = rj;
    }
    return named;
}

/*
 * TrainJob (trainer.kubeflow.org/v1alpha1, kubeflow/trainer pkg/runtime/framework/plugins/torch
 * torch.go, pkg/runtime/core): the JobSet `<trainjob>` its runtime (spec.runtimeRef, a
 * ClusterTrainingRuntime or TrainingRuntime of this manifest) templates, the trainer's
 * replicated job run on trainer.numNodes (else the runtime's mlPolicy.numNodes) pods, its `node`
 * container taking trainer.image, command, args, env and resourcesPerNode; with the torch
 * policy, the PET_NNODES, PET_NPROC_PER_NODE (trainer.numProcPerNode, else the policy's, else
 * "auto"), PET_NODE_RANK (the completion index), PET_MASTER_ADDR `<trainjob>-node-0-0.<trainjob>`
 * and PET_MASTER_PORT 29400 env. A runtime not in the manifest gives a note and no pods.
 */
enum tpx_code obj_mf_expand_trainjob(struct obj_manifest *m, const json_t *obj, const char *src,
                                     struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *ref = json_object_get(spec, "runtimeRef");
    const json_t *tr = json_object_get(spec, "trainer");
    const char *rname = json_string_value(json_object_get(ref, "name"));
    const char *rkind = json_string_value(json_object_get(ref, "kind"));
    const char *tj = obj_mf_obj_name(obj);
    const json_t *rt;
    const json_t *torch;
    json_t *js;
    json_t *jsspec;
    json_t *rj;
    json_t *c;
    unsigned long nodes;
    char buf[64];
    char np[64];
    const char *npp;
    size_t first;
    size_t job;

    if (!rname) {
        m->err_at = ref ? ref : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.runtimeRef.name is missing");
    }
    /* trainer.kubeflow.org's runtimes (a runtimeRef's apiGroup defaults to it) */
    rt = obj_mf_same_file_object(m, "trainer.kubeflow.org",
                                 rkind ? rkind : "ClusterTrainingRuntime", rname);
    if (!rt) {
        obj_mf_add_note(
            m, "%s: TrainJob '%s': runtime %s '%s' is not in this manifest; no pods to place", src,
            tj, rkind ? rkind : "ClusterTrainingRuntime", rname);
        return TPX_OK;
    }
    torch = json_object_get(json_object_get(json_object_get(rt, "spec"), "mlPolicy"), "torch");
    js = obj_mf_keep(
        m,
        json_pack(
            "{s:s,s:{s:s,s:s},s:O?}", "kind", "JobSet", "metadata", "name", tj, "namespace",
            obj_mf_obj_ns(obj), "spec",
            json_object_get(json_object_get(json_object_get(rt, "spec"), "template"), "spec")),
        err);
    if (!js)
        return err->code;
    jsspec = json_deep_copy(json_object_get(js, "spec"));
    json_object_set_new(js, "spec", jsspec ? jsspec : json_object());
    jsspec = json_object_get(js, "spec");
    rj = trainer_rjob(jsspec);
    c = obj_mf_container_named(
        json_object_get(
            json_object_get(json_object_get(json_object_get(rj, "template"), "spec"), "template"),
            "spec"),
        "node");
    if (obj_mf_get_count(m, tr, "numNodes", 0, &nodes, err) != TPX_OK)
        return err->code;
    if (!nodes && obj_mf_get_count(m, json_object_get(json_object_get(rt, "spec"), "mlPolicy"),
                                   "numNodes", 1, &nodes, err) != TPX_OK)
        return err->code;
    if (rj) {
        json_t *jt = json_object_get(json_object_get(rj, "template"), "spec");
        json_object_set_new(jt, "parallelism", json_integer((json_int_t)nodes));
        json_object_set_new(jt, "completions", json_integer((json_int_t)nodes));
        /* JobSet's webhook defaults it; PET_NODE_RANK reads the completion index */
        if (!json_object_get(jt, "completionMode"))
            json_object_set_new(jt, "completionMode", json_string("Indexed"));
    }
    if (c && tr) {
        static const char *const keys[] = {"image", "command", "args"};
        size_t k;
        json_t *e;
        for (size_t q = 0; q < 3; q++) {
            if (json_object_get(tr, keys[q]))
                json_object_set(c, keys[q], json_object_get(tr, keys[q]));
        }
        if (json_is_object(json_object_get(tr, "resourcesPerNode")))
            json_object_set(c, "resources", json_object_get(tr, "resourcesPerNode"));
        json_array_foreach(json_object_get(tr, "env"), k, e)
        {
            const char *n = json_string_value(json_object_get(e, "name"));
            if (n)
                upsert_env(c, n, json_string_value(json_object_get(e, "value")));
        }
    }
    npp = obj_json_scalar(json_object_get(tr, "numProcPerNode"), np, sizeof(np));
    if (!npp)
        npp = obj_json_scalar(json_object_get(torch, "numProcPerNode"), np, sizeof(np));
    if (c && torch) {
        snprintf(buf, sizeof(buf), "%lu", nodes);
        upsert_env(c, "PET_NNODES", buf);
        upsert_env(c, "PET_NPROC_PER_NODE", npp ? npp : "auto");
        upsert_env(c, "PET_NODE_RANK", NULL);
        {
            char addr[POL_KEY_MAX];
            snprintf(addr, sizeof(addr), "%.100s-node-0-0.%.100s", tj, tj);
            upsert_env(c, "PET_MASTER_ADDR", addr);
        }
        upsert_env(c, "PET_MASTER_PORT", "29400");
    }
    first = m->npods;
    job = m->njobs;
    if (obj_mf_expand_jobset(m, js, src, err) != TPX_OK)
        return err->code;
    obj_mf_copy_str(m->jobs[job].kind, sizeof(m->jobs[job].kind), "TrainJob");
    for (size_t p = first; c && torch && p < m->npods; p++) {
        const struct obj_manifest_pod *pp = &m->pods[p];
        const char *idx = NULL;
        for (size_t e = 0; e < pp->nel; e++) {
            if (strcmp(pp->ekey[e], "batch.kubernetes.io/job-completion-index") == 0)
                idx = pp->eval[e];
        }
        /* the fieldRef to the completion index, resolved as the kubelet would */
        if (idx && strncmp(pp->name, tj, strlen(tj)) == 0) {
            m->pods[p].inj_mode = INJ_APPEND_REPLACE;
            obj_mf_inject(&m->pods[p], "PET_NODE_RANK", "%s", idx);
        }
    }
    return TPX_OK;
}
