/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_manifests.c - `kubectl kustomize manifests/` renders, and what it
 * renders obeys the rules: the scheduler config passes kube-scheduler's extender validation
 * (docs/extender-protocol.md section 4), RBAC grants nothing beyond the documented list, the
 * labeler's admission policy holds it to its own Node and its own keys, the namespace is no more
 * privileged than the labeler's /sys needs (docs/security.md), and every flag handed to `topox`
 * exists in the built binary's --help. The checkers are also run on broken input, so a checker
 * that stops checking fails here too. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/buf.h"
#include "objects/label_patch.h"
#include "objects/yamljson.h"
#include "topology/labels.h"

#define MANIFESTS TPX_SOURCE_DIR "/manifests"

/* ---- running things ---------------------------------------------------------------------- */

/* stdout of a shell command, or NULL when it cannot run or exits non-zero. */
static char *run(const char *cmd, int *status)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    char chunk[4096];
    size_t n;
    FILE *p = popen(cmd, "r");
    int st;

    *status = -1;
    if (!p)
        return NULL;
    tpx_buf_init(&b, (size_t)64 << 20);
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        tpx_buf_add(&b, chunk, n, &err);
    st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    return tpx_buf_detach(&b, NULL);
}

static int have_kubectl(void)
{
    int st;
    char *out = run("command -v kubectl", &st);

    free(out);
    return st == 0;
}

static struct obj_yaml_docs render(const char *dir)
{
    struct obj_yaml_docs d = {0};
    struct tpx_err err = TPX_ERR_INIT;
    char cmd[1024];
    char *out;
    int st;

    cr_assert(have_kubectl(), "kubectl is not installed: this test renders the manifests with "
                              "`kubectl kustomize` (CI installs it; so should you)");
    snprintf(cmd, sizeof(cmd), "kubectl kustomize '%s' 2>&1", dir);
    out = run(cmd, &st);
    cr_assert_not_null(out);
    cr_assert_eq(st, 0, "kubectl kustomize %s failed:\n%s", dir, out);
    cr_assert_eq(obj_yaml_parse(out, strlen(out), "kustomize-output", &d, &err), TPX_OK, "%s",
                 err.msg);
    free(out);
    return d;
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const char *kind_of(json_t *o)
{
    return str(o, "kind") ? str(o, "kind") : "";
}

static const char *name_of(json_t *o)
{
    const char *n = str(json_object_get(o, "metadata"), "name");

    return n ? n : "";
}

static json_t *find(struct obj_yaml_docs *d, const char *kind, const char *name)
{
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(kind_of(d->docs[i]), kind) == 0 && strcmp(name_of(d->docs[i]), name) == 0)
            return d->docs[i];
    }
    return NULL;
}

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++) {
        if (strcmp(s, *list) == 0)
            return true;
    }
    return false;
}

/* ---- the scheduler configuration --------------------------------------------------------- */

#define S(x) ((x) ? (x) : "")

static void add_problem(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_problem(char *out, size_t size, const char *fmt, ...)
{
    size_t n = strlen(out);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out + n, size - n, fmt, ap);
    va_end(ap);
    n = strlen(out);
    snprintf(out + n, size - n, "; ");
}

/* An extended resource: "domain/name", domain not kubernetes.io, a qualified name. */
static bool is_extended_resource(const char *s)
{
    const char *slash = strchr(s, '/');

    if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
        return false;
    if (strncmp(s, "kubernetes.io/", 14) == 0 || strstr(s, ".kubernetes.io/") ||
        strncmp(s, "requests.", 9) == 0)
        return false;
    for (const char *p = s; *p; p++) {
        if (!isalnum((unsigned char)*p) && !strchr("-._/", *p))
            return false;
    }
    return true;
}

static bool is_duration(const char *s)
{
    size_t i = 0;

    while (isdigit((unsigned char)s[i]))
        i++;
    return i > 0 &&
           (strcmp(s + i, "s") == 0 || strcmp(s + i, "ms") == 0 || strcmp(s + i, "m") == 0);
}

/* Every rule of extender-protocol.md section 4 we can check offline. problems: "" when none. */
static void check_scheduler_config(json_t *cfg, const char *listen, char *problems, size_t size)
{
    static const char *const top_keys[] = {"apiVersion",
                                           "kind",
                                           "parallelism",
                                           "leaderElection",
                                           "clientConnection",
                                           "healthzBindAddress",
                                           "metricsBindAddress",
                                           "enableProfiling",
                                           "enableContentionProfiling",
                                           "percentageOfNodesToScore",
                                           "podInitialBackoffSeconds",
                                           "podMaxBackoffSeconds",
                                           "profiles",
                                           "extenders",
                                           "delayCacheUntilActive",
                                           NULL};
    static const char *const ext_keys[] = {
        "urlPrefix",        "filterVerb",  "preemptVerb", "prioritizeVerb", "weight",
        "bindVerb",         "enableHTTPS", "tlsConfig",   "httpTimeout",    "nodeCacheCapable",
        "managedResources", "ignorable",   NULL};
    static const char *const le_keys[] = {
        "leaderElect",  "leaseDuration", "renewDeadline",     "retryPeriod",
        "resourceLock", "resourceName",  "resourceNamespace", NULL};
    json_t *le = json_object_get(cfg, "leaderElection");
    json_t *exts = json_object_get(cfg, "extenders");
    json_t *profiles = json_object_get(cfg, "profiles");
    json_t *seen = json_object();
    const char *key;
    json_t *v;
    size_t i;
    json_t *e;
    int binders = 0;

    problems[0] = '\0';
    if (!str(cfg, "apiVersion") || strcmp(str(cfg, "apiVersion"), "kubescheduler.config.k8s.io/v1"))
        add_problem(problems, size, "apiVersion is not kubescheduler.config.k8s.io/v1");
    json_object_foreach(cfg, key, v)
    {
        if (!in_list(key, top_keys))
            add_problem(problems, size, "unknown key '%s' (the decoder is strict)", S(key));
    }
    json_object_foreach(le, key, v)
    {
        if (!in_list(key, le_keys))
            add_problem(problems, size, "unknown leaderElection key '%s'", S(key));
    }
    if (!json_is_false(json_object_get(le, "leaderElect"))) {
        const char *rn = str(le, "resourceName");
        const char *lock = str(le, "resourceLock");

        if (!rn || !*rn || strcmp(rn, "kube-scheduler") == 0)
            add_problem(problems, size,
                        "leader election needs its own resourceName, not the default "
                        "scheduler's");
        if (lock && strcmp(lock, "leases") != 0)
            add_problem(problems, size, "resourceLock must be leases, not '%s'", S(lock));
    }
    if (json_integer_value(json_object_get(cfg, "percentageOfNodesToScore")) != 100)
        add_problem(problems, size, "percentageOfNodesToScore must be 100");
    if (json_array_size(profiles) == 0)
        add_problem(problems, size, "no profiles");
    json_array_foreach(profiles, i, e)
    {
        const char *sn = str(e, "schedulerName");

        if (!sn || !*sn)
            add_problem(problems, size, "a profile without schedulerName");
    }
    if (json_array_size(exts) == 0)
        add_problem(problems, size, "no extenders");
    json_array_foreach(exts, i, e)
    {
        const char *url = str(e, "urlPrefix");
        const char *timeout = str(e, "httpTimeout");
        json_t *mr = json_object_get(e, "managedResources");
        json_t *r;
        size_t j;

        json_object_foreach(e, key, v)
        {
            if (!in_list(key, ext_keys))
                add_problem(problems, size, "unknown extender key '%s'", S(key));
        }
        if (str(e, "prioritizeVerb") && json_integer_value(json_object_get(e, "weight")) <= 0)
            add_problem(problems, size,
                        "prioritizeVerb '%s' must have a positive weight applied to it",
                        S(str(e, "prioritizeVerb")));
        if (str(e, "bindVerb") && *str(e, "bindVerb"))
            binders++;
        if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
            add_problem(problems, size, "urlPrefix '%s' needs a scheme", S(url));
        else if (json_is_true(json_object_get(e, "enableHTTPS")) && strncmp(url, "https://", 8))
            add_problem(problems, size, "enableHTTPS with urlPrefix '%s' (write https://)", S(url));
        if (url && listen) {
            char want[300];

            snprintf(want, sizeof(want), "http://%s", listen);
            if (strcmp(url, want) != 0)
                add_problem(problems, size, "urlPrefix '%s' is not where topox listens (%s)", url,
                            listen);
        }
        if (timeout && !is_duration(timeout))
            add_problem(problems, size, "httpTimeout '%s' is not a duration like 10s", S(timeout));
        json_array_foreach(mr, j, r)
        {
            const char *n = str(r, "name");

            json_object_foreach(r, key, v)
            {
                if (strcmp(key, "name") != 0 && strcmp(key, "ignoredByScheduler") != 0)
                    add_problem(problems, size, "unknown managedResources key '%s'", S(key));
            }
            if (!n || !is_extended_resource(n))
                add_problem(problems, size, "managed resource '%s' is not an extended resource",
                            S(n));
            else if (json_object_get(seen, n))
                add_problem(problems, size, "duplicate extender managed resource name '%s'", S(n));
            else
                json_object_set_new(seen, n, json_true());
        }
    }
    if (binders > 1)
        add_problem(problems, size, "only one extender can implement bind");
    json_decref(seen);
}

static json_t *topox_container(json_t *workload)
{
    json_t *cs = json_object_get(
        json_object_get(json_object_get(json_object_get(workload, "spec"), "template"), "spec"),
        "containers");
    json_t *c;
    size_t i;

    json_array_foreach(cs, i, c)
    {
        const char *img = str(c, "image");

        if (img && strstr(img, "topox"))
            return c;
    }
    return NULL;
}

/* The value of --listen in a container's args. */
static const char *listen_of(json_t *c)
{
    json_t *args = json_object_get(c, "args");
    json_t *a;
    size_t i;

    json_array_foreach(args, i, a)
    {
        const char *s = json_string_value(a);

        if (s && strncmp(s, "--listen=", 9) == 0)
            return s + 9;
        if (s && strcmp(s, "--listen") == 0)
            return json_string_value(json_array_get(args, i + 1));
    }
    return NULL;
}

static json_t *scheduler_config(struct obj_yaml_docs *d, struct obj_yaml_docs *inner)
{
    json_t *cm = find(d, "ConfigMap", "topox-scheduler-config");
    const char *text = str(json_object_get(cm, "data"), "config.yaml");
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_not_null(text, "no ConfigMap topox-scheduler-config with data.config.yaml");
    cr_assert_eq(obj_yaml_parse(text, strlen(text), "config.yaml", inner, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(inner->n, 1);
    return inner->docs[0];
}

Test(ext_manifests, scheduler_config_obeys_the_validation_rules)
{
    struct obj_yaml_docs d = render(MANIFESTS);
    struct obj_yaml_docs inner = {0};
    json_t *cfg = scheduler_config(&d, &inner);
    json_t *deploy = find(&d, "Deployment", "topox-scheduler");
    json_t *c = topox_container(deploy);
    json_t *profiles = json_object_get(cfg, "profiles");
    char problems[4096];

    cr_assert_not_null(c, "no topox container in Deployment topox-scheduler");
    check_scheduler_config(cfg, listen_of(c), problems, sizeof(problems));
    cr_expect_str_eq(problems, "");
    cr_expect_str_eq(str(json_array_get(profiles, 0), "schedulerName"), "topox-scheduler");
    cr_expect(json_is_true(
        json_object_get(json_array_get(json_object_get(cfg, "extenders"), 0), "nodeCacheCapable")));
    obj_yaml_docs_release(&inner);
    obj_yaml_docs_release(&d);
}

Test(ext_manifests, the_config_checker_catches_each_rule)
{
    static const struct {
        const char *yaml;
        const char *needle;
    } cases[] = {
        {"weight: 0\n", "positive weight"},
        {"enableHttps: true\n", "unknown extender key 'enableHttps'"},
        {"managedResources: [{name: cpu}]\n", "'cpu' is not an extended resource"},
        {"managedResources: [{name: nvidia.com/gpu}, {name: nvidia.com/gpu}]\n", "duplicate"},
        {"httpTimeout: 10000000000\n", "unknown extender key"}, /* replaced below */
        {"urlPrefix: 'http://127.0.0.1:9999'\n", "not where topox listens"},
    };
    const char *base = "apiVersion: kubescheduler.config.k8s.io/v1\n"
                       "kind: KubeSchedulerConfiguration\n"
                       "leaderElection: {leaderElect: true, resourceName: kube-scheduler}\n"
                       "percentageOfNodesToScore: 50\n"
                       "profiles: [{schedulerName: s}]\n"
                       "extenders:\n"
                       "- {urlPrefix: 'http://127.0.0.1:8888', bindVerb: bind}\n"
                       "- urlPrefix: 'http://127.0.0.1:8888'\n"
                       "  prioritizeVerb: prioritize\n"
                       "  bindVerb: bind\n";

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[2048];
        struct obj_yaml_docs d = {0};
        struct tpx_err err = TPX_ERR_INIT;
        char problems[4096];
        const char *p = cases[i].yaml;
        char line[256];

        /* The case's keys become more keys of the second extender. */
        snprintf(line, sizeof(line), "  %s", p);
        snprintf(yaml, sizeof(yaml), "%s%s", base, line);
        if (i == 4)
            snprintf(yaml, sizeof(yaml), "%s  httpTimeout: '10000000000'\n", base);
        cr_assert_eq(obj_yaml_parse(yaml, strlen(yaml), "bad.yaml", &d, &err), TPX_OK, "%s\n%s",
                     err.msg, yaml);
        check_scheduler_config(d.docs[0], "127.0.0.1:8888", problems, sizeof(problems));
        cr_expect(strstr(problems, i == 4 ? "not a duration" : cases[i].needle) != NULL,
                  "case %zu: %s", i, problems);
        /* The base itself breaks three more rules, each reported. */
        cr_expect(strstr(problems, "own resourceName") != NULL, "%s", problems);
        cr_expect(strstr(problems, "percentageOfNodesToScore") != NULL, "%s", problems);
        cr_expect(strstr(problems, "only one extender can implement bind") != NULL, "%s", problems);
        obj_yaml_docs_release(&d);
    }
}

/* ---- RBAC -------------------------------------------------------------------------------- */

/* What each role may do: group, resource, verbs (space separated), resourceNames (NULL: any). */
struct grant {
    const char *role;
    const char *group;
    const char *resource;
    const char *verbs;
    const char *names;
};

static const struct grant grants[] = {
    /* exactly the calls of `topox serve`: kube/watch.c lists and watches, kube/bodies.c POSTs */
    {"topox-extender", "", "nodes", " list watch ", NULL},
    {"topox-extender", "", "pods", " list watch ", NULL},
    {"topox-extender", "scheduling.k8s.io", "podgroups", " list watch ", NULL},
    {"topox-extender", "resource.k8s.io", "resourceslices", " list watch ", NULL},
    {"topox-extender", "resource.k8s.io", "resourceclaims", " list watch ", NULL},
    {"topox-extender", "resource.k8s.io", "deviceclasses", " list watch ", NULL},
    {"topox-extender", "resource.nvidia.com", "computedomains", " list watch ", NULL},
    {"topox-extender", "", "pods/binding", " create ", NULL},
    /* extender/nominate.c: status.nominatedNodeName of a held group's pending members */
    {"topox-extender", "", "pods/status", " patch ", NULL},
    {"topox-extender", "", "events", " create ", NULL},
    /* cli/cmd_label.c: GET the own Node, then one merge PATCH (narrowed by the policy below) */
    {"topox-labeler", "", "nodes", " get patch ", NULL},
    {"topox-scheduler-lease", "coordination.k8s.io", "leases", " create ", NULL},
    {"topox-scheduler-lease", "coordination.k8s.io", "leases", " get update ", " topox-scheduler "},
};

/* Which role may be bound to which of our service accounts (system roles: the scheduler's). */
static const char *const bindings[][2] = {
    {"system:kube-scheduler", "topox-scheduler"},
    {"system:volume-scheduler", "topox-scheduler"},
    {"extension-apiserver-authentication-reader", "topox-scheduler"},
    {"topox-extender", "topox-scheduler"},
    {"topox-scheduler-lease", "topox-scheduler"},
    {"topox-labeler", "topox-labeler"},
};

static bool word_in(const char *word, const char *spaced)
{
    char w[128];

    snprintf(w, sizeof(w), " %s ", word);
    return strstr(spaced, w) != NULL;
}

static bool granted(const char *role, const char *group, const char *res, const char *verb,
                    json_t *names)
{
    for (size_t i = 0; i < sizeof(grants) / sizeof(grants[0]); i++) {
        const struct grant *g = &grants[i];
        json_t *n;
        size_t j;
        bool ok = true;

        if (strcmp(g->role, role) || strcmp(g->group, group) || strcmp(g->resource, res) ||
            !word_in(verb, g->verbs))
            continue;
        if (!g->names)
            return true;
        if (json_array_size(names) == 0)
            continue;
        json_array_foreach(names, j, n)
        {
            if (!json_is_string(n) || !word_in(json_string_value(n), g->names))
                ok = false;
        }
        if (ok)
            return true;
    }
    return false;
}

static void check_rbac(struct obj_yaml_docs *d, char *problems, size_t size)
{
    problems[0] = '\0';
    for (size_t i = 0; i < d->n; i++) {
        json_t *o = d->docs[i];
        const char *k = kind_of(o);

        if (strcmp(k, "ClusterRole") == 0 || strcmp(k, "Role") == 0) {
            json_t *rules = json_object_get(o, "rules");
            json_t *r;
            size_t j;

            if (json_object_get(o, "aggregationRule"))
                add_problem(problems, size, "%s aggregates other roles", name_of(o));
            json_array_foreach(rules, j, r)
            {
                json_t *gs = json_object_get(r, "apiGroups");
                json_t *rs = json_object_get(r, "resources");
                json_t *vs = json_object_get(r, "verbs");
                json_t *g, *res, *v;
                size_t a, b, c;

                if (json_object_get(r, "nonResourceURLs"))
                    add_problem(problems, size, "%s grants nonResourceURLs", name_of(o));
                json_array_foreach(gs, a, g)
                {
                    json_array_foreach(rs, b, res)
                    {
                        json_array_foreach(vs, c, v)
                        {
                            if (!granted(name_of(o), json_string_value(g), json_string_value(res),
                                         json_string_value(v),
                                         json_object_get(r, "resourceNames"))) {
                                char what[256];

                                snprintf(what, sizeof(what), "%s on %s/%s", json_string_value(v),
                                         json_string_value(g), json_string_value(res));
                                add_problem(problems, size, "%s grants %s beyond the list",
                                            name_of(o), what);
                            }
                        }
                    }
                }
            }
        } else if (strcmp(k, "ClusterRoleBinding") == 0 || strcmp(k, "RoleBinding") == 0) {
            const char *role = str(json_object_get(o, "roleRef"), "name");
            json_t *subs = json_object_get(o, "subjects");
            json_t *s;
            size_t j;

            json_array_foreach(subs, j, s)
            {
                const char *sa = str(s, "name");
                bool ok = false;

                if (!str(s, "kind") || strcmp(str(s, "kind"), "ServiceAccount") ||
                    !str(s, "namespace") || strcmp(str(s, "namespace"), "topox-system")) {
                    add_problem(problems, size,
                                "%s binds a subject that is not one of our "
                                "service accounts",
                                name_of(o));
                    continue;
                }
                for (size_t b = 0; b < sizeof(bindings) / sizeof(bindings[0]); b++) {
                    if (role && strcmp(bindings[b][0], role) == 0 &&
                        strcmp(bindings[b][1], sa) == 0)
                        ok = true;
                }
                if (!ok)
                    add_problem(problems, size,
                                "%s gives %s to a service account not on the "
                                "list",
                                name_of(o), S(role));
            }
        }
    }
}

Test(ext_manifests, rbac_grants_nothing_beyond_the_list)
{
    struct obj_yaml_docs d = render(MANIFESTS);
    char problems[4096];

    check_rbac(&d, problems, sizeof(problems));
    cr_expect_str_eq(problems, "");
    cr_expect_not_null(find(&d, "ServiceAccount", "topox-scheduler"));
    cr_expect_not_null(find(&d, "ServiceAccount", "topox-labeler"));
    cr_expect_not_null(find(&d, "Role", "topox-scheduler-lease"));
    obj_yaml_docs_release(&d);
}

Test(ext_manifests, the_rbac_checker_catches_extra_grants)
{
    static const char *const bad[] = {
        "kind: ClusterRole\nmetadata: {name: topox-labeler}\n"
        "rules: [{apiGroups: [''], resources: [nodes], verbs: [get, patch, delete]}]\n",
        "kind: ClusterRole\nmetadata: {name: topox-extender}\n"
        "rules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n",
        "kind: ClusterRole\nmetadata: {name: topox-extender}\n"
        "rules: [{apiGroups: [''], resources: [nodes], verbs: [get, list, watch]}]\n",
        "kind: ClusterRole\nmetadata: {name: topox-extender}\n"
        "rules: [{apiGroups: [''], resources: [events], verbs: [create, patch]}]\n",
        "kind: Role\nmetadata: {name: topox-scheduler-lease}\n"
        "rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [update]}]\n",
        "kind: ClusterRoleBinding\nmetadata: {name: x}\nroleRef: {name: cluster-admin}\n"
        "subjects: [{kind: ServiceAccount, name: topox-scheduler, namespace: topox-system}]\n",
        "kind: ClusterRoleBinding\nmetadata: {name: x}\nroleRef: {name: system:kube-scheduler}\n"
        "subjects: [{kind: ServiceAccount, name: topox-labeler, namespace: topox-system}]\n",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct obj_yaml_docs d = {0};
        struct tpx_err err = TPX_ERR_INIT;
        char problems[4096];

        cr_assert_eq(obj_yaml_parse(bad[i], strlen(bad[i]), "bad.yaml", &d, &err), TPX_OK, "%s",
                     err.msg);
        check_rbac(&d, problems, sizeof(problems));
        cr_expect_str_neq(problems, "", "case %zu passed the checker", i);
        obj_yaml_docs_release(&d);
    }
}

/* ---- the labeler's admission policy ----------------------------------------------------- */

#define LABELER_POLICY "topox-labeler-own-node"

static json_t *pod_spec(json_t *workload)
{
    return json_object_get(json_object_get(json_object_get(workload, "spec"), "template"), "spec");
}

static bool has_string(json_t *arr, const char *s)
{
    json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

/* Every deciding CEL expression of the policy (match conditions, variables, validations; not the
 * messages) in one malloc'd string, so a check can ask whether the policy speaks of a key. */
static char *policy_cel(json_t *spec)
{
    static const char *const lists[] = {"matchConditions", "variables", "validations"};
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;

    tpx_buf_init(&b, (size_t)1 << 20);
    tpx_buf_adds(&b, "", &err);
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        json_t *e;
        size_t i;

        json_array_foreach(json_object_get(spec, lists[l]), i, e)
        {
            if (str(e, "expression")) {
                tpx_buf_adds(&b, str(e, "expression"), &err);
                tpx_buf_adds(&b, "\n", &err);
            }
        }
    }
    return tpx_buf_detach(&b, NULL);
}

/* The labeler's service-account username, from the rendered DaemonSet. */
static void labeler_user(struct obj_yaml_docs *d, char *out, size_t size)
{
    json_t *ds = find(d, "DaemonSet", "topox-labeler");

    snprintf(out, size, "system:serviceaccount:%s:%s",
             S(str(json_object_get(ds, "metadata"), "namespace")),
             S(str(pod_spec(ds), "serviceAccountName")));
}

/* The rules of manifests/labeler-policy.yaml that can be checked without an API server: the
 * policy exists, fails closed, matches Node writes of exactly the labeler's account, compares
 * with the token's node and speaks of every key `topox label` may and may not write; and a
 * binding enforces it (Deny) without narrowing it. problems: "" when none. */
static void check_labeler_policy(struct obj_yaml_docs *d, const char *user, char *problems,
                                 size_t size)
{
    const struct obj_label_scope *inv = obj_label_scope_inventory();
    json_t *vap = find(d, "ValidatingAdmissionPolicy", LABELER_POLICY);
    json_t *spec = json_object_get(vap, "spec");
    json_t *rules = json_object_get(json_object_get(spec, "matchConstraints"), "resourceRules");
    json_t *conds = json_object_get(spec, "matchConditions");
    json_t *r;
    size_t i;
    bool node_update = false;
    bool bound = false;
    char want[400];
    char *cel;

    problems[0] = '\0';
    if (!vap) {
        add_problem(problems, size, "no ValidatingAdmissionPolicy %s", LABELER_POLICY);
        return;
    }
    if (strcmp(S(str(vap, "apiVersion")), "admissionregistration.k8s.io/v1") != 0)
        add_problem(problems, size, "the policy is not admissionregistration.k8s.io/v1");
    if (strcmp(S(str(spec, "failurePolicy")), "Fail") != 0)
        add_problem(problems, size, "failurePolicy must be Fail (an error must deny)");
    if (json_object_get(spec, "paramKind"))
        add_problem(problems, size, "the policy takes no parameters");
    json_array_foreach(rules, i, r)
    {
        json_t *ops = json_object_get(r, "operations");

        if (has_string(json_object_get(r, "apiGroups"), "") &&
            has_string(json_object_get(r, "resources"), "nodes") &&
            (has_string(ops, "UPDATE") || has_string(ops, "*")))
            node_update = true;
    }
    if (!node_update)
        add_problem(problems, size, "the policy does not match UPDATE of nodes");
    snprintf(want, sizeof(want), "request.userInfo.username == '%s'", user);
    if (json_array_size(conds) != 1 ||
        !strstr(S(str(json_array_get(conds, 0), "expression")), want))
        add_problem(problems, size, "the one matchCondition must be %s", want);
    cel = policy_cel(spec);
    {
        const char *needles[] = {"'authentication.kubernetes.io/node-name'",
                                 "request.name",
                                 "request.?subResource.orValue('') == ''",
                                 "'" TOPO_LABEL_PREFIX "'",
                                 "'" TOPO_ANNOTATION_TOPOLOGY "'",
                                 "object.?spec == oldObject.?spec",
                                 "object.?status == oldObject.?status",
                                 "ownerReferences",
                                 "finalizers"};

        for (size_t n = 0; n < sizeof(needles) / sizeof(needles[0]); n++) {
            if (!strstr(cel, needles[n]))
                add_problem(problems, size, "the policy never mentions %s", needles[n]);
        }
        /* The inventory keys are an admin's, not the per-node run's (objects/label_patch.c). */
        for (size_t k = 0; k < inv->n_only; k++) {
            snprintf(want, sizeof(want), "'%s'", inv->only[k]);
            if (!strstr(cel, want))
                add_problem(problems, size, "the policy lets the labeler change %s", want);
        }
    }
    free(cel);
    for (i = 0; i < d->n; i++) {
        json_t *bs = json_object_get(d->docs[i], "spec");

        if (strcmp(kind_of(d->docs[i]), "ValidatingAdmissionPolicyBinding") != 0 ||
            strcmp(S(str(bs, "policyName")), LABELER_POLICY) != 0)
            continue;
        bound = true;
        if (!has_string(json_object_get(bs, "validationActions"), "Deny"))
            add_problem(problems, size, "binding %s does not Deny", name_of(d->docs[i]));
        if (json_object_get(bs, "matchResources") || json_object_get(bs, "paramRef"))
            add_problem(problems, size, "binding %s narrows the policy", name_of(d->docs[i]));
    }
    if (!bound)
        add_problem(problems, size, "no ValidatingAdmissionPolicyBinding for %s", LABELER_POLICY);
}

Test(ext_manifests, the_labeler_is_held_to_its_own_node)
{
    struct obj_yaml_docs d = render(MANIFESTS);
    json_t *ds = find(&d, "DaemonSet", "topox-labeler");
    json_t *role = find(&d, "ClusterRole", "topox-labeler");
    json_t *rule = json_array_get(json_object_get(role, "rules"), 0);
    char user[300];
    char problems[4096];

    cr_assert_not_null(ds);
    labeler_user(&d, user, sizeof(user));
    cr_expect_str_eq(user, "system:serviceaccount:topox-system:topox-labeler");
    check_labeler_policy(&d, user, problems, sizeof(problems));
    cr_expect_str_eq(problems, "");
    /* The policy needs the pod's bound token (it carries the node name). */
    cr_expect(!json_is_false(json_object_get(pod_spec(ds), "automountServiceAccountToken")));
    /* Exactly get and patch on nodes: no update (a PUT could replace the whole Node), no list. */
    cr_assert_not_null(role);
    cr_expect_eq(json_array_size(json_object_get(role, "rules")), 1);
    cr_expect_eq(json_array_size(json_object_get(rule, "verbs")), 2);
    cr_expect(has_string(json_object_get(rule, "verbs"), "get"));
    cr_expect(has_string(json_object_get(rule, "verbs"), "patch"));
    obj_yaml_docs_release(&d);
}

/* Each case breaks the rendered policy or its binding in one way. */
static void break_policy(struct obj_yaml_docs *d, int which)
{
    json_t *vap = find(d, "ValidatingAdmissionPolicy", LABELER_POLICY);
    json_t *spec = json_object_get(vap, "spec");
    json_t *bind = find(d, "ValidatingAdmissionPolicyBinding", LABELER_POLICY);
    json_t *vars = json_object_get(spec, "variables");
    json_t *v;
    size_t i;

    switch (which) {
    case 0:
        json_object_set_new(spec, "failurePolicy", json_string("Ignore"));
        break;
    case 1:
        json_object_set_new(json_array_get(json_object_get(spec, "matchConditions"), 0),
                            "expression",
                            json_string("request.userInfo.username == "
                                        "'system:serviceaccount:kube-system:topox-labeler'"));
        break;
    case 2:
        json_object_set_new(json_object_get(bind, "spec"), "validationActions",
                            json_pack("[s]", "Warn"));
        break;
    case 3: /* forget the inventory keys */
        json_array_foreach(vars, i, v)
        {
            if (strstr(S(str(v, "expression")), "topox.io/rack"))
                json_object_set_new(v, "expression", json_string("[]"));
        }
        break;
    case 4:
        json_object_set_new(json_object_get(bind, "spec"), "policyName", json_string("other"));
        break;
    default:
        json_object_del(json_object_get(vap, "metadata"), "name");
        break;
    }
}

Test(ext_manifests, the_policy_checker_catches_each_gap)
{
    static const char *const needles[] = {
        "failurePolicy must be Fail",
        "matchCondition must be request.userInfo.username == "
        "'system:serviceaccount:topox-system:topox-labeler'",
        "does not Deny",
        "lets the labeler change 'topox.io/rack'",
        "no ValidatingAdmissionPolicyBinding",
        "no ValidatingAdmissionPolicy " LABELER_POLICY,
    };

    for (int i = 0; i < (int)(sizeof(needles) / sizeof(needles[0])); i++) {
        struct obj_yaml_docs d = render(MANIFESTS);
        char user[300];
        char problems[4096];

        labeler_user(&d, user, sizeof(user));
        break_policy(&d, i);
        check_labeler_policy(&d, user, problems, sizeof(problems));
        cr_expect(strstr(problems, needles[i]) != NULL, "case %d: '%s'", i, problems);
        obj_yaml_docs_release(&d);
    }
}

/* ---- the namespace ------------------------------------------------------------------------ */

/* What of a pod spec needs more than Pod Security "restricted" (problems appended). hostPath is
 * allowed when allow_sys: the labeler's read-only /sys, the one reason for "privileged". */
static void check_pod_security(json_t *pod, const char *what, bool allow_sys, char *problems,
                               size_t size)
{
    json_t *psc = json_object_get(pod, "securityContext");
    json_t *vol;
    json_t *c;
    size_t i;

    if (json_is_true(json_object_get(pod, "hostNetwork")) ||
        json_is_true(json_object_get(pod, "hostPID")) ||
        json_is_true(json_object_get(pod, "hostIPC")))
        add_problem(problems, size, "%s shares a host namespace", what);
    if (!json_is_true(json_object_get(psc, "runAsNonRoot")))
        add_problem(problems, size, "%s does not set runAsNonRoot", what);
    if (strcmp(S(str(json_object_get(psc, "seccompProfile"), "type")), "RuntimeDefault") != 0)
        add_problem(problems, size, "%s has no RuntimeDefault seccomp profile", what);
    json_array_foreach(json_object_get(pod, "volumes"), i, vol)
    {
        json_t *hp = json_object_get(vol, "hostPath");

        if (hp && !(allow_sys && strcmp(S(str(hp, "path")), "/sys") == 0))
            add_problem(problems, size, "%s mounts hostPath '%s'", what, S(str(hp, "path")));
    }
    json_array_foreach(json_object_get(pod, "containers"), i, c)
    {
        json_t *sc = json_object_get(c, "securityContext");
        json_t *m;
        size_t j;

        if (json_is_true(json_object_get(sc, "privileged")) ||
            !json_is_false(json_object_get(sc, "allowPrivilegeEscalation")))
            add_problem(problems, size, "%s/%s may gain privileges", what, S(str(c, "name")));
        if (!has_string(json_object_get(json_object_get(sc, "capabilities"), "drop"), "ALL") ||
            json_object_get(json_object_get(sc, "capabilities"), "add"))
            add_problem(problems, size, "%s/%s keeps capabilities", what, S(str(c, "name")));
        json_array_foreach(json_object_get(c, "volumeMounts"), j, m)
        {
            if (strcmp(S(str(m, "mountPath")), "/sys") == 0 &&
                !json_is_true(json_object_get(m, "readOnly")))
                add_problem(problems, size, "%s/%s mounts /sys writable", what, S(str(c, "name")));
        }
    }
}

Test(ext_manifests, the_namespace_is_privileged_only_for_the_labelers_sys)
{
    struct obj_yaml_docs d = render(MANIFESTS);
    json_t *ns = find(&d, "Namespace", "topox-system");
    json_t *labels = json_object_get(json_object_get(ns, "metadata"), "labels");
    const char *level = str(labels, "pod-security.kubernetes.io/enforce");
    bool needs_host = false;
    char problems[4096] = "";

    cr_assert_not_null(ns);
    for (size_t i = 0; i < d.n; i++) {
        const char *k = kind_of(d.docs[i]);
        json_t *pod = pod_spec(d.docs[i]);
        char what[200];

        if (strcmp(k, "Deployment") != 0 && strcmp(k, "DaemonSet") != 0)
            continue;
        snprintf(what, sizeof(what), "%s %s", k, name_of(d.docs[i]));
        check_pod_security(pod, what, strcmp(what, "DaemonSet topox-labeler") == 0, problems,
                           sizeof(problems));
        if (json_array_size(json_object_get(pod, "volumes")) > 0) {
            json_t *vol;
            size_t j;

            json_array_foreach(json_object_get(pod, "volumes"), j, vol)
            {
                if (json_object_get(vol, "hostPath"))
                    needs_host = true;
            }
        }
    }
    cr_expect_str_eq(problems, "");
    /* baseline forbids every hostPath volume, read-only or not (spec.volumes[*].hostPath must be
     * unset), so the labeler's /sys needs privileged; without it, restricted would do. */
    cr_expect_str_eq(S(level), needs_host ? "privileged" : "restricted");
    {
        char probe[4096] = "";
        struct obj_yaml_docs b = {0};
        struct tpx_err err = TPX_ERR_INIT;
        const char *y = "spec: {hostPID: true, volumes: [{name: r, hostPath: {path: /}}],\n"
                        "  containers: [{name: c, securityContext: {privileged: true},\n"
                        "    volumeMounts: [{name: s, mountPath: /sys}]}]}\n";

        cr_assert_eq(obj_yaml_parse(y, strlen(y), "bad.yaml", &b, &err), TPX_OK, "%s", err.msg);
        check_pod_security(json_object_get(b.docs[0], "spec"), "p", true, probe, sizeof(probe));
        cr_expect(strstr(probe, "p shares a host namespace") != NULL, "%s", probe);
        cr_expect(strstr(probe, "p mounts hostPath '/'") != NULL, "%s", probe);
        cr_expect(strstr(probe, "p/c may gain privileges") != NULL, "%s", probe);
        cr_expect(strstr(probe, "p/c keeps capabilities") != NULL, "%s", probe);
        cr_expect(strstr(probe, "p/c mounts /sys writable") != NULL, "%s", probe);
        cr_expect(strstr(probe, "runAsNonRoot") != NULL, "%s", probe);
        obj_yaml_docs_release(&b);
    }
    obj_yaml_docs_release(&d);
}

/* ---- flags ------------------------------------------------------------------------------- */

static char *help_of(const char *cmd)
{
    char line[1024];
    char *out;
    int st;

    snprintf(line, sizeof(line), "'%s' %s --help 2>/dev/null", TOPOX_BIN, cmd ? cmd : "");
    out = run(line, &st);
    cr_assert_not_null(out);
    cr_assert_eq(st, 0, "topox %s --help exited %d", cmd ? cmd : "", st);
    return out;
}

/* `flag` (like "--listen") appears in help followed by something that ends a flag name. */
static bool help_has(const char *help, const char *flag)
{
    size_t n = strlen(flag);

    for (const char *p = strstr(help, flag); p; p = strstr(p + 1, flag)) {
        char next = p[n];

        if ((p == help || !(isalnum((unsigned char)p[-1]) || p[-1] == '-')) &&
            !(isalnum((unsigned char)next) || next == '-'))
            return true;
    }
    return false;
}

/* The problems with one container's args: every --flag must be in the help of its place. */
static void check_flags(json_t *c, char *problems, size_t size)
{
    json_t *args = json_object_get(c, "args");
    char *global = help_of(NULL);
    char *sub = NULL;
    const char *cmd = NULL;
    json_t *a;
    size_t i;

    json_array_foreach(args, i, a)
    {
        const char *s = json_string_value(a);
        char flag[128];

        if (!s)
            continue;
        if (s[0] != '-') {
            if (!cmd) {
                cmd = s;
                sub = help_of(cmd);
            }
            continue;
        }
        snprintf(flag, sizeof(flag), "%.*s", (int)strcspn(s, "="), s);
        if (!help_has(cmd ? sub : global, flag))
            add_problem(problems, size, "'%s' is not a flag of topox %s", flag, cmd ? cmd : "");
    }
    if (!cmd)
        add_problem(problems, size, "no topox command in args");
    free(global);
    free(sub);
}

Test(ext_manifests, every_flag_passed_to_topox_exists)
{
    struct obj_yaml_docs d = render(MANIFESTS);
    const char *const workloads[][2] = {{"Deployment", "topox-scheduler"},
                                        {"DaemonSet", "topox-labeler"}};
    char problems[4096] = "";

    for (size_t i = 0; i < 2; i++) {
        json_t *w = find(&d, workloads[i][0], workloads[i][1]);
        json_t *c = topox_container(w);

        cr_assert_not_null(c, "no topox container in %s %s", workloads[i][0], workloads[i][1]);
        cr_expect_null(json_object_get(c, "command"), "keep the image's ENTRYPOINT (topox)");
        check_flags(c, problems, sizeof(problems));
    }
    cr_expect_str_eq(problems, "");
    obj_yaml_docs_release(&d);
}

Test(ext_manifests, the_flag_checker_catches_a_made_up_flag)
{
    struct obj_yaml_docs d = {0};
    struct tpx_err err = TPX_ERR_INIT;
    const char *y = "args: [--log-level=info, serve, --listen=127.0.0.1:8888, --no-such-flag, "
                    "--listen-everywhere]\n";
    char problems[4096] = "";

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "c.yaml", &d, &err), TPX_OK, "%s", err.msg);
    check_flags(d.docs[0], problems, sizeof(problems));
    cr_expect(strstr(problems, "'--no-such-flag' is not a flag of topox serve") != NULL, "%s",
              problems);
    cr_expect(strstr(problems, "'--listen-everywhere'") != NULL, "%s", problems);
    cr_expect(strstr(problems, "'--listen' is not") == NULL, "%s", problems);
    obj_yaml_docs_release(&d);
}

/* ---- the workloads ----------------------------------------------------------------------- */

static void expect_hardened(json_t *c, const char *what, bool serves)
{
    json_t *sc = json_object_get(c, "securityContext");

    cr_expect(json_is_false(json_object_get(sc, "allowPrivilegeEscalation")), "%s", what);
    cr_expect(json_is_true(json_object_get(sc, "readOnlyRootFilesystem")), "%s", what);
    cr_expect_not_null(json_object_get(json_object_get(c, "resources"), "requests"), "%s", what);
    if (serves)
        cr_expect_not_null(json_object_get(c, "livenessProbe"), "%s", what);
}

Test(ext_manifests, workloads_are_hardened_and_wired)
{
    struct obj_yaml_docs d = render(MANIFESTS);
    json_t *deploy = find(&d, "Deployment", "topox-scheduler");
    json_t *ds = find(&d, "DaemonSet", "topox-labeler");
    json_t *pod =
        json_object_get(json_object_get(json_object_get(deploy, "spec"), "template"), "spec");
    json_t *dpod =
        json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec");
    json_t *cs = json_object_get(pod, "containers");
    json_t *c;
    json_t *e;
    json_t *vol;
    size_t i;
    bool node_name = false;
    bool sys_ro = false;
    bool scheduler = false;
    char *probe;

    cr_assert_not_null(deploy);
    cr_assert_not_null(ds);
    cr_expect(
        json_is_true(json_object_get(json_object_get(pod, "securityContext"), "runAsNonRoot")));
    cr_expect(
        json_is_true(json_object_get(json_object_get(dpod, "securityContext"), "runAsNonRoot")));
    json_array_foreach(cs, i, c)
    {
        expect_hardened(c, str(c, "name"), true);
        if (str(c, "image") && strstr(str(c, "image"), "registry.k8s.io/kube-scheduler:v1.31.")) {
            char *cmd = json_dumps(json_object_get(c, "command"), JSON_COMPACT);

            scheduler = true;
            cr_expect(strstr(cmd, "\"--config=/etc/kubernetes/topox-scheduler/config.yaml\"") !=
                          NULL,
                      "%s", cmd);
            free(cmd);
        }
    }
    cr_expect(scheduler, "no registry.k8s.io/kube-scheduler:v1.31.x container");
    cr_expect_eq(json_array_size(cs), 2);
    c = topox_container(deploy);
    probe = json_dumps(json_object_get(c, "readinessProbe"), JSON_COMPACT);
    cr_expect(strstr(probe, "/readyz") != NULL, "%s", probe);
    free(probe);
    probe = json_dumps(json_object_get(c, "livenessProbe"), JSON_COMPACT);
    cr_expect(strstr(probe, "/healthz") != NULL, "%s", probe);
    free(probe);

    c = topox_container(ds);
    expect_hardened(c, "topox-label", false); /* a periodic job: no server to probe */
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        if (strcmp(str(e, "name"), "NODE_NAME") == 0)
            node_name = strcmp(str(json_object_get(json_object_get(e, "valueFrom"), "fieldRef"),
                                   "fieldPath"),
                               "spec.nodeName") == 0;
    }
    cr_expect(node_name, "NODE_NAME must come from the downward API (spec.nodeName)");
    json_array_foreach(json_object_get(c, "volumeMounts"), i, vol)
    {
        if (strcmp(str(vol, "mountPath"), "/sys") == 0)
            sys_ro = json_is_true(json_object_get(vol, "readOnly"));
    }
    cr_expect(sys_ro, "the host /sys must be mounted read-only");
    {
        char *tol = json_dumps(json_object_get(dpod, "tolerations"), JSON_COMPACT);

        cr_expect(strstr(tol, "\"nvidia.com/gpu\"") != NULL, "%s", tol);
        cr_expect(strstr(tol, "\"huawei.com/Ascend910\"") != NULL, "%s", tol);
        free(tol);
    }
    obj_yaml_docs_release(&d);
}

Test(ext_manifests, examples_render_and_use_the_topox_scheduler)
{
    struct obj_yaml_docs d = render(MANIFESTS "/examples");
    size_t lws = 0;

    for (size_t i = 0; i < d.n; i++) {
        json_t *t;
        const char *tmpl[] = {"leaderTemplate", "workerTemplate"};

        if (strcmp(kind_of(d.docs[i]), "LeaderWorkerSet") != 0)
            continue;
        lws++;
        t = json_object_get(json_object_get(d.docs[i], "spec"), "leaderWorkerTemplate");
        for (int j = 0; j < 2; j++) {
            const char *sn =
                str(json_object_get(json_object_get(t, tmpl[j]), "spec"), "schedulerName");

            cr_expect(sn && strcmp(sn, "topox-scheduler") == 0, "%s %s", name_of(d.docs[i]),
                      tmpl[j]);
        }
    }
    cr_expect_eq(lws, 2);
    obj_yaml_docs_release(&d);
}
