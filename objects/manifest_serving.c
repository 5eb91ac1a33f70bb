/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_serving.c - the serving operators' kinds as the pods they create:
 * DisaggregatedSet, DynamoGraphDeployment, RoleBasedGroup, LLMInferenceService (KServe) and
 * PodCliqueSet (Grove). docs/workloads.md "Kinds read" names the version and source of each. */
#include "objects/manifest_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects/podfacts.h"
#include "objects/yamljson.h"
#include "topology/labels.h"

/* The list an operator's kind is made of (spec.roles, spec.services: an array, or an object when
 * `object`), then the kind's job. TPX_EINVAL "spec.FIELD is missing or empty", with m->err_at on
 * what was there instead. */
static enum tpx_code open_kind(struct obj_manifest *m, const json_t *obj, const char *field,
                               bool object, const char *kind, struct expander *x,
                               const json_t **list, struct tpx_err *err)
{
    const json_t *l = json_object_get(json_object_get(obj, "spec"), field);
    size_t n = object ? json_object_size(l) : json_array_size(l);

    if (n == 0) {
        if (l)
            m->err_at = l;
        return tpx_err_set(err, TPX_EINVAL, "spec.%s is missing or empty", field);
    }
    *list = l;
    return obj_mf_add_job(m, obj, kind, x->src, &x->job, err);
}

/*
 * DisaggregatedSet (disaggregatedset.x-k8s.io/v1, kubernetes-sigs/lws
 * pkg/controllers/disaggregatedset/lws_manager.go, distribution.go,
 * pkg/utils/disaggregatedset/utils.go): for each of `slices` (default 1) and each role, one LWS
 * `<ds>-<slice>-<revision>-<role>` with the role's spec.replicas (per slice), its pods labelled
 * app `<ds>-<slice>-<role>` and disaggregatedset.x-k8s.io/{role,slice,name,revision}. The
 * revision (sha256 of the role templates upstream) is a stand-in hash. One job; each LWS group
 * is a replica.
 */
enum tpx_code obj_mf_expand_disaggregatedset(struct obj_manifest *m, const json_t *obj,
                                             const char *src, struct tpx_err *err)
{
    const json_t *roles = NULL;
    const char *ds = obj_mf_obj_name(obj);
    struct expander x = {m, src, 0, 0};
    char rev[EXTRA_LEN];
    unsigned long slices;
    size_t r;
    const json_t *role;

    if (obj_mf_get_count(m, json_object_get(obj, "spec"), "slices", 1, &slices, err) != TPX_OK ||
        open_kind(m, obj, "roles", false, "DisaggregatedSet", &x, &roles, err) != TPX_OK)
        return err->code;
    obj_mf_hash_key(rev, obj_mf_obj_ns(obj), ds, 0);
    rev[8] = '\0';
    for (unsigned long sl = 0; sl < slices; sl++) {
        size_t start = m->npods;

        json_array_foreach(roles, r, role)
        {
            const char *rn = json_string_value(json_object_get(role, "name"));
            struct owner_labels ol = {
                5,
                {"app", "disaggregatedset.x-k8s.io/role", "disaggregatedset.x-k8s.io/slice",
                 "disaggregatedset.x-k8s.io/name", "disaggregatedset.x-k8s.io/revision"},
                {{0}}};
            char lws[POL_KEY_MAX];

            m->err_at = role;
            if (!rn)
                return tpx_err_set(err, TPX_EINVAL, "roles[%zu]: name is missing", r);
            snprintf(ol.val[0], EXTRA_LEN, "%.30s-%lu-%.18s", ds, sl, rn);
            snprintf(ol.val[1], EXTRA_LEN, "%.70s", rn);
            snprintf(ol.val[2], EXTRA_LEN, "%lu", sl);
            snprintf(ol.val[3], EXTRA_LEN, "%.70s", ds);
            snprintf(ol.val[4], EXTRA_LEN, "%s", rev);
            snprintf(lws, sizeof(lws), "%.80s-%lu-%s-%.60s", ds, sl, rev, rn);
            if (obj_mf_lws_pods(m, &x, obj, lws, json_object_get(role, "spec"), &ol, err) !=
                TPX_OK) {
                tpx_err_prefix(err, "role '%s'", rn);
                return err->code;
            }
        }
        /* every slice is the same size: refuse after the first, not after expanding them all */
        if (sl == 0 && m->npods > start &&
            slices - 1 > (OBJ_MANIFEST_MAX_PODS - m->npods) / (m->npods - start)) {
            m->err_at = json_object_get(json_object_get(obj, "spec"), "slices");
            return tpx_err_set(err, TPX_ETOOBIG,
                               "spec.slices: %lu slices of %zu pods are more than the %u pods one "
                               "plan expands",
                               slices, m->npods - start, OBJ_MANIFEST_MAX_PODS);
        }
    }
    return TPX_OK;
}

static bool is_python(const char *c)
{
    return c && strncmp(c, "python", 6) == 0 && strspn(c + 6, "0123456789.") == strlen(c + 6);
}

/* Append the strings of array a to buf, joined with spaces (a Go strings.Join). */
static void join(const json_t *a, char *buf, size_t len)
{
    size_t i;
    const json_t *s;
    size_t at = strlen(buf);

    json_array_foreach(a, i, s)
    {
        const char *t = json_string_value(s);
        int n;
        if (!t)
            continue;
        n = snprintf(buf + at, len - at, "%s%s", at ? " " : "", t);
        if (n < 0 || (size_t)n >= len - at)
            return;
        at += (size_t)n;
    }
}

/*
 * How the Dynamo operator rewrites the main container of a multinode service for its backend
 * (deploy/cloud/operator/internal/dynamo/backend_sglang.go, backend_trtllm.go), with the LWS
 * deployer's names: SGLang gets `--dist-init-addr $(LWS_LEADER_ADDRESS):29500 --nnodes N
 * --node-rank R` appended (R 0 on the leader, $(LWS_WORKER_INDEX) on workers); TensorRT-LLM's
 * leader becomes `/bin/sh -c "... mpirun --oversubscribe -n N*gpus -H <hosts> ... bash -c
 * 'source /opt/dynamo/venv/bin/activate && trtllm-llmapi-launch <args>'"` and its workers run
 * sshd; both get OMPI_MCA_orte_keep_fqdn_hostnames=1.
 */
static void dynamo_multinode(json_t *c, const char *framework, bool leader, unsigned long nodes,
                             unsigned long gpus)
{
    json_t *cmd = json_object_get(c, "command");
    json_t *args = json_object_get(c, "args");

    if (framework && strcmp(framework, "sglang") == 0) {
        char n[24];
        if (!is_python(json_string_value(json_array_get(cmd, 0))))
            return; /* the operator edits a `sh -c` python line in place; not done here */
        snprintf(n, sizeof(n), "%lu", nodes);
        if (!json_is_array(args)) {
            args = json_array();
            json_object_set_new(c, "args", args);
        }
        json_array_append_new(args, json_string("--dist-init-addr"));
        json_array_append_new(args, json_string("$(LWS_LEADER_ADDRESS):29500"));
        json_array_append_new(args, json_string("--nnodes"));
        json_array_append_new(args, json_string(n));
        json_array_append_new(args, json_string("--node-rank"));
        json_array_append_new(args, json_string(leader ? "0" : "$(LWS_WORKER_INDEX)"));
    } else if (framework && strcmp(framework, "trtllm") == 0) {
        json_t *env = json_object_get(c, "env");
        char orig[2048];
        char hosts[512] = "${LWS_LEADER_ADDRESS}";
        char line[3072];

        if (!json_is_array(env)) {
            env = json_array();
            json_object_set_new(c, "env", env);
        }
        json_array_append_new(
            env, json_pack("{s:s,s:s}", "name", "OMPI_MCA_orte_keep_fqdn_hostnames", "value", "1"));
        /* backend_trtllm.go setupLeaderContainer: a python command with its args, else the
         * args (a sh -c script), else the command */
        orig[0] = '\0';
        if (is_python(json_string_value(json_array_get(cmd, 0)))) {
            join(cmd, orig, sizeof(orig));
            join(args, orig, sizeof(orig));
        } else {
            join(json_array_size(args) ? args : cmd, orig, sizeof(orig));
        }
        for (unsigned long i = 1; i < nodes && strlen(hosts) + 32 < sizeof(hosts); i++) {
            size_t l = strlen(hosts);
            snprintf(hosts + l, sizeof(hosts) - l, ",${LWS_WORKER_%lu_ADDRESS}", i);
        }
        if (leader)
            snprintf(line, sizeof(line),
                     "mkdir -p ~/.ssh && cp /ssh-pk/private.key ~/.ssh/id_rsa && mpirun "
                     "--oversubscribe -n %lu -H %s --mca pml ob1 --mca plm_rsh_args \"-p 2222 -o "
                     "StrictHostKeyChecking=no -i ~/.ssh/id_rsa\" bash -c 'source "
                     "/opt/dynamo/venv/bin/activate && trtllm-llmapi-launch %s'",
                     nodes * gpus, hosts, orig);
        else
            snprintf(line, sizeof(line),
                     "mkdir -p ~/.ssh ~/.ssh/host_keys ~/.ssh/run && "
                     "/usr/sbin/sshd -D -f ~/.ssh/sshd_config");
        json_object_set_new(c, "command", json_pack("[s,s]", "/bin/sh", "-c"));
        json_object_set_new(c, "args", json_pack("[s]", line));
    }
}

/* A service's pod template as the Dynamo operator builds it: extraPodSpec with its mainContainer
 * (named "main" when unnamed) asking for resources.limits.gpu (or requests.gpu) nvidia.com/gpu,
 * the graph's spec.envs and the service's envs in front of the container's env. */
static json_t *dynamo_template(struct obj_manifest *m, const json_t *dgd, const char *svcname,
                               const json_t *svc, bool leader, unsigned long nodes,
                               struct tpx_err *err)
{
    const json_t *eps = json_object_get(svc, "extraPodSpec");
    const json_t *res = json_object_get(svc, "resources");
    const char *framework =
        json_string_value(json_object_get(json_object_get(dgd, "spec"), "backendFramework"));
    const json_t *gpu = json_object_get(json_object_get(res, "requests"), "gpu");
    json_t *t = json_pack("{s:{s:{s:s,s:s},s:{}},s:{}}", "metadata", "labels",
                          "nvidia.com/dynamo-graph-deployment-name", obj_mf_obj_name(dgd),
                          "nvidia.com/dynamo-component", svcname, "annotations", "spec");
    json_t *spec;
    json_t *c;
    json_t *env;
    char buf[64];
    const char *g;
    unsigned long gpus = 0;

    if (!obj_mf_keep(m, t, err))
        return NULL;
    spec = json_object_get(t, "spec");
    if (json_is_object(eps)) {
        json_t *cp = json_deep_copy(eps);
        json_object_update(spec, cp);
        json_decref(cp);
    }
    json_object_del(spec, "mainContainer");
    c = json_deep_copy(json_object_get(eps, "mainContainer"));
    if (!c)
        c = json_object();
    if (!json_string_value(json_object_get(c, "name")))
        json_object_set_new(c, "name", json_string("main"));
    if (!gpu)
        gpu = json_object_get(json_object_get(res, "limits"), "gpu");
    g = obj_json_scalar(gpu, buf, sizeof(buf));
    if (g) {
        json_t *r = json_object_get(c, "resources");
        if (!json_is_object(r)) {
            r = json_object();
            json_object_set_new(c, "resources", r);
        }
        json_object_set_new(r, "limits", json_pack("{s:s}", "nvidia.com/gpu", g));
        gpus = strtoul(g, NULL, 10);
    }
    env = json_array();
    json_array_extend(env, json_object_get(json_object_get(dgd, "spec"), "envs"));
    json_array_extend(env, json_object_get(svc, "envs"));
    json_array_extend(env, json_object_get(c, "env"));
    json_object_set_new(c, "env", env);
    if (nodes > 1)
        dynamo_multinode(c, framework, leader, nodes, gpus);
    if (json_object_set_new(spec, "containers", json_pack("[o]", c)) != 0) {
        tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
        return NULL;
    }
    return t;
}

/*
 * DynamoGraphDeployment (nvidia.com/v1alpha1, ai-dynamo/dynamo deploy/cloud/operator:
 * api/v1alpha1, internal/dynamo/graph.go and backend_*.go). Each service gives `replicas`
 * instances; a service with multinode.nodeCount N > 1 is expanded as the LWS the operator's LWS
 * deployer creates, `<dgd>-<service>` of size N (leader and workers as dynamo_multinode()
 * rewrites them), else each instance is one pod `<dgd>-<service>-<i>`. With Grove (the
 * operator's default deployer) the pods are named by Grove instead, with the same count,
 * resources and group.
 */
enum tpx_code obj_mf_expand_dgd(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *svcs = NULL;
    struct expander x = {m, src, 0, 0};
    const char *sname;
    const json_t *svc;

    if (open_kind(m, obj, "services", true, "DynamoGraphDeployment", &x, &svcs, err) != TPX_OK)
        return err->code;
    json_object_foreach((json_t *)svcs, sname, svc)
    {
        char name[POL_KEY_MAX];
        unsigned long replicas;
        unsigned long nodes;
        json_t *lt;

        m->err_at = svc;
        snprintf(name, sizeof(name), "%.100s-%.100s", obj_mf_obj_name(obj), sname);
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        if (obj_mf_get_count(m, svc, "replicas", 1, &replicas, err) != TPX_OK ||
            obj_mf_get_count(m, json_object_get(svc, "multinode"), "nodeCount", 1, &nodes, err) !=
                TPX_OK)
            goto fail;
        lt = dynamo_template(m, obj, sname, svc, true, nodes, err);
        if (!lt)
            goto fail;
        if (nodes > 1) {
            json_t *wt = dynamo_template(m, obj, sname, svc, false, nodes, err);
            json_t *lws = wt ? obj_mf_keep(m,
                                           json_pack("{s:I,s:{s:I,s:O,s:O}}", "replicas",
                                                     (json_int_t)replicas, "leaderWorkerTemplate",
                                                     "size", (json_int_t)nodes, "leaderTemplate",
                                                     lt, "workerTemplate", wt),
                                           err)
                             : NULL;
            if (!lws || obj_mf_lws_pods(m, &x, obj, name, lws, NULL, err) != TPX_OK)
                goto fail;
            continue;
        }
        if (obj_mf_add_tmpl(m, lt, &x.tmpl, err) != TPX_OK ||
            obj_mf_reserve_pods(m, replicas, err) != TPX_OK)
            goto fail;
        for (unsigned long i = 0; i < replicas; i++) {
            if (obj_mf_new_replica(m, err) != TPX_OK)
                goto fail;
            obj_mf_new_pod(&x, "%s-%lu", name, i);
        }
    }
    return TPX_OK;
fail:
    tpx_err_prefix(err, "service '%s'", sname);
    return err->code;
}

/* The merge key of a pod template list that a strategic merge patch merges element by element
 * (k8s.io/api/core/v1 types.go patchMergeKey tags), or NULL for a list it replaces. */
static const char *merge_key(const char *list)
{
    static const struct {
        const char *list;
        const char *key;
    } keys[] = {
        {"containers", "name"}, {"initContainers", "name"},    {"env", "name"},
        {"volumes", "name"},    {"volumeMounts", "mountPath"}, {"ports", "containerPort"},
        {"tolerations", "key"}, {"imagePullSecrets", "name"},
    };

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strcmp(keys[i].list, list) == 0)
            return keys[i].key;
    }
    return NULL;
}

/* Do two list elements have the same merge key value? */
static bool same_key(const json_t *a, const json_t *b, const char *key)
{
    const json_t *x = json_object_get(a, key);
    const json_t *y = json_object_get(b, key);
    return x && y && json_equal(x, y);
}

/* patch merged into base (both objects, base owned), as RBG's controller applies a pod template
 * patch: strategic merge patch (k8s.io/apimachinery strategicpatch.StrategicMergePatch, called
 * by sgl-project/rbg for templateRef.patch, leaderTemplatePatch and workerTemplatePatch; order
 * roleTemplates -> templateRef.patch -> leader/worker patch): objects recursively, the lists
 * with a merge key (containers, env, volumes by name, volumeMounts by mountPath, ports by
 * containerPort, ...) element by element, other lists and scalars replaced, null deletes. */
static void merge_patch(json_t *base, const json_t *patch)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)patch, k, v)
    {
        json_t *b = json_object_get(base, k);
        const char *mk = merge_key(k);
        if (json_is_null(v)) {
            json_object_del(base, k);
        } else if (json_is_object(v) && json_is_object(b)) {
            merge_patch(b, v);
        } else if (json_is_array(v) && json_is_array(b) && mk) {
            size_t i;
            json_t *pc;
            json_array_foreach(v, i, pc)
            {
                size_t j;
                json_t *bc;
                bool merged = false;
                json_array_foreach(b, j, bc)
                {
                    if (json_is_object(pc) && same_key(bc, pc, mk)) {
                        merge_patch(bc, pc);
                        merged = true;
                        break;
                    }
                }
                if (!merged)
                    json_array_append_new(b, json_deep_copy(pc));
            }
        } else {
            json_object_set_new(base, k, json_deep_copy(v));
        }
    }
}

/* RBG's env (api/workloads/constants/env.go; pkg discovery InjectEnv, InjectLeaderWorkerSetEnv:
 * sorted by name, in front of the user's). fieldRef values name labels RBG itself sets, so they
 * are given as the kubelet would resolve them. */
static void rbg_env(struct obj_manifest_pod *p, const char *rbg, const char *role,
                    unsigned long index, bool lwp, const char *instance, unsigned long comp,
                    unsigned long size, const char *svc, const char *ns)
{
    if (lwp) {
        /* fieldRef component-id: the leader 0, worker k (1-based pod index) k - 1 */
        obj_mf_inject(p, "RBG_COMPONENT_INDEX", "%lu", comp == 0 ? 0 : comp - 1);
        obj_mf_inject(p, "RBG_COMPONENT_NAME", "%s", comp == 0 ? "leader" : "worker");
    }
    obj_mf_inject(p, "RBG_GROUP_NAME", "%s", rbg);
    obj_mf_inject(p, "RBG_ROLE_INDEX", "%lu", index);
    if (lwp)
        obj_mf_inject(p, "RBG_ROLE_INSTANCE_NAME", "%s", instance);
    obj_mf_inject(p, "RBG_ROLE_NAME", "%s", role);
    if (lwp) {
        obj_mf_inject(p, "RBG_LWP_LEADER_ADDRESS", "$(RBG_ROLE_INSTANCE_NAME)-0.%s.%s", svc, ns);
        obj_mf_inject(p, "RBG_LWP_WORKER_INDEX", "%lu", comp);
        obj_mf_inject(p, "RBG_LWP_GROUP_SIZE", "%lu", size);
    }
}

/* A pattern's pod template (RBG v1alpha2 TemplateSource): its inline `template`, or the
 * spec.roleTemplates entry its `templateRef` names with templateRef.patch merged in; then, for a
 * leaderWorkerPattern, `extra` (leaderTemplatePatch or workerTemplatePatch) merged on top.
 * Owned by m; NULL with *err. */
static json_t *rbg_template(struct obj_manifest *m, const json_t *rbg, const json_t *pattern,
                            const char *what, const json_t *extra, struct tpx_err *err)
{
    const json_t *inline_t = json_object_get(pattern, "template");
    const json_t *ref = json_object_get(pattern, "templateRef");
    const char *rname = json_string_value(json_object_get(ref, "name"));
    const json_t *base = inline_t;
    json_t *t;

    m->err_at = pattern;
    if (!json_is_object(inline_t) && ref) {
        size_t i;
        const json_t *rt;
        base = NULL;
        json_array_foreach(json_object_get(json_object_get(rbg, "spec"), "roleTemplates"), i, rt)
        {
            const char *n = json_string_value(json_object_get(rt, "name"));
            if (n && rname && strcmp(n, rname) == 0)
                base = json_object_get(rt, "template");
        }
        if (!json_is_object(base)) {
            m->err_at = ref;
            tpx_err_set(err, TPX_EINVAL, "%s.templateRef: no spec.roleTemplates entry named '%s'",
                        what, rname ? rname : "");
            return NULL;
        }
    }
    if (!json_is_object(base)) {
        tpx_err_set(err, TPX_EINVAL, "%s.template is missing (nor is there a templateRef)", what);
        return NULL;
    }
    t = obj_mf_keep(m, json_deep_copy(base), err);
    if (t && !json_is_object(inline_t) && json_is_object(json_object_get(ref, "patch")))
        merge_patch(t, json_object_get(ref, "patch"));
    if (t && json_is_object(extra))
        merge_patch(t, extra);
    return t;
}

/*
 * RoleBasedGroup (workloads.x-k8s.io/v1alpha2, sgl-project/rbg api/workloads/v1alpha2 and
 * api/workloads/constants): each role gives `replicas` instances. standalonePattern: one pod
 * `<rbg>-<role>-<i>` per instance. leaderWorkerPattern (size N): a RoleInstance
 * `<rbg>-<role>-<i>` of N pods `<instance>-<k>` (k 0 the leader, the host name
 * RBG_LWP_LEADER_ADDRESS points at), the leader/worker patches merged into the template. Pods
 * carry the rbg.workloads.x-k8s.io/{group-name,role-name,role-instance-name,
 * role-instance-index,component-name,component-index,component-size} labels and the RBG_* env.
 * Other patterns are skipped with a note.
 */
enum tpx_code obj_mf_expand_rbg(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *roles = NULL;
    const char *rbg = obj_mf_obj_name(obj);
    struct expander x = {m, src, 0, 0};
    size_t r;
    const json_t *role;

    if (open_kind(m, obj, "roles", false, "RoleBasedGroup", &x, &roles, err) != TPX_OK)
        return err->code;
    json_array_foreach(roles, r, role)
    {
        const char *rn = json_string_value(json_object_get(role, "name"));
        const json_t *sp = json_object_get(role, "standalonePattern");
        const json_t *lwp = json_object_get(role, "leaderWorkerPattern");
        char svc[POL_KEY_MAX];
        unsigned long reps;
        unsigned long size = 1;
        size_t lt;
        size_t wt;

        m->err_at = role;
        if (!rn)
            return tpx_err_set(err, TPX_EINVAL, "roles[%zu]: name is missing", r);
        snprintf(svc, sizeof(svc), "s-%.100s-%.100s", rbg, rn);
        if (obj_mf_get_count(m, role, "replicas", 1, &reps, err) != TPX_OK ||
            (lwp && obj_mf_get_count(m, lwp, "size", 1, &size, err) != TPX_OK))
            goto fail;
        if (!sp && !lwp) {
            obj_mf_add_note(m,
                            "%s: RoleBasedGroup '%s' role '%s': no standalonePattern or "
                            "leaderWorkerPattern; skipped",
                            src, rbg, rn);
            continue;
        }
        if (size == 0 || (reps && size > OBJ_MANIFEST_MAX_PODS / reps)) {
            tpx_err_set(err, TPX_EINVAL, "leaderWorkerPattern.size %lu is out of range", size);
            goto fail;
        }
        if (sp) {
            json_t *t = rbg_template(m, obj, sp, "standalonePattern", NULL, err);
            if (!t || obj_mf_add_tmpl(m, t, &lt, err) != TPX_OK)
                goto fail;
            wt = lt;
        } else {
            json_t *l = rbg_template(m, obj, lwp, "leaderWorkerPattern",
                                     json_object_get(lwp, "leaderTemplatePatch"), err);
            json_t *w = l ? rbg_template(m, obj, lwp, "leaderWorkerPattern",
                                         json_object_get(lwp, "workerTemplatePatch"), err)
                          : NULL;
            if (!w || obj_mf_add_tmpl(m, l, &lt, err) != TPX_OK ||
                obj_mf_add_tmpl(m, w, &wt, err) != TPX_OK)
                goto fail;
        }
        if (obj_mf_reserve_pods(m, reps * size, err) != TPX_OK)
            goto fail;
        for (unsigned long i = 0; i < reps; i++) {
            char inst[192];
            char gkey[EXTRA_LEN];
            int gl;

            snprintf(inst, sizeof(inst), "%.80s-%.80s-%lu", rbg, rn, i);
            gl = snprintf(gkey, sizeof(gkey), "%.60s/%.120s", obj_mf_obj_ns(obj), inst);
            if (gl < 0 || (size_t)gl >= sizeof(gkey))
                obj_mf_hash_key(gkey, obj_mf_obj_ns(obj), inst,
                                0); /* too long to read back: a hash */
            if (obj_mf_new_replica(m, err) != TPX_OK)
                return err->code;
            for (unsigned long k = 0; k < size; k++) {
                struct obj_manifest_pod *p;

                x.tmpl = k == 0 ? lt : wt;
                p = sp ? obj_mf_new_pod(&x, "%s", inst) : obj_mf_new_pod(&x, "%s-%lu", inst, k);
                obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/group-name", "%.70s", rbg);
                obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/role-name", "%.70s", rn);
                if (lwp) {
                    obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/role-instance-name", "%.70s",
                                 inst);
                    obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/role-instance-index", "%lu", i);
                    obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/component-name", "%s",
                                 k == 0 ? "leader" : "worker");
                    /* RBG InitComponentPodLabels: component-id counts
                     * each component from 0, component-index is the pod's place (workers + 1) */
                    obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/component-id", "%lu",
                                 k == 0 ? 0 : k - 1);
                    obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/component-index", "%lu", k);
                    obj_mf_extra(p, false, "rbg.workloads.x-k8s.io/component-size", "%lu", size);
                    /* policy reads these labels as a group too; the annotations say the same
                     * (a hash key where the instance name is too long to read back) */
                    obj_mf_extra(p, true, "topox.io/group", "%s", gkey);
                    obj_mf_extra(p, true, "topox.io/group-size", "%lu", size);
                    obj_mf_extra(p, true, "topox.io/pod-index", "%lu", k);
                } else {
                    obj_mf_extra(p, false, "apps.kubernetes.io/pod-index", "%lu", i);
                }
                rbg_env(p, rbg, rn, i, lwp != NULL, inst, k, size, svc, obj_mf_obj_ns(obj));
            }
        }
    }
    return TPX_OK;
fail:
    tpx_err_prefix(err, "role '%s'", json_string_value(json_object_get(role, "name")));
    return err->code;
}

/* What one LLMInferenceService workload (the main one or spec.prefill) reads. */
struct llmisvc_par {
    unsigned long tensor, pipeline, data, data_local;
    bool expert;
    const char *model;
};

/* The `vllm serve` line of KServe's well-known worker-data-parallel preset
 * (config/llmisvcconfig/config-llm-worker-data-parallel.yaml), rendered with spec.parallelism;
 * the preset's RoCE/DNS probing before it is left out. */
static void llmisvc_command(json_t *c, const struct llmisvc_par *par, bool leader)
{
    char line[1024];
    char tp[48] = "";

    if (json_array_size(json_object_get(c, "command")) ||
        json_array_size(json_object_get(c, "args")))
        return; /* the user's own command wins over the preset's */
    if (par->tensor)
        snprintf(tp, sizeof(tp), " --tensor-parallel-size %lu", par->tensor);
    snprintf(
        line, sizeof(line),
        "START_RANK=%s; exec vllm serve /mnt/models --served-model-name %.100s --port 8000%s%s "
        "--data-parallel-size %lu --data-parallel-size-local %lu --data-parallel-address "
        "${DP_ADDRESS} --data-parallel-rpc-port 5555 --data-parallel-start-rank $START_RANK%s "
        "${VLLM_ADDITIONAL_ARGS}",
        leader ? "0" : "$(( ${LWS_WORKER_INDEX:-0} * DATA_LOCAL ))",
        par->model ? par->model : "model", par->expert ? " --enable-expert-parallel" : "", tp,
        par->data ? par->data : 1, par->data_local ? par->data_local : 1,
        leader ? "" : " --headless");
    if (!leader) {
        /* DATA_LOCAL stands for the preset's {{ or .Spec.Parallelism.DataLocal 1 }} */
        char *at = strstr(line, "DATA_LOCAL");
        char n[24];
        int l = snprintf(n, sizeof(n), "%lu", par->data_local ? par->data_local : 1);
        if (at && l > 0) {
            memmove(at + l, at + 10, strlen(at + 10) + 1);
            memcpy(at, n, (size_t)l);
        }
    }
    json_object_set_new(c, "command", json_pack("[s,s,s]", "/bin/bash", "-c", line));
}

/* A KServe pod template: the user's pod spec with the preset's `main` container command and
 * env (HOME, VLLM_LOGGING_LEVEL, HF_HUB_CACHE, unless the user sets them) and the labels of
 * expectedMainMultiNodeLWS. */
static json_t *llmisvc_template(struct obj_manifest *m, const json_t *ps, const char *name,
                                const struct llmisvc_par *par, bool leader, bool multinode,
                                const char *role, struct tpx_err *err)
{
    static const char *const preset_env[][2] = {
        {"HOME", "/home"}, {"VLLM_LOGGING_LEVEL", "INFO"}, {"HF_HUB_CACHE", "/models"}};
    json_t *t = obj_mf_keep(m,
                            json_pack("{s:{s:{s:s,s:s,s:s}},s:O}", "metadata", "labels",
                                      "app.kubernetes.io/component",
                                      leader ? "llminferenceservice-workload-leader"
                                             : "llminferenceservice-workload-worker",
                                      "app.kubernetes.io/name", name, "app.kubernetes.io/part-of",
                                      "llminferenceservice", "spec", ps),
                            err);
    json_t *spec;
    json_t *c;
    json_t *env;

    if (!t)
        return NULL;
    spec = json_deep_copy(ps);
    json_object_set_new(t, "spec", spec ? spec : json_object());
    spec = json_object_get(t, "spec");
    if (leader) {
        json_t *l = json_object_get(json_object_get(t, "metadata"), "labels");
        json_object_set_new(l, "kserve.io/component", json_string("workload"));
        json_object_set_new(l, "llm-d.ai/role", json_string(role));
    }
    c = obj_mf_container_named(spec, "main");
    if (!c)
        return t;
    if (multinode)
        llmisvc_command(c, par, leader);
    env = json_object_get(c, "env");
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(c, "env", env);
    }
    for (size_t k = 0; k < 3; k++) {
        bool set = false;
        size_t i;
        json_t *e;
        json_array_foreach(env, i, e)
        {
            const char *n = json_string_value(json_object_get(e, "name"));
            set = set || (n && strcmp(n, preset_env[k][0]) == 0);
        }
        if (!set)
            json_array_insert_new(
                env, k,
                json_pack("{s:s,s:s}", "name", preset_env[k][0], "value", preset_env[k][1]));
    }
    return t;
}

/* One workload of an LLMInferenceService (spec, or spec.prefill): with a worker, the LWS
 * `<name>-kserve-mn[-prefill]` of size ParallelismSpec.GetSize() (kserve/kserve
 * pkg/apis/serving/v1alpha2/llm_inference_service_lifecycle.go, used by expectedMainMultiNodeLWS
 * and expectedPrefillMultiNodeLWS in pkg/controller/v1alpha2/llmisvc/workload_multi_node.go);
 * without one, `replicas` pods `<name>-kserve[-prefill]-<i>`. */
static enum tpx_code llmisvc_workload(struct obj_manifest *m, struct expander *x, const json_t *obj,
                                      const json_t *w, const char *model, bool prefill,
                                      bool has_prefill, struct tpx_err *err)
{
    const json_t *parj = json_object_get(w, "parallelism");
    const json_t *tmpl = json_object_get(w, "template");
    const json_t *worker = json_object_get(w, "worker");
    const char *name = obj_mf_obj_name(obj);
    /* llm-d.ai/role: prefill, decode beside a prefill, else both (expectedMainMultiNodeLWS) */
    const char *role = prefill ? "prefill" : has_prefill ? "decode" : "both";
    struct llmisvc_par par = {0, 0, 0, 0, false, model};
    unsigned long replicas;
    unsigned long size = 1;
    char lws[POL_KEY_MAX];

    if (obj_mf_get_count(m, w, "replicas", 1, &replicas, err) != TPX_OK ||
        obj_mf_get_count(m, parj, "tensor", 0, &par.tensor, err) != TPX_OK ||
        obj_mf_get_count(m, parj, "pipeline", 0, &par.pipeline, err) != TPX_OK ||
        obj_mf_get_count(m, parj, "data", 0, &par.data, err) != TPX_OK ||
        obj_mf_get_count(m, parj, "dataLocal", 0, &par.data_local, err) != TPX_OK)
        return err->code;
    par.expert = json_is_true(json_object_get(parj, "expert"));
    if (!tmpl && !worker)
        return TPX_OK;
    if (worker) {
        json_t *lt =
            llmisvc_template(m, tmpl ? tmpl : worker, name, &par, tmpl != NULL, true, role, err);
        json_t *wt = lt ? llmisvc_template(m, worker, name, &par, false, true, role, err) : NULL;
        json_t *spec;

        /* ParallelismSpec.GetSize(): data parallel first, data / dataLocal (each at least 1,
         * the quotient at least 1), else pipeline when set; else LWS's default size 1 */
        if (par.data || par.data_local) {
            size = (par.data ? par.data : 1) / (par.data_local ? par.data_local : 1);
            if (size < 1)
                size = 1;
        } else if (par.pipeline) {
            size = par.pipeline;
        }
        spec = wt ? obj_mf_keep(m,
                                json_pack("{s:I,s:{s:I,s:O,s:O}}", "replicas", (json_int_t)replicas,
                                          "leaderWorkerTemplate", "size", (json_int_t)size,
                                          "leaderTemplate", lt, "workerTemplate", wt),
                                err)
                  : NULL;
        snprintf(lws, sizeof(lws), "%.120s-kserve-mn%s", name, prefill ? "-prefill" : "");
        return spec ? obj_mf_lws_pods(m, x, obj, lws, spec, NULL, err) : err->code;
    }
    {
        json_t *t = llmisvc_template(m, tmpl, name, &par, true, false, role, err);
        if (!t || obj_mf_add_tmpl(m, t, &x->tmpl, err) != TPX_OK ||
            obj_mf_reserve_pods(m, replicas, err) != TPX_OK)
            return err->code;
        for (unsigned long i = 0; i < replicas; i++) {
            if (obj_mf_new_replica(m, err) != TPX_OK)
                return err->code;
            obj_mf_new_pod(x, "%.120s-kserve%s-%lu", name, prefill ? "-prefill" : "", i);
        }
    }
    return TPX_OK;
}

/*
 * LLMInferenceService (serving.kserve.io/v1alpha2, kserve/kserve pkg/controller/llmisvc and
 * config/llmisvcconfig): the main workload (spec) and spec.prefill, each as llmisvc_workload()
 * expands it; the router, scheduler and gateway make no GPU pods. v1alpha1 is read the same.
 */
enum tpx_code obj_mf_expand_llmisvc(struct obj_manifest *m, const json_t *obj, const char *src,
                                    struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *model = json_string_value(json_object_get(json_object_get(spec, "model"), "name"));
    struct expander x = {m, src, 0, 0};

    bool has_prefill = json_is_object(json_object_get(spec, "prefill"));

    if (obj_mf_add_job(m, obj, "LLMInferenceService", src, &x.job, err) != TPX_OK ||
        llmisvc_workload(m, &x, obj, spec, model, false, has_prefill, err) != TPX_OK)
        return err->code;
    if (has_prefill && llmisvc_workload(m, &x, obj, json_object_get(spec, "prefill"), model, true,
                                        true, err) != TPX_OK) {
        tpx_err_prefix(err, "prefill");
        return err->code;
    }
    return TPX_OK;
}

/* A Grove topologyConstraint's pack.required (or preferred) domain as topox's pipeline scope:
 * rack, block and zone are topox's; NULL for the others (host, numa, region, datacenter). */
static const char *grove_scope(const json_t *tc, const char **domain)
{
    static const char *const known[] = {"rack", "block", "zone"};
    const json_t *pack = json_object_get(tc, "pack");
    const char *d = json_string_value(json_object_get(pack, "required"));

    if (!d)
        d = json_string_value(json_object_get(pack, "preferred"));
    *domain = d;
    for (size_t i = 0; d && i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(d, known[i]) == 0)
            return known[i];
    }
    return NULL;
}

/* The clique template named `name` of a PodCliqueSet template, or NULL. */
static const json_t *grove_clique(const json_t *cliques, const char *name)
{
    size_t i;
    const json_t *c;

    json_array_foreach(cliques, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

/* A clique's pod template: its labels and annotations, spec.podSpec. Owned by m. */
static enum tpx_code grove_tmpl(struct obj_manifest *m, const json_t *cl, size_t *out,
                                struct tpx_err *err)
{
    const json_t *labels = json_object_get(cl, "labels");
    const json_t *ann = json_object_get(cl, "annotations");
    json_t *t = obj_mf_keep(
        m,
        json_pack("{s:{s:o,s:o},s:O?}", "metadata", "labels",
                  json_is_object(labels) ? json_deep_copy(labels) : json_object(), "annotations",
                  json_is_object(ann) ? json_deep_copy(ann) : json_object(), "spec",
                  json_object_get(json_object_get(cl, "spec"), "podSpec")),
        err);

    return t ? obj_mf_add_tmpl(m, t, out, err) : err->code;
}

/* Grove's labels and env on pod k of PodClique pclq, as the operator sets them (api/common
 * labels.go; the PodClique's labels, which its pods inherit, in podcliqueset/ and
 * podcliquescalinggroup/components/podclique getLabels: app.kubernetes.io/name the PodClique,
 * component pcs-podclique or pcsg-podclique; the pod's own in podclique/components/pod getLabels;
 * the env of docs/user-guide naming-and-env-vars). pcsg NULL for a standalone clique. */
static void grove_pod(struct obj_manifest_pod *p, const char *pcs, unsigned long r,
                      const char *pclq, unsigned long k, const char *pcsg, unsigned long j,
                      unsigned long pcsg_pods, const char *ns)
{
    p->inj_mode = INJ_APPEND_REPLACE;
    obj_mf_extra(p, false, "app.kubernetes.io/managed-by", "grove-operator");
    obj_mf_extra(p, false, "app.kubernetes.io/part-of", "%.70s", pcs);
    obj_mf_extra(p, false, "app.kubernetes.io/name", "%.70s", pclq);
    obj_mf_extra(p, false, "app.kubernetes.io/component", "%s",
                 pcsg ? "pcsg-podclique" : "pcs-podclique");
    obj_mf_extra(p, false, "grove.io/podclique", "%.70s", pclq);
    obj_mf_extra(p, false, "grove.io/podcliqueset-replica-index", "%lu", r);
    obj_mf_extra(p, false, "grove.io/podclique-pod-index", "%lu", k);
    obj_mf_extra(p, false, "grove.io/podgang", "%.60s-%lu", pcs, r);
    if (pcsg) {
        obj_mf_extra(p, false, "grove.io/podcliquescalinggroup", "%.70s", pcsg);
        obj_mf_extra(p, false, "grove.io/podcliquescalinggroup-replica-index", "%lu", j);
    }
    obj_mf_inject(p, "GROVE_PCS_NAME", "%s", pcs);
    obj_mf_inject(p, "GROVE_PCS_INDEX", "%lu", r);
    obj_mf_inject(p, "GROVE_PCLQ_NAME", "%s", pclq);
    obj_mf_inject(p, "GROVE_HEADLESS_SERVICE", "%.80s-%lu.%.60s.svc.cluster.local", pcs, r, ns);
    obj_mf_inject(p, "GROVE_PCLQ_POD_INDEX", "%lu", k);
    if (pcsg) {
        obj_mf_inject(p, "GROVE_PCSG_NAME", "%s", pcsg);
        obj_mf_inject(p, "GROVE_PCSG_TEMPLATE_NUM_PODS", "%lu", pcsg_pods);
        obj_mf_inject(p, "GROVE_PCSG_INDEX", "%lu", j);
    }
}

/*
 * PodCliqueSet (grove.io/v1alpha1, ai-dynamo/grove operator/api and docs/user-guide): for each of
 * `replicas` r, each PodCliqueScalingGroup g (replicas R) gives R model instances, each the
 * cliques of g.cliqueNames as PodCliques `<pcs>-<r>-<g>-<j>-<clique>`; a clique in no scaling
 * group is a standalone PodClique `<pcs>-<r>-<clique>`. Pod k of a PodClique is named by its
 * host name `<pclq>-<k>` (Grove gives the pod itself a random suffix). An instance of a scaling
 * group is one group (topox.io/group, group-size, pod-index across its cliques); a standalone
 * clique's pods stand alone. The scaling group's (else the set's) topologyConstraint
 * pack.required rack/block/zone becomes topox.io/pipeline-scope; other domains are a note.
 */
enum tpx_code obj_mf_expand_pcs(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *tmpl = json_object_get(spec, "template");
    const json_t *cliques = json_object_get(tmpl, "cliques");
    const json_t *sgs = json_object_get(tmpl, "podCliqueScalingGroups");
    const char *pcs = obj_mf_obj_name(obj);
    const char *pcs_dom = NULL;
    const char *pcs_scope = grove_scope(json_object_get(tmpl, "topologyConstraint"), &pcs_dom);
    struct expander x = {m, src, 0, 0};
    unsigned long reps;
    size_t *ct;
    size_t i;
    const json_t *cl;
    enum tpx_code rc = TPX_OK;

    if (!json_is_array(cliques) || json_array_size(cliques) == 0) {
        m->err_at = cliques ? cliques : tmpl ? tmpl : spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.template.cliques is missing or empty");
    }
    if (obj_mf_get_count(m, spec, "replicas", 1, &reps, err) != TPX_OK ||
        obj_mf_add_job(m, obj, "PodCliqueSet", src, &x.job, err) != TPX_OK)
        return err->code;
    ct = calloc(json_array_size(cliques), sizeof(*ct));
    if (!ct)
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    json_array_foreach(cliques, i, cl)
    {
        m->err_at = cl;
        if (grove_tmpl(m, cl, &ct[i], err) != TPX_OK) {
            rc = err->code;
            goto out;
        }
    }
    for (unsigned long r = 0; r < reps; r++) {
        size_t g;
        const json_t *sg;

        /* standalone cliques: those no scaling group names */
        json_array_foreach(cliques, i, cl)
        {
            const char *cn = json_string_value(json_object_get(cl, "name"));
            bool grouped = false;
            unsigned long n;
            char pclq[192];
            size_t gg;
            const json_t *s2;

            json_array_foreach(sgs, gg, s2)
            {
                size_t q;
                const json_t *nm;
                json_array_foreach(json_object_get(s2, "cliqueNames"), q, nm)
                {
                    grouped = grouped || (cn && json_string_value(nm) &&
                                          strcmp(cn, json_string_value(nm)) == 0);
                }
            }
            if (grouped || !cn)
                continue;
            m->err_at = cl;
            if (obj_mf_get_count(m, json_object_get(cl, "spec"), "replicas", 1, &n, err) !=
                    TPX_OK ||
                obj_mf_reserve_pods(m, n, err) != TPX_OK) {
                rc = err->code;
                goto out;
            }
            snprintf(pclq, sizeof(pclq), "%.80s-%lu-%.80s", pcs, r, cn);
            x.tmpl = ct[i];
            for (unsigned long k = 0; k < n; k++) {
                if (obj_mf_new_replica(m, err) != TPX_OK) {
                    rc = err->code;
                    goto out;
                }
                grove_pod(obj_mf_new_pod(&x, "%s-%lu", pclq, k), pcs, r, pclq, k, NULL, 0, 0,
                          obj_mf_obj_ns(obj));
            }
        }
        json_array_foreach(sgs, g, sg)
        {
            const char *gn = json_string_value(json_object_get(sg, "name"));
            const char *dom = NULL;
            const char *scope = grove_scope(json_object_get(sg, "topologyConstraint"), &dom);
            unsigned long sreps;
            unsigned long total = 0;
            char pcsg[192];
            size_t q;
            const json_t *nm;

            m->err_at = sg;
            if (!gn || obj_mf_get_count(m, sg, "replicas", 1, &sreps, err) != TPX_OK) {
                rc = gn ? err->code
                        : tpx_err_set(err, TPX_EINVAL,
                                      "podCliqueScalingGroups[%zu]: name is "
                                      "missing",
                                      g);
                goto out;
            }
            if (!dom) {
                scope = pcs_scope;
                dom = pcs_dom;
            }
            if (dom && !scope && r == 0)
                obj_mf_add_note(
                    m,
                    "%s: PodCliqueSet '%s' scaling group '%s': pack %s is no level topox "
                    "places by; kept as a constraint it does not check",
                    src, pcs, gn, dom);
            snprintf(pcsg, sizeof(pcsg), "%.80s-%lu-%.80s", pcs, r, gn);
            json_array_foreach(json_object_get(sg, "cliqueNames"), q, nm)
            {
                const json_t *c =
                    grove_clique(cliques, json_string_value(nm) ? json_string_value(nm) : "");
                unsigned long n;
                if (!c) {
                    rc = tpx_err_set(err, TPX_EINVAL, "scaling group '%s': no clique '%s'", gn,
                                     json_string_value(nm) ? json_string_value(nm) : "?");
                    goto out;
                }
                if (obj_mf_get_count(m, json_object_get(c, "spec"), "replicas", 1, &n, err) !=
                    TPX_OK) {
                    rc = err->code;
                    goto out;
                }
                total += n;
            }
            if (sreps && total > OBJ_MANIFEST_MAX_PODS / sreps) {
                rc = tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all",
                                 OBJ_MANIFEST_MAX_PODS);
                goto out;
            }
            if (obj_mf_reserve_pods(m, sreps * total, err) != TPX_OK) {
                rc = err->code;
                goto out;
            }
            for (unsigned long j = 0; j < sreps; j++) {
                char gkey[EXTRA_LEN];
                int gl;
                unsigned long idx = 0;

                gl = snprintf(gkey, sizeof(gkey), "%.60s/%.150s-%lu", obj_mf_obj_ns(obj), pcsg, j);
                if (gl < 0 || (size_t)gl >= sizeof(gkey))
                    obj_mf_hash_key(gkey, obj_mf_obj_ns(obj), pcsg, j);
                if (total && obj_mf_new_replica(m, err) != TPX_OK) {
                    rc = err->code;
                    goto out;
                }
                json_array_foreach(json_object_get(sg, "cliqueNames"), q, nm)
                {
                    const char *cn = json_string_value(nm);
                    const json_t *c = grove_clique(cliques, cn);
                    unsigned long n;
                    char pclq[256];
                    size_t ci;
                    const json_t *cc;

                    (void)obj_mf_get_count(m, json_object_get(c, "spec"), "replicas", 1, &n, err);
                    json_array_foreach(cliques, ci, cc)
                    {
                        if (cc == c)
                            x.tmpl = ct[ci];
                    }
                    snprintf(pclq, sizeof(pclq), "%.150s-%lu-%.80s", pcsg, j, cn);
                    for (unsigned long k = 0; k < n; k++, idx++) {
                        struct obj_manifest_pod *p = obj_mf_new_pod(&x, "%s-%lu", pclq, k);
                        grove_pod(p, pcs, r, pclq, k, pcsg, j, total, obj_mf_obj_ns(obj));
                        obj_mf_extra(p, true, "topox.io/group", "%s", gkey);
                        obj_mf_extra(p, true, "topox.io/group-size", "%lu", total);
                        obj_mf_extra(p, true, "topox.io/pod-index", "%lu", idx);
                        if (scope)
                            obj_mf_extra(p, true, "topox.io/pipeline-scope", "%s", scope);
                    }
                }
            }
        }
    }
out:
    free(ct);
    return rc;
}
