/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_helm.c - the Helm chart deploy/helm/topox: `helm lint --strict` passes;
 * `helm template` with the default values renders the same objects as `kubectl kustomize
 * manifests/` (compared as data: same kinds, names and namespaces, every field equal, the
 * scheduler config's YAML text compared parsed; only the managed-by label differs, kustomize vs
 * Helm); and the values do what values.yaml says (scheduler name, serve settings, TLS, admin
 * listener, labeler placement, planner role), each flag handed to topox being one `topox serve
 * --help` lists. helm is built from Go modules by e2e/build.sh (`make helm`); TOPOX_HELM
 * names another. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "objects/yamljson.h"

#define CHART TPX_SOURCE_DIR "/deploy/helm/topox"
#define MANAGED_BY "app.kubernetes.io/managed-by"

static const char *helm(void)
{
    static char path[1024];
    const char *env = getenv("TOPOX_HELM");

    if (env && *env)
        return env;
    snprintf(path, sizeof(path), "%s/build/e2e/bin/helm", TPX_SOURCE_DIR);
    cr_assert(access(path, X_OK) == 0,
              "helm is not built: `make helm` (e2e/build.sh helm) builds it from Go modules into "
              "%s, or set TOPOX_HELM",
              path);
    return path;
}

/* stdout of a shell command; the test fails when it exits non-zero. */
static char *run(const char *cmd)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    char chunk[4096];
    size_t n;
    FILE *p = popen(cmd, "r");
    int st;

    cr_assert_not_null(p, "cannot run %s", cmd);
    tpx_buf_init(&b, (size_t)16 << 20);
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        cr_assert_eq(tpx_buf_add(&b, chunk, n, &err), TPX_OK);
    st = pclose(p);
    cr_assert_eq(st, 0, "`%s` failed (%d):\n%.*s", cmd, st, (int)b.len, b.data ? b.data : "");
    return tpx_buf_detach(&b, NULL);
}

static void parse(const char *text, const char *what, struct obj_yaml_docs *d)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse(text, strlen(text), what, d, &err), TPX_OK, "%s", err.msg);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* "Kind namespace/name" of an object */
static void key_of(const json_t *o, char *out, size_t len)
{
    const json_t *md = json_object_get(o, "metadata");

    snprintf(out, len, "%s %s/%s", str(o, "kind"), str(md, "namespace") ? str(md, "namespace") : "",
             str(md, "name"));
}

/* CEL ignores whitespace between tokens, and the two renderings differ there: kustomize parses and
 * re-emits the policy's folded (>-) expressions, turning the break before a more-indented line
 * into two (kyaml), where the chart's text, kept as written, has one (YAML 1.2 section 8.1.3). So
 * runs of whitespace in CEL expressions compare as one space. */
static void normal_cel(json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;

    if (json_is_array(v)) {
        json_array_foreach(v, i, x) normal_cel(x);
        return;
    }
    json_object_foreach(v, k, x)
    {
        if (json_is_string(x) &&
            (strcmp(k, "expression") == 0 || strcmp(k, "messageExpression") == 0)) {
            const char *p = json_string_value(x);
            char *out = malloc(strlen(p) + 1);
            size_t n = 0;

            cr_assert_not_null(out);
            for (; *p; p++) {
                if (strchr(" \t\n", *p)) {
                    if (n && out[n - 1] != ' ')
                        out[n++] = ' ';
                } else {
                    out[n++] = *p;
                }
            }
            out[n] = '\0';
            json_object_set_new(v, k, json_string(out));
            free(out);
        } else {
            normal_cel(x);
        }
    }
}

/* The object made comparable: managed-by dropped, a ConfigMap's config.yaml parsed, CEL spacing. */
static json_t *normal(const json_t *o)
{
    json_t *c = json_deep_copy(o);
    json_t *labels = json_object_get(json_object_get(c, "metadata"), "labels");
    json_t *data = json_object_get(c, "data");
    const char *cfg = str(data, "config.yaml");

    json_object_del(labels, MANAGED_BY);
    if (labels && json_object_size(labels) == 0)
        json_object_del(json_object_get(c, "metadata"), "labels");
    if (cfg) {
        struct obj_yaml_docs d = {0};
        parse(cfg, "config.yaml", &d);
        cr_assert_eq(d.n, 1);
        json_object_set(data, "config.yaml", d.docs[0]);
        obj_yaml_docs_release(&d);
    }
    normal_cel(c);
    return c;
}

static json_t *find(const struct obj_yaml_docs *d, const char *key)
{
    char k[512];

    for (size_t i = 0; i < d->n; i++) {
        if (!json_is_object(d->docs[i]))
            continue;
        key_of(d->docs[i], k, sizeof(k));
        if (strcmp(k, key) == 0)
            return d->docs[i];
    }
    return NULL;
}

static size_t objects(const struct obj_yaml_docs *d)
{
    size_t n = 0;

    for (size_t i = 0; i < d->n; i++)
        n += json_is_object(d->docs[i]);
    return n;
}

static char *template(const char *set)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd), "%s template topox %s --kube-version 1.30.0 %s%s 2>&1", helm(),
             CHART, set ? "--set " : "", set ? set : "");
    return run(cmd);
}

Test(helm, lint_is_clean, .timeout = 120)
{
    char cmd[1024];
    char *out;

    snprintf(cmd, sizeof(cmd), "%s lint --strict %s 2>&1", helm(), CHART);
    out = run(cmd);
    cr_expect(strstr(out, "0 chart(s) failed"), "%s", out);
    free(out);
}

Test(helm, default_values_render_what_kustomize_renders, .timeout = 120)
{
    char *k = run("kubectl kustomize " TPX_SOURCE_DIR "/manifests 2>&1");
    char *h = template(NULL);
    struct obj_yaml_docs kd = {0}, hd = {0};
    char key[512];

    parse(k, "kustomize", &kd);
    parse(h, "helm", &hd);
    cr_expect_eq(objects(&hd), objects(&kd), "helm renders %zu objects, kustomize %zu",
                 objects(&hd), objects(&kd));
    for (size_t i = 0; i < kd.n; i++) {
        json_t *ho, *a, *b;
        if (!json_is_object(kd.docs[i]))
            continue;
        key_of(kd.docs[i], key, sizeof(key));
        ho = find(&hd, key);
        cr_expect_not_null(ho, "the chart does not render %s", key);
        if (!ho)
            continue;
        cr_expect_str_eq(
            str(json_object_get(json_object_get(ho, "metadata"), "labels"), MANAGED_BY), "Helm",
            "%s", key);
        a = normal(kd.docs[i]);
        b = normal(ho);
        if (!json_equal(a, b)) {
            char *sa = json_dumps(a, JSON_SORT_KEYS | JSON_INDENT(1));
            char *sb = json_dumps(b, JSON_SORT_KEYS | JSON_INDENT(1));
            cr_expect_fail("%s differs:\nkustomize: %s\nhelm: %s", key, sa, sb);
            free(sa);
            free(sb);
        }
        json_decref(a);
        json_decref(b);
    }
    obj_yaml_docs_release(&kd);
    obj_yaml_docs_release(&hd);
    free(k);
    free(h);
}

/* The topox container's args of the rendered Deployment, as one string with '\n' between. */
static void topox_args(const struct obj_yaml_docs *d, char *out, size_t len)
{
    const json_t *dep = find(d, "Deployment topox-system/topox-scheduler");
    const json_t *cs, *c;
    size_t i;

    cr_assert_not_null(dep);
    out[0] = '\0';
    cs = json_object_get(
        json_object_get(json_object_get(json_object_get(dep, "spec"), "template"), "spec"),
        "containers");
    json_array_foreach(cs, i, c)
    {
        size_t j;
        const json_t *a;
        if (strcmp(str(c, "name"), "topox") != 0)
            continue;
        json_array_foreach(json_object_get(c, "args"), j, a)
        {
            size_t l = strlen(out);
            snprintf(out + l, len - l, "%s\n", json_string_value(a));
        }
    }
}

Test(helm, values_reach_the_objects, .timeout = 120)
{
    char *h =
        template("scheduler.name=gang,serve.pipelineScope=block,serve.uncertain=reject,"
                 "serve.reservationCap=64,serve.adminListen=0.0.0.0:9100,adminService.enabled="
                 "true,tls.enabled=true,tls.clientAuth=true,labeler.nodeSelector.pool=gpu,"
                 "labeler.interval=1m,planner.createClusterRole=true,image.tag=9.9.9");
    char *help = run(TOPOX_BIN " serve --help");
    struct obj_yaml_docs d = {0}, cfg = {0};
    char args[2048];
    const json_t *cm, *ext, *ds;

    parse(h, "helm", &d);
    topox_args(&d, args, sizeof(args));
    for (const char *const *w =
             (const char *const[]){"--scheduler-name=gang\n", "--pipeline-scope=block\n",
                                   "--uncertain=reject\n", "--reservation-cap=64\n",
                                   "--admin-listen=0.0.0.0:9100\n", "--reservation-ttl=10m\n",
                                   "--tls-cert=/etc/topox/tls/tls.crt\n",
                                   "--client-ca=/etc/topox/tls/ca.crt\n", NULL};
         *w; w++)
        cr_expect(strstr(args, *w), "topox args lack %s:\n%s", *w, args);
    /* every flag handed to topox serve is one it has */
    for (char *save = NULL, *a = strtok_r(args, "\n", &save); a; a = strtok_r(NULL, "\n", &save)) {
        char flag[128];
        if (strncmp(a, "--", 2) != 0 || strncmp(a, "--log-level", 11) == 0)
            continue;
        snprintf(flag, sizeof(flag), "  %.*s ", (int)strcspn(a, "="), a);
        cr_expect(strstr(help, flag), "topox serve has no %s", a);
    }
    cm = find(&d, "ConfigMap topox-system/topox-scheduler-config");
    cr_assert_not_null(cm);
    parse(str(json_object_get(cm, "data"), "config.yaml"), "config.yaml", &cfg);
    ext = json_array_get(json_object_get(cfg.docs[0], "extenders"), 0);
    cr_expect_str_eq(str(ext, "urlPrefix"), "https://127.0.0.1:8888");
    cr_expect(json_is_true(json_object_get(ext, "enableHTTPS")));
    cr_expect_str_eq(str(json_object_get(ext, "tlsConfig"), "certFile"), "/etc/topox/tls/tls.crt");
    cr_expect_str_eq(
        str(json_array_get(json_object_get(cfg.docs[0], "profiles"), 0), "schedulerName"), "gang");
    cr_expect_str_eq(str(json_object_get(cfg.docs[0], "leaderElection"), "resourceName"), "gang");
    ds = find(&d, "DaemonSet topox-system/topox-labeler");
    cr_assert_not_null(ds);
    {
        char *s = json_dumps(ds, JSON_COMPACT);
        cr_expect(strstr(s, "\"nodeSelector\":{\"pool\":\"gpu\"}"), "%s", s);
        cr_expect(strstr(s, "\"--interval=1m\""), "%s", s);
        cr_expect(strstr(s, "ghcr.io/topox/topox:9.9.9"), "%s", s);
        free(s);
    }
    cr_expect_not_null(find(&d, "ClusterRole /topox-planner"));
    cr_expect_not_null(find(&d, "Service topox-system/topox-scheduler-admin"));
    obj_yaml_docs_release(&cfg);
    obj_yaml_docs_release(&d);
    free(help);
    free(h);
    /* TLS without the admin listener would leave the probes speaking HTTP to TLS: refused */
    {
        char cmd[1024], out[4096] = "";
        FILE *p;
        size_t n;

        snprintf(cmd, sizeof(cmd),
                 "%s template topox %s --kube-version 1.30.0 --set tls.enabled=true 2>&1", helm(),
                 CHART);
        p = popen(cmd, "r");
        cr_assert_not_null(p);
        n = fread(out, 1, sizeof(out) - 1, p);
        out[n] = '\0';
        cr_expect_neq(pclose(p), 0, "rendered: %s", out);
        cr_expect(strstr(out, "tls.enabled needs serve.adminListen"), "%s", out);
    }
    /* no labeler: no DaemonSet, account, policy; the namespace no longer needs "privileged" */
    h = template("labeler.enabled=false");
    parse(h, "helm", &d);
    cr_expect_null(find(&d, "DaemonSet topox-system/topox-labeler"));
    cr_expect_null(find(&d, "ValidatingAdmissionPolicy /topox-labeler-own-node"));
    cr_expect_str_eq(
        str(json_object_get(json_object_get(find(&d, "Namespace /topox-system"), "metadata"),
                            "labels"),
            "pod-security.kubernetes.io/enforce"),
        "restricted");
    obj_yaml_docs_release(&d);
    free(h);
}
