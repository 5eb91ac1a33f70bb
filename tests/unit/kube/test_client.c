/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/kube/test_client.c - the API client against the in-process fake API server:
 * config (in-cluster, kubeconfig), paging, 401 + token rotation, retries, timeouts, caps, and
 * the Binding / node PATCH / Event helpers with their exact bodies and error texts. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "kube/bodies.h"
#include "fake_apiserver.h"

#define APIFIX TPX_FIXTURES "/apiserver"

static struct fake_api *fake;
static char tmpdir[64];

static void setup(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fake = fake_api_start(APIFIX);
    cr_assert_not_null(fake);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/t_ext_kube.XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[128];

    fake_api_stop(fake);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
    curl_global_cleanup();
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static char *tmp_path(const char *name)
{
    static char p[256];

    snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
    return p;
}

/* A client for the fake with fast retries. */
static struct kube_client *client(const char *token_file, struct kube_config *cfg)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct kube_client *k;

    memset(cfg, 0, sizeof(*cfg));
    cfg->server = strdup(fake_api_url(fake));
    cfg->token_file = token_file ? strdup(token_file) : NULL;
    cfg->backoff_ms = 1;
    k = kube_client_new(cfg, &err);
    cr_assert_not_null(k, "%s", err.msg);
    return k;
}

TestSuite(kube_client, .init = setup, .fini = teardown, .timeout = 60);

Test(kube_client, in_cluster_brackets_ipv6_and_reads_the_service_account)
{
    static const struct {
        const char *host, *port, *want;
    } cases[] = {
        {"10.96.0.1", "443", "https://10.96.0.1:443"},
        {"fd00:10:96::1", "443", "https://[fd00:10:96::1]:443"},
        {"kubernetes.default.svc", "6443", "https://kubernetes.default.svc:6443"},
    };

    write_file(tmp_path("token"), "tok-1\n");
    write_file(tmp_path("namespace"), "topox-system");
    write_file(tmp_path("ca.crt"), "-----BEGIN CERTIFICATE-----\n");
    setenv("TOPOX_SA_DIR", tmpdir, 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_config cfg;
        struct tpx_err err = TPX_ERR_INIT;

        setenv("KUBERNETES_SERVICE_HOST", cases[i].host, 1);
        setenv("KUBERNETES_SERVICE_PORT", cases[i].port, 1);
        cr_assert_eq(kube_config_in_cluster(&cfg, &err), TPX_OK, "%s", err.msg);
        cr_expect_str_eq(cfg.server, cases[i].want);
        cr_expect_str_eq(cfg.token_file, tmp_path("token"));
        cr_expect_str_eq(cfg.ca_file, tmp_path("ca.crt"));
        cr_expect_str_eq(cfg.namespace, "topox-system");
        kube_config_release(&cfg);
        kube_config_release(&cfg); /* twice is a no-op */
    }
    unsetenv("KUBERNETES_SERVICE_HOST");
    {
        struct kube_config cfg;
        struct tpx_err err = TPX_ERR_INIT;

        cr_expect_eq(kube_config_in_cluster(&cfg, &err), TPX_ENOENT);
        cr_expect(strstr(err.msg, "KUBERNETES_SERVICE_HOST") != NULL, "%s", err.msg);
        kube_config_release(&cfg);
    }
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("TOPOX_SA_DIR");
}

Test(kube_client, in_cluster_without_a_token_names_the_file)
{
    struct kube_config cfg;
    struct tpx_err err = TPX_ERR_INIT;

    setenv("TOPOX_SA_DIR", tmpdir, 1);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    cr_expect_neq(kube_config_in_cluster(&cfg, &err), TPX_OK);
    cr_expect(strstr(err.msg, "token") != NULL, "%s", err.msg);
    kube_config_release(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("TOPOX_SA_DIR");
}

/* Issue 12 item 11: as client-go's InClusterConfig, a missing ca.crt is an error (TPX_EIO, so
 * that serve's clusterSource auto does not read it as "not in a cluster"), never the system
 * trust store. */
Test(kube_client, in_cluster_without_the_ca_fails_and_names_the_file)
{
    struct kube_config cfg;
    struct tpx_err err = TPX_ERR_INIT;

    write_file(tmp_path("token"), "tok-1\n");
    write_file(tmp_path("namespace"), "topox-system");
    setenv("TOPOX_SA_DIR", tmpdir, 1);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    cr_expect_eq(kube_config_in_cluster(&cfg, &err), TPX_EIO, "%s", err.msg);
    cr_expect(strstr(err.msg, tmp_path("ca.crt")) != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "trust store") != NULL, "%s", err.msg);
    kube_config_release(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("TOPOX_SA_DIR");
}

/* The log lines written while loading the kubeconfig `yaml` (malloc'd). */
static char *kubeconfig_log(const char *yaml)
{
    struct kube_config cfg;
    struct tpx_err err = TPX_ERR_INIT;
    char *logp = strdup(tmp_path("log"));
    FILE *f = fopen(logp, "w+");
    char *text = calloc(1, 4096);

    cr_assert_not_null(f);
    write_file(tmp_path("config"), yaml);
    tpx_log_set_level(TPX_INFO);
    tpx_log_set_fd(fileno(f));
    cr_expect_eq(kube_config_kubeconfig(tmp_path("config"), &cfg, &err), TPX_OK, "%s", err.msg);
    tpx_log_set_fd(2);
    rewind(f);
    cr_expect_leq(fread(text, 1, 4095, f), 4095);
    fclose(f);
    free(logp);
    kube_config_release(&cfg);
    return text;
}

/* Issue 12 item 11: insecure-skip-tls-verify is honoured, but never silently. */
Test(kube_client, kubeconfig_that_skips_tls_verification_warns_once)
{
    char *on = kubeconfig_log("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                              "clusters: [{name: k, cluster: {server: 'https://api.example:6443', "
                              "insecure-skip-tls-verify: true}}]\n");
    char *off = kubeconfig_log("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                               "clusters: [{name: k, cluster: {server: 'https://api.example:6443', "
                               "insecure-skip-tls-verify: false}}]\n");
    const char *first = strstr(on, "insecure-skip-tls-verify");

    cr_expect(first != NULL, "no warning: '%s'", on);
    cr_expect(strstr(on, "\"level\":\"warn\"") != NULL, "%s", on);
    cr_expect(strstr(on, "https://api.example:6443") != NULL, "%s", on);
    cr_expect(first && !strstr(first + 1, "insecure-skip-tls-verify"), "more than once: %s", on);
    cr_expect_str_eq(off, "");
    free(on);
    free(off);
}

/* A CA and insecure-skip-tls-verify together are refused, as kubectl and client-go refuse them
 * ("specifying a root certificates file with the insecure flag is not allowed",
 * client-go transport/transport.go TLSConfigFor): topox cannot tell which one was meant. */
Test(kube_client, kubeconfig_with_a_ca_and_insecure_skip_tls_verify_is_refused)
{
    static const char *const cas[] = {"certificate-authority-data: LS0tCg==",
                                      "certificate-authority: ca.crt"};

    for (size_t i = 0; i < 2; i++) {
        struct kube_config cfg;
        struct tpx_err err = TPX_ERR_INIT;
        char yaml[512];

        snprintf(yaml, sizeof(yaml),
                 "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                 "clusters: [{name: k, cluster: {server: 'https://api.example:6443', "
                 "insecure-skip-tls-verify: true, %s}}]\n",
                 cas[i]);
        write_file(tmp_path("config"), yaml);
        cr_expect_eq(kube_config_kubeconfig(tmp_path("config"), &cfg, &err), TPX_EINVAL,
                     "case %zu: %s", i, err.msg);
        cr_expect(strstr(err.msg, "specifying a root certificates file with the insecure flag is "
                                  "not allowed") != NULL,
                  "case %zu: %s", i, err.msg);
        cr_expect(strstr(err.msg, tmp_path("config")) && strstr(err.msg, "cluster 'k'") &&
                      strstr(err.msg, i ? "certificate-authority" : "certificate-authority-data"),
                  "case %zu: %s", i, err.msg);
        kube_config_release(&cfg);
    }
}

/* Issue 12 item 11: http:// only with the caller's --insecure; the message names the server and
 * the flag. */
Test(kube_client, plain_http_servers_need_the_insecure_flag)
{
    static const struct {
        const char *server;
        bool allow;
        enum tpx_code code;
    } cases[] = {
        {"https://10.96.0.1:443", false, TPX_OK},
        {"HTTPS://a", false, TPX_OK},
        {"http://10.0.0.9:8080", false, TPX_EINVAL},
        {"http://10.0.0.9:8080", true, TPX_OK},
        {"ftp://a", true, TPX_EINVAL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_config cfg = {0};
        struct tpx_err err = TPX_ERR_INIT;

        cfg.server = (char *)cases[i].server;
        cr_expect_eq(kube_config_check_scheme(&cfg, cases[i].allow, "--insecure", &err),
                     cases[i].code, "case %zu: %s", i, err.msg);
        if (cases[i].code != TPX_OK)
            cr_expect(strstr(err.msg, cases[i].server) != NULL, "case %zu: %s", i, err.msg);
        if (cases[i].code != TPX_OK && !cases[i].allow)
            cr_expect(strstr(err.msg, "--insecure") != NULL, "case %zu: %s", i, err.msg);
    }
}

Test(kube_client, kubeconfig_current_context_with_data_and_relative_files)
{
    struct kube_config cfg;
    struct tpx_err err = TPX_ERR_INIT;
    char *path = strdup(tmp_path("config"));

    /* "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==" is "-----BEGIN CERTIFICATE-----\n". */
    write_file(path, "apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
                     "clusters:\n"
                     "- name: other\n  cluster: {server: 'https://wrong:1'}\n"
                     "- name: gpu\n  cluster:\n    server: https://[fd00::1]:6443/\n"
                     "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
                     "contexts:\n"
                     "- name: dev\n  context: {cluster: other, user: nobody}\n"
                     "- name: prod\n  context: {cluster: gpu, user: admin, namespace: llm}\n"
                     "users:\n"
                     "- name: admin\n  user:\n    token: abc.def\n"
                     "    client-certificate: certs/admin.crt\n"
                     "    client-key-data: a2V5\n");
    cr_assert_eq(kube_config_kubeconfig(path, &cfg, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(cfg.server, "https://[fd00::1]:6443");
    cr_expect_str_eq(cfg.ca_data, "-----BEGIN CERTIFICATE-----\n");
    cr_expect_eq(cfg.ca_data_len, 28);
    cr_expect_not(cfg.insecure);
    cr_expect_str_eq(cfg.token, "abc.def");
    cr_expect_str_eq(cfg.namespace, "llm");
    cr_expect_str_eq(cfg.key_data, "key");
    {
        char want[300];

        snprintf(want, sizeof(want), "%s/certs/admin.crt", tmpdir);
        cr_expect_str_eq(cfg.cert_file, want);
    }
    kube_config_release(&cfg);
    free(path);
}

Test(kube_client, kubeconfig_errors_name_the_file)
{
    static const struct {
        const char *yaml;
        enum tpx_code code;
        const char *needle;
    } cases[] = {
        {"current-context: x\ncontexts: []\n", TPX_ENOENT, "context 'x' not found"},
        {"kind: Config\n", TPX_EPARSE, "no current-context"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://a'}}]\n"
         "users: [{name: u, user: {exec: {command: aws}}}]\n",
         TPX_ENOTSUP, "exec"},
        {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
         "clusters: [{name: k, cluster: {server: 'https://a', "
         "certificate-authority-data: '%%%'}}]\n",
         TPX_EPARSE, "base64"},
        {"a: [1, 2\n", TPX_EPARSE, "config"},
    };
    char *path = strdup(tmp_path("config"));

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_config cfg;
        struct tpx_err err = TPX_ERR_INIT;

        write_file(path, cases[i].yaml);
        cr_expect_eq(kube_config_kubeconfig(path, &cfg, &err), cases[i].code, "case %zu: %s", i,
                     err.msg);
        cr_expect(strstr(err.msg, path) != NULL, "case %zu: %s", i, err.msg);
        cr_expect(strstr(err.msg, cases[i].needle) != NULL, "case %zu: %s", i, err.msg);
        kube_config_release(&cfg);
    }
    free(path);
}

Test(kube_client, kubeconfig_env_list_takes_the_first_existing_file)
{
    struct kube_config cfg;
    struct tpx_err err = TPX_ERR_INIT;
    char env[600];

    write_file(tmp_path("kc"), "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                               "clusters: [{name: k, cluster: {server: 'http://x:1'}}]\n");
    snprintf(env, sizeof(env), "%s/missing:%s/kc", tmpdir, tmpdir);
    setenv("KUBECONFIG", env, 1);
    cr_assert_eq(kube_config_load(NULL, &cfg, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(cfg.server, "http://x:1");
    kube_config_release(&cfg);
    unsetenv("KUBECONFIG");
}

/* kubectl's search for `topox plan`: $KUBECONFIG, else ~/.kube/config, else the pod; --context
 * picks a context that is not current; each miss says what to do. */
Test(kube_client, user_search_takes_home_kube_config_and_the_named_context)
{
    struct kube_config cfg;
    struct tpx_err err = TPX_ERR_INIT;
    char home[600];

    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    snprintf(home, sizeof(home), "%s/home", tmpdir);
    setenv("HOME", home, 1);
    cr_assert_eq(kube_config_load_user(NULL, NULL, &cfg, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "no kubeconfig: give --kubeconfig FILE"), "%s", err.msg);
    kube_config_release(&cfg);
    tpx_err_clear(&err);
    cr_assert_eq(kube_config_load_user(NULL, "prod", &cfg, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "--context 'prod': no kubeconfig"), "%s", err.msg);
    kube_config_release(&cfg);
    tpx_err_clear(&err);

    cr_assert_eq(mkdir(home, 0700) == 0 || errno == EEXIST, 1);
    strcat(home, "/.kube");
    cr_assert_eq(mkdir(home, 0700) == 0 || errno == EEXIST, 1);
    strcat(home, "/config");
    write_file(home, "current-context: dev\n"
                     "contexts: [{name: dev, context: {cluster: d}},\n"
                     "           {name: prod, context: {cluster: p, namespace: llm}}]\n"
                     "clusters: [{name: d, cluster: {server: 'https://dev:6443'}},\n"
                     "           {name: p, cluster: {server: 'https://prod:6443'}}]\n");
    cr_assert_eq(kube_config_load_user(NULL, NULL, &cfg, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(cfg.server, "https://dev:6443");
    kube_config_release(&cfg);
    cr_assert_eq(kube_config_load_user(NULL, "prod", &cfg, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(cfg.server, "https://prod:6443");
    cr_expect_str_eq(cfg.namespace, "llm");
    kube_config_release(&cfg);
    cr_assert_eq(kube_config_load_user(NULL, "qa", &cfg, &err), TPX_ENOENT);
    cr_expect(strstr(err.msg, "context 'qa' not found"), "%s", err.msg);
    kube_config_release(&cfg);
}

static bool add_name(void *ctx, json_t *item)
{
    json_array_append(ctx, json_object_get(json_object_get(item, "metadata"), "name"));
    return true;
}

/* Issue 32, item 8: a server that answers a continue token with the same token would be listed
 * for ever (7 GB in 40 s): the list stops on the second page with a clear error. */
Test(kube_client, a_continue_token_answered_with_itself_stops_the_list)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    json_t *names = json_array();

    cr_assert_eq(fake_api_set_list(fake, "/api/v1/nodes",
                                   "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":"
                                   "{\"resourceVersion\":\"9\",\"continue\":\"loop-1\"},"
                                   "\"items\":[{\"metadata\":{\"name\":\"n1\"}}]}"),
                 0);
    cr_expect_eq(kube_list(k, "/api/v1/nodes", NULL, 2, add_name, names, NULL, &err), TPX_EAPI);
    cr_expect(strstr(err.msg, "with the same token; stopping, the list would never end"), "%s",
              err.msg);
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes"), 2);
    cr_expect_eq(json_array_size(names), 1);
    json_decref(names);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, list_follows_continue_tokens_and_returns_the_resource_version)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    json_t *names = json_array();
    char *rv = NULL;
    char *log;

    cr_assert_eq(
        kube_list(k, "/api/v1/nodes", "labelSelector=a%3Db", 2, add_name, names, &rv, &err), TPX_OK,
        "%s", err.msg);
    cr_expect_eq(json_array_size(names), 3);
    cr_expect_str_eq(json_string_value(json_array_get(names, 2)), "gpu-r2-n1");
    cr_expect_str_eq(rv, "1000");
    log = fake_api_log(fake);
    cr_expect(strstr(log, "GET /api/v1/nodes?limit=2&labelSelector=a=b\n") != NULL, "%s", log);
    cr_expect(strstr(log, "GET /api/v1/nodes?limit=2&continue=off-2&labelSelector=a=b\n") != NULL,
              "%s", log);
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes"), 2);
    cr_expect_eq(kube_requests(k), 2);
    free(log);
    free(rv);
    json_decref(names);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, a_401_rereads_the_rotated_token_and_retries_once)
{
    struct kube_config cfg;
    char *tok = strdup(tmp_path("token"));
    struct kube_client *k;
    struct tpx_err err = TPX_ERR_INIT;
    json_t *j = NULL;
    char *auth;

    write_file(tok, "tok-1\n");
    k = client(tok, &cfg);
    fake_api_set_token(fake, "tok-2");
    write_file(tok, "tok-2\n"); /* rotated after the client read it */
    cr_assert_eq(kube_get_json(k, "/api/v1/nodes/gpu-r1-n1", &j, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "metadata"), "name")),
                     "gpu-r1-n1");
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes/gpu-r1-n1"), 2);
    auth = fake_api_last(fake, "GET", "/api/v1/nodes/gpu-r1-n1", "auth");
    cr_expect_str_eq(auth, "Bearer tok-2");
    free(auth);
    json_decref(j);
    kube_client_free(k);
    kube_config_release(&cfg);
    free(tok);
}

Test(kube_client, a_401_that_persists_is_an_api_error_after_one_retry)
{
    struct kube_config cfg;
    char *tok = strdup(tmp_path("token"));
    struct kube_client *k;
    struct tpx_err err = TPX_ERR_INIT;

    write_file(tok, "tok-1");
    k = client(tok, &cfg);
    fake_api_set_token(fake, "tok-9");
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, NULL, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 401);
    cr_expect_str_eq(err.msg, "GET /api/v1/nodes: HTTP 401: Unauthorized");
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes"), 2);
    kube_client_free(k);
    kube_config_release(&cfg);
    free(tok);
}

Test(kube_client, server_errors_and_dropped_answers_are_retried_for_get)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    json_t *j = NULL;

    fake_api_fail_next(fake, 2, 500);
    cr_expect_eq(kube_get_json(k, "/api/v1/nodes", &j, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes"), 3);
    json_decref(j);
    j = NULL;

    fake_api_fail_next(fake, 1, 0); /* cut mid-body */
    cr_expect_eq(kube_get_json(k, "/api/v1/nodes", &j, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(json_array_size(json_object_get(j, "items")), 3);
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes"), 5);
    json_decref(j);

    fake_api_fail_next(fake, 10, 503);
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, NULL, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 503);
    cr_expect(strstr(err.msg, "etcdserver: request timed out") != NULL, "%s", err.msg);
    cr_expect_eq(fake_api_count(fake, "GET", "/api/v1/nodes"), 5 + 4); /* 1 + 3 retries */
    kube_client_free(k);
    kube_config_release(&cfg);
}

/* The handle is configured once and kept: each request sets its own method, body, headers and
 * timeout, and nothing of the one before carries over. */
Test(kube_client, each_request_on_the_kept_handle_is_its_own)
{
    static const char patch[] = "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}";
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    char *log;
    char *s;

    cr_expect_eq(kube_request(k, "PATCH", "/api/v1/nodes/gpu-r1-n1", "application/merge-patch+json",
                              patch, NULL, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes/gpu-r1-n1", NULL, NULL, NULL, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect_eq(kube_request(k, "DELETE", "/api/v1/nodes/gpu-r1-n2", NULL, NULL, NULL, &err),
                 TPX_EAPI);
    tpx_err_clear(&err);
    /* the fake refuses a Binding without metadata.name, after it has read the body */
    cr_expect_eq(
        kube_request(k, "POST", "/api/v1/namespaces/llm/pods/p/binding", NULL, "{}", NULL, &err),
        TPX_EAPI);
    cr_expect_eq(err.http_status, 400);
    tpx_err_clear(&err);
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes/gpu-r1-n2", NULL, NULL, NULL, &err), TPX_OK,
                 "%s", err.msg);
    log = fake_api_log(fake);
    cr_expect(strstr(log, "PATCH /api/v1/nodes/gpu-r1-n1\nGET /api/v1/nodes/gpu-r1-n1\n"
                          "DELETE /api/v1/nodes/gpu-r1-n2\n"
                          "POST /api/v1/namespaces/llm/pods/p/binding\n"
                          "GET /api/v1/nodes/gpu-r1-n2\n") != NULL,
              "%s", log);
    free(log);
    s = fake_api_last(fake, "PATCH", "/api/v1/nodes/gpu-r1-n1", "body");
    cr_expect_str_eq(s, patch);
    free(s);
    s = fake_api_last(fake, "GET", "/api/v1/nodes/gpu-r1-n1", "body");
    cr_expect(s == NULL || s[0] == '\0', "GET sent a body: %s", s);
    free(s);
    s = fake_api_last(fake, "GET", "/api/v1/nodes/gpu-r1-n1", "content-type");
    cr_expect(s == NULL || s[0] == '\0', "GET sent a Content-Type: %s", s);
    free(s);
    s = fake_api_last(fake, "DELETE", "/api/v1/nodes/gpu-r1-n2", "body");
    cr_expect(s == NULL || s[0] == '\0', "DELETE sent a body: %s", s);
    free(s);
    s = fake_api_last(fake, "POST", "/binding", "content-type");
    cr_expect_str_eq(s, "application/json");
    free(s);
    s = fake_api_last(fake, "POST", "/binding", "body");
    cr_expect_str_eq(s, "{}");
    free(s);
    kube_client_free(k);
    kube_config_release(&cfg);
}

static bool no_data(void *ctx, const char *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return true;
}

static bool after_700ms(void *ctx)
{
    struct timespec now;
    const struct timespec *start = ctx;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9 >=
           0.7;
}

/* A stream without a deadline after a request with one: the kept handle must not keep the
 * request's 200 ms timeout. */
Test(kube_client, a_stream_without_a_timeout_after_a_request_with_one)
{
    struct kube_config cfg;
    struct kube_client *k;
    struct tpx_err err = TPX_ERR_INIT;
    struct timespec start;

    memset(&cfg, 0, sizeof(cfg));
    cfg.server = strdup(fake_api_url(fake));
    cfg.timeout_ms = 200;
    k = kube_client_new(&cfg, &err);
    cr_assert_not_null(k, "%s", err.msg);
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, NULL, &err), TPX_OK, "%s",
                 err.msg);
    clock_gettime(CLOCK_MONOTONIC, &start);
    kube_set_cancel(k, after_700ms, &start);
    /* no watch queued: the fake holds it open without events */
    cr_expect_eq(kube_stream(k, "/api/v1/nodes?watch=true", 0, no_data, NULL, &err), TPX_EIO, "%s",
                 err.msg);
    cr_expect(strstr(err.msg, "cancelled") != NULL, "%s", err.msg);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, post_is_not_retried_after_a_dropped_answer)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;

    fake_api_fail_next(fake, 1, 0);
    cr_expect_eq(kube_request(k, "POST", "/api/v1/namespaces/llm/events", NULL, "{}", NULL, &err),
                 TPX_EIO);
    cr_expect(strstr(err.msg, "POST /api/v1/namespaces/llm/events: ") == err.msg, "%s", err.msg);
    cr_expect_eq(fake_api_count(fake, "POST", "/events"), 1);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, slow_answers_time_out)
{
    struct kube_config cfg;
    struct kube_client *k;
    struct tpx_err err = TPX_ERR_INIT;

    memset(&cfg, 0, sizeof(cfg));
    cfg.server = strdup(fake_api_url(fake));
    cfg.timeout_ms = 100;
    cfg.retries = 1;
    cfg.backoff_ms = 1;
    k = kube_client_new(&cfg, &err);
    cr_assert_not_null(k);
    fake_api_delay_next(fake, 2, 1000);
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, NULL, &err), TPX_ETIMEOUT);
    cr_expect(strstr(err.msg, "GET /api/v1/nodes: ") == err.msg, "%s", err.msg);
    cr_expect_eq(kube_requests(k), 2);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, bodies_over_the_cap_are_refused)
{
    struct kube_config cfg;
    struct kube_client *k;
    struct tpx_err err = TPX_ERR_INIT;
    struct tpx_buf b;

    memset(&cfg, 0, sizeof(cfg));
    cfg.server = strdup(fake_api_url(fake));
    cfg.max_body = 100;
    k = kube_client_new(&cfg, &err);
    cr_assert_not_null(k);
    tpx_buf_init(&b, 0);
    cr_expect_eq(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, &b, &err), TPX_ETOOBIG);
    cr_expect(strstr(err.msg, "over 100 bytes") != NULL, "%s", err.msg);
    cr_expect_eq(kube_requests(k), 1); /* not retried */
    tpx_buf_release(&b);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, binding_body_is_the_protocol_shape)
{
    const struct kube_kv ann[] = {
        {"topox.io/rack", "r1"}, {"topox.io/domain", "gpu-r1-n1"}, {"topox.io/stage", "1"}};
    char *s = kube_binding_body("llm", "vllm-0-1", "u-123", "gpu-r1-n1", ann, 3);

    cr_expect_str_eq(s, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
                        "\"vllm-0-1\",\"namespace\":\"llm\",\"uid\":\"u-123\",\"annotations\":{"
                        "\"topox.io/rack\":\"r1\",\"topox.io/domain\":\"gpu-r1-n1\","
                        "\"topox.io/stage\":\"1\"}},\"target\":{\"apiVersion\":\"v1\",\"kind\":"
                        "\"Node\",\"name\":\"gpu-r1-n1\"}}");
    free(s);
    s = kube_binding_body("llm", "p", NULL, "n", NULL, 0);
    cr_expect_str_eq(s, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
                        "\"p\",\"namespace\":\"llm\"},\"target\":{\"apiVersion\":\"v1\",\"kind\":"
                        "\"Node\",\"name\":\"n\"}}");
    free(s);
}

/* issue 20, item 2: the nomination is a merge PATCH of pods/status with only
 * status.nominatedNodeName (null clears it); a pod the server does not have is a 404. */
Test(kube_client, nominate_merge_patches_pods_status)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    char *s = kube_nominate_body("gpu-r1-n2");
    char *ct;

    cr_expect_str_eq(s, "{\"status\":{\"nominatedNodeName\":\"gpu-r1-n2\"}}");
    free(s);
    s = kube_nominate_body(NULL);
    cr_expect_str_eq(s, "{\"status\":{\"nominatedNodeName\":null}}");
    free(s);
    cr_expect_eq(kube_nominate(k, "llm", "vllm-0-1", "gpu-r1-n2", &err), TPX_OK, "%s", err.msg);
    s = fake_api_last(fake, "PATCH", "/api/v1/namespaces/llm/pods/vllm-0-1/status", "body");
    ct =
        fake_api_last(fake, "PATCH", "/api/v1/namespaces/llm/pods/vllm-0-1/status", "content-type");
    cr_expect_str_eq(s ? s : "", "{\"status\":{\"nominatedNodeName\":\"gpu-r1-n2\"}}");
    cr_expect_str_eq(ct ? ct : "", "application/merge-patch+json");
    free(s);
    free(ct);
    cr_expect_eq(kube_nominate(k, "llm", "vllm-0-1", "", &err), TPX_OK, "%s", err.msg);
    s = fake_api_last(fake, "PATCH", "/pods/vllm-0-1/status", "body");
    cr_expect_str_eq(s ? s : "", "{\"status\":{\"nominatedNodeName\":null}}");
    free(s);
    cr_expect_eq(kube_nominate(k, "llm", "gone", "n", &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 404);
    cr_expect(strstr(err.msg, "nominate pod 'llm/gone'") != NULL, "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(kube_nominate(k, "llm", "a/b", "n", &err), TPX_EINVAL);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, bind_posts_the_binding_and_maps_409_404_403)
{
    const struct kube_kv ann[] = {{"topox.io/rack", "r1"}};
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    char *body;
    char *ct;

    cr_assert_eq(kube_bind(k, "llm", "vllm-0-1", "b7c1d2e3-0000-4000-8000-000000000002",
                           "gpu-r1-n2", ann, 1, &err),
                 TPX_OK, "%s", err.msg);
    body = fake_api_last(fake, "POST", "/api/v1/namespaces/llm/pods/vllm-0-1/binding", "body");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "\"uid\":\"b7c1d2e3-0000-4000-8000-000000000002\"") != NULL, "%s", body);
    cr_expect(strstr(body, "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":"
                           "\"gpu-r1-n2\"}") != NULL,
              "%s", body);
    ct = fake_api_last(fake, "POST", "/binding", "content-type");
    cr_expect_str_eq(ct, "application/json");
    free(body);
    free(ct);

    cr_expect_eq(kube_bind(k, "llm", "vllm-0-1", NULL, "gpu-r1-n2", NULL, 0, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 409);
    cr_expect_str_eq(err.msg, "pod 'llm/vllm-0-1' is already bound or was re-created (409 "
                              "Conflict): Operation cannot be fulfilled on pods/binding "
                              "\"vllm-0-1\": pod vllm-0-1 is already assigned to node "
                              "\"gpu-r1-n2\"");

    tpx_err_clear(&err);
    cr_expect_eq(kube_bind(k, "llm", "gone-0", NULL, "gpu-r1-n2", NULL, 0, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 404);
    cr_expect_str_eq(err.msg, "pod 'llm/gone-0' no longer exists (404 Not Found): pods "
                              "\"gone-0\" not found");

    tpx_err_clear(&err);
    cr_expect_eq(kube_bind(k, "locked", "vllm-0-1", NULL, "gpu-r1-n2", NULL, 0, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 403);
    cr_expect(strstr(err.msg, "not allowed to bind pod 'locked/vllm-0-1' (403 Forbidden; the "
                              "service account needs create on pods/binding)") == err.msg,
              "%s", err.msg);

    tpx_err_clear(&err);
    cr_expect_eq(kube_bind(k, "llm", "../x", NULL, "n", NULL, 0, &err), TPX_EINVAL);
    cr_expect_eq(fake_api_count(fake, "POST", "/binding"), 4);
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, patch_node_sends_a_merge_patch)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    const char *patch = "{\"metadata\":{\"labels\":{\"topox.io/interconnect\":\"nvswitch\"}}}";
    char *body;
    char *ct;

    cr_assert_eq(kube_patch_node(k, "gpu-r1-n1", patch, &err), TPX_OK, "%s", err.msg);
    body = fake_api_last(fake, "PATCH", "/api/v1/nodes/gpu-r1-n1", "body");
    ct = fake_api_last(fake, "PATCH", "/api/v1/nodes/gpu-r1-n1", "content-type");
    cr_expect_str_eq(body, patch);
    cr_expect_str_eq(ct, "application/merge-patch+json");
    free(body);
    free(ct);
    cr_expect_eq(kube_patch_node(k, "ghost", patch, &err), TPX_EAPI);
    cr_expect_eq(err.http_status, 404);
    cr_expect_str_eq(err.msg, "patch node 'ghost': PATCH /api/v1/nodes/ghost: HTTP 404: nodes "
                              "not found");
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, a_named_event_that_exists_already_is_success)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    const struct kube_event ev = {"llm",     "vllm-0", "u-1", "Normal",
                                  "Placed",  "placed", NULL,  "vllm-0.1815f0a1b2c3d4e5",
                                  1700000000};
    char *body;

    cr_assert_eq(kube_event(k, &ev, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(kube_event(k, &ev, &err), TPX_OK, "a retry meets 409: %s", err.msg);
    cr_expect_eq(fake_api_count(fake, "POST", "/api/v1/namespaces/llm/events"), 2);
    cr_expect_eq(fake_api_events(fake, "llm"), 1);
    body = fake_api_last(fake, "POST", "/api/v1/namespaces/llm/events", "body");
    cr_expect(strstr(body, "\"name\":\"vllm-0.1815f0a1b2c3d4e5\"") &&
                  !strstr(body, "generateName") &&
                  strstr(body, "\"firstTimestamp\":\"2023-11-14T22:13:20Z\""),
              "%s", body);
    free(body);
    /* without a name, every POST is a new Event */
    {
        struct kube_event anon = ev;

        anon.name = NULL;
        cr_assert_eq(kube_event(k, &anon, &err), TPX_OK, "%s", err.msg);
        cr_assert_eq(kube_event(k, &anon, &err), TPX_OK, "%s", err.msg);
        cr_expect_eq(fake_api_events(fake, "llm"), 3);
    }
    kube_client_free(k);
    kube_config_release(&cfg);
}

Test(kube_client, event_is_a_core_v1_event_about_the_pod)
{
    struct kube_config cfg;
    struct kube_client *k = client(NULL, &cfg);
    struct tpx_err err = TPX_ERR_INIT;
    const struct kube_event ev = {
        "llm",    "vllm-0-1", "u-2",
        "Normal", "Placed",   "placed replica vllm/0 stage 1 in rack r3, domain n12",
        NULL,     NULL,       0};
    char *body;
    json_t *j;
    json_t *io;

    cr_assert_eq(kube_event(k, &ev, &err), TPX_OK, "%s", err.msg);
    body = fake_api_last(fake, "POST", "/api/v1/namespaces/llm/events", "body");
    j = json_loads(body, 0, NULL);
    cr_assert_not_null(j, "%s", body);
    io = json_object_get(j, "involvedObject");
    cr_expect_str_eq(json_string_value(json_object_get(j, "kind")), "Event");
    cr_expect_str_eq(json_string_value(json_object_get(io, "kind")), "Pod");
    cr_expect_str_eq(json_string_value(json_object_get(io, "name")), "vllm-0-1");
    cr_expect_str_eq(json_string_value(json_object_get(io, "uid")), "u-2");
    cr_expect_str_eq(json_string_value(json_object_get(j, "type")), "Normal");
    cr_expect_str_eq(json_string_value(json_object_get(j, "reason")), "Placed");
    cr_expect_str_eq(json_string_value(json_object_get(j, "message")), ev.message);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "source"), "component")),
                     "topox");
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(j, "metadata"), "generateName")),
        "vllm-0-1.");
    cr_expect_eq(json_integer_value(json_object_get(j, "count")), 1);
    json_decref(j);
    free(body);
    kube_client_free(k);
    kube_config_release(&cfg);
}
