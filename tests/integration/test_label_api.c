/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_label_api.c - `topox label` without --dry-run, as the DaemonSet runs it:
 * the real binary against the in-process fake API server (fake_apiserver.c, port 0, reached
 * through a kubeconfig written here). One merge PATCH of the own Node with the discovered labels
 * and the topox.io/topology annotation; no PATCH when nothing changed; stale topox.io/... keys
 * nulled, foreign and inventory keys never mentioned; NODE_NAME; 404 and 403; `--inventory` (CSV
 * and YAML) patching every listed node and reporting the differences; `--interval` looping until
 * SIGTERM. The fake applies each merge patch to the node it serves, as the API server would. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_apiserver.h"
#include "harness.h"

#define XML_H100 TPX_FIXTURES "/hwloc/dell-xe8640-4xH100-nvlink-mlx5.xml"
#define XML_DGX2 TPX_FIXTURES "/hwloc/nvidia-dgx2h-16xV100-12nvswitch.xml"
#define WAIT_MS 60000L /* a safety net for waits on the fake, never an assertion */

extern char **environ;

/* ---- the world of one test ---------------------------------------------------------------- */

struct world {
    struct fake_api *api;
    char kubeconfig[64];
    char files[4][64]; /* temporary files to remove */
    size_t nfiles;
};

static struct world *cur;

static void teardown(void)
{
    if (!cur)
        return;
    fake_api_stop(cur->api);
    unlink(cur->kubeconfig);
    for (size_t i = 0; i < cur->nfiles; i++)
        unlink(cur->files[i]);
    free(cur);
    cur = NULL;
}

TestSuite(label_api, .fini = teardown);

static struct world *world_new(void)
{
    struct world *w = calloc(1, sizeof(*w));
    FILE *f;
    int fd;

    cr_assert_not_null(w);
    cur = w;
    w->api = fake_api_start(TPX_FIXTURES "/apiserver");
    cr_assert_not_null(w->api, "the fake API server did not start");
    snprintf(w->kubeconfig, sizeof(w->kubeconfig), "/tmp/topox-kc-XXXXXX");
    fd = mkstemp(w->kubeconfig);
    cr_assert(fd >= 0);
    close(fd);
    f = fopen(w->kubeconfig, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
            "users:\n- name: labeler\n  user:\n    token: label-token\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: labeler\n",
            fake_api_url(w->api));
    fclose(f);
    fake_api_set_token(w->api, "label-token");
    return w;
}

/* A temporary file holding text; suffix such as ".csv" (the inventory picks its format by it). */
static const char *temp_file(struct world *w, const char *suffix, const char *text)
{
    char *path;
    int fd;
    size_t len = strlen(text);

    cr_assert(w->nfiles < sizeof(w->files) / sizeof(w->files[0]));
    path = w->files[w->nfiles++];
    snprintf(path, sizeof(w->files[0]), "/tmp/topox-la-XXXXXX%s", suffix);
    fd = mkstemps(path, (int)strlen(suffix));
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

/* `topox label --kubeconfig K --insecure ARGS...` (the fake is http) */
static void label(struct world *w, const char *const *extra, struct run_result *r)
{
    const char *args[24] = {"label", "--kubeconfig", w->kubeconfig, "--insecure"};
    size_t n = 4;

    for (size_t i = 0; extra[i] && n < 23; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    cr_assert_eq(run_topox(args, NULL, r), 0, "topox could not be started");
}

static bool one_line(const struct run_result *r)
{
    return r->err_len > 0 && strchr(r->err, '\n') == r->err + r->err_len - 1;
}

/* The last PATCH body sent to /api/v1/nodes/NODE, parsed; NULL when there was none. */
static json_t *last_patch(struct world *w, const char *node)
{
    char needle[128];
    char *body;
    json_t *j;

    snprintf(needle, sizeof(needle), "/api/v1/nodes/%s", node);
    body = fake_api_last(w->api, "PATCH", needle, "body");
    if (!body)
        return NULL;
    j = json_loads(body, 0, NULL);
    cr_assert_not_null(j, "PATCH body is not JSON: %s", body);
    free(body);
    return j;
}

static char *last_patch_text(struct world *w, const char *node)
{
    char needle[128];

    snprintf(needle, sizeof(needle), "/api/v1/nodes/%s", node);
    return fake_api_last(w->api, "PATCH", needle, "body");
}

static json_t *meta_get(json_t *obj, const char *what)
{
    return json_object_get(json_object_get(obj, "metadata"), what);
}

/* The node the fake serves now (what a later GET sees). */
static json_t *served_node(struct world *w, const char *node)
{
    char path[128];
    char *resp = NULL;
    long code;
    json_t *j;

    fake_api_set_token(w->api, NULL); /* http_call sends no token */
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    code = http_call("GET", fake_api_port(w->api), path, NULL, &resp);
    fake_api_set_token(w->api, "label-token");
    cr_assert_eq(code, 200, "GET %s: %ld", path, code);
    j = json_loads(resp, 0, NULL);
    cr_assert_not_null(j, "%s", resp);
    free(resp);
    return j;
}

static void expect_label(json_t *labels, const char *key, const char *value)
{
    json_t *v = json_object_get(labels, key);

    cr_expect(json_is_string(v), "label %s: missing or not a string", key);
    if (json_is_string(v))
        cr_expect_str_eq(json_string_value(v), value, "label %s", key);
}

/* ---- discovery: the DaemonSet run ----------------------------------------------------------- */

/* Issue 12 item 11: the fake is http://; without --insecure nothing is sent, and the message
 * names the server and the flag. */
Test(label_api, a_plain_http_server_is_refused_without_insecure)
{
    struct world *w = world_new();
    const char *args[] = {"label",  "--kubeconfig", w->kubeconfig, "--topology-xml",
                          XML_H100, "--node",       "gpu-r1-n1",   NULL};
    struct run_result r;

    cr_assert_eq(run_topox(args, NULL, &r), 0, "topox could not be started");
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, fake_api_url(w->api)) != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "--insecure") != NULL, "%s", r.err);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 0);
    cr_expect_eq(fake_api_count(w->api, "GET", "/api/v1/nodes/"), 0);
}

Test(label_api, patches_the_own_node_with_one_merge_patch)
{
    struct world *w = world_new();
    struct run_result r;
    json_t *patch;
    json_t *labels;
    json_t *ann;
    json_t *topo;
    char *ct;
    const char *key;
    json_t *v;

    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n1", NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "node gpu-r1-n1: 9 labels set, 0 removed, 0 unchanged, annotation "
                            "updated\n") != NULL,
              "%s", r.out);
    run_result_release(&r);

    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 1);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1"), 1);
    ct = fake_api_last(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1", "content-type");
    cr_assert_not_null(ct);
    cr_expect_str_eq(ct, "application/merge-patch+json");
    free(ct);
    ct = fake_api_last(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1", "auth");
    cr_expect_str_eq(ct, "Bearer label-token");
    free(ct);

    patch = last_patch(w, "gpu-r1-n1");
    cr_assert_not_null(patch);
    cr_expect_eq(json_object_size(patch), 1, "only metadata is patched");
    cr_expect_eq(json_object_size(json_object_get(patch, "metadata")), 2);
    labels = meta_get(patch, "labels");
    expect_label(labels, "topox.io/accelerator", "nvidia");
    expect_label(labels, "topox.io/accelerator-count", "4");
    expect_label(labels, "topox.io/interconnect", "nvlink");
    expect_label(labels, "topox.io/domain-size", "4"); /* the fixture node says 8 */
    expect_label(labels, "topox.io/domains-per-node", "1");
    expect_label(labels, "topox.io/numa-nodes", "8");
    expect_label(labels, "topox.io/rdma-nics", "4");
    expect_label(labels, "topox.io/gpu-nic-affinity", "none");
    expect_label(labels, "topox.io/nvlink-full", "true");
    cr_expect_eq(json_object_size(labels), 9);
    json_object_foreach(labels, key, v)
    {
        cr_expect(strncmp(key, "topox.io/", 9) == 0, "foreign key %s in the patch", key);
        cr_expect(strcmp(key, "topox.io/rack") != 0, "the inventory's rack is not touched");
    }
    ann = meta_get(patch, "annotations");
    cr_expect_eq(json_object_size(ann), 1);
    cr_assert(json_is_string(json_object_get(ann, "topox.io/topology")));
    topo = json_loads(json_string_value(json_object_get(ann, "topox.io/topology")), 0, NULL);
    cr_expect_not_null(topo, "the annotation is JSON text");
    cr_expect_eq(json_integer_value(json_object_get(topo, "version")), 1);
    json_decref(topo);
    json_decref(patch);
}

Test(label_api, second_run_on_the_patched_node_sends_nothing)
{
    struct world *w = world_new();
    const char *const args[] = {"--topology-xml", XML_H100, "--node", "gpu-r1-n1", NULL};
    struct run_result r;

    label(w, args, &r);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    cr_assert_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 1);

    label(w, args, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "node gpu-r1-n1: 0 labels set, 0 removed, 9 unchanged\n") != NULL, "%s",
              r.out);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "GET", "/api/v1/nodes/gpu-r1-n1"), 2);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 1,
                 "changes nothing when nothing changed");
}

Test(label_api, new_hardware_patches_only_what_differs)
{
    struct world *w = world_new();
    struct run_result r;
    char *body;

    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n1", NULL}, &r);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    /* The same node, now seen as a DGX-2: 16 V100 behind NVSwitches, 2 NUMA nodes, no RDMA. */
    label(w, (const char *[]){"--topology-xml", XML_DGX2, "--node", "gpu-r1-n1", NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    cr_assert_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1"), 2);
    body = last_patch_text(w, "gpu-r1-n1");
    cr_assert_not_null(body);
    cr_expect(strstr(body, "{\"metadata\":{\"annotations\":{\"topox.io/topology\":") == body, "%s",
              body);
    cr_expect(strstr(body, ",\"labels\":{\"topox.io/accelerator-count\":\"16\","
                           "\"topox.io/domain-size\":\"16\",\"topox.io/interconnect\":\"nvswitch\","
                           "\"topox.io/numa-nodes\":\"2\",\"topox.io/rdma-nics\":\"0\"}}}") != NULL,
              "%s", body);
    free(body);
}

Test(label_api, stale_owned_keys_are_nulled_and_foreign_keys_never_mentioned)
{
    static const char list[] =
        "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\"},"
        "\"items\":[{\"metadata\":{\"name\":\"gpu-old\",\"labels\":{"
        "\"kubernetes.io/hostname\":\"gpu-old\",\"nvidia.com/gpu.count\":\"4\","
        "\"topox.io/accelerator\":\"nvidia\",\"topox.io/interconnect\":\"nvswitch\","
        "\"topox.io/domains-per-node\":\"2\",\"topox.io/nvswitch-count\":\"6\","
        "\"topox.io/rack\":\"r7\",\"topox.io/block\":\"b3\",\"topox.io/nvlink-domain\":\"nd1\"},"
        "\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\","
        "\"topox.io/topology\":\"{\\\"version\\\":1}\"}}}]}";
    struct world *w = world_new();
    struct run_result r;
    json_t *patch;
    json_t *labels;
    json_t *ann;
    json_t *node;
    const char *const foreign[] = {"kubernetes.io/hostname", "nvidia.com/gpu.count",
                                   "topox.io/rack",          "topox.io/block",
                                   "topox.io/nvlink-domain", "topox.io/accelerator"};

    cr_assert_eq(fake_api_set_list(w->api, "/api/v1/nodes", list), 0);
    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-old", NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "node gpu-old: 8 labels set, 1 removed, 1 unchanged, annotation "
                            "updated\n") != NULL,
              "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-old"), 1);

    patch = last_patch(w, "gpu-old");
    cr_assert_not_null(patch);
    labels = meta_get(patch, "labels");
    expect_label(labels, "topox.io/interconnect", "nvlink");
    expect_label(labels, "topox.io/domains-per-node", "1");
    cr_expect(json_is_null(json_object_get(labels, "topox.io/nvswitch-count")),
              "a stale owned key is set to null");
    for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
        cr_expect_null(json_object_get(labels, foreign[i]), "%s must not be in the patch",
                       foreign[i]);
    ann = meta_get(patch, "annotations");
    cr_expect_eq(json_object_size(ann), 1);
    cr_expect_null(json_object_get(ann, "node.alpha.kubernetes.io/ttl"));
    cr_expect(json_is_string(json_object_get(ann, "topox.io/topology")));
    json_decref(patch);

    /* What the node looks like after the API server merged the patch. */
    node = served_node(w, "gpu-old");
    labels = meta_get(node, "labels");
    expect_label(labels, "kubernetes.io/hostname", "gpu-old");
    expect_label(labels, "topox.io/rack", "r7");
    expect_label(labels, "topox.io/block", "b3");
    expect_label(labels, "topox.io/nvlink-domain", "nd1");
    expect_label(labels, "topox.io/interconnect", "nvlink");
    cr_expect_null(json_object_get(labels, "topox.io/nvswitch-count"));
    expect_label(meta_get(node, "annotations"), "node.alpha.kubernetes.io/ttl", "0");
    json_decref(node);
}

Test(label_api, node_name_comes_from_the_environment)
{
    struct world *w = world_new();
    struct run_result r;

    cr_assert_eq(setenv("NODE_NAME", "gpu-r2-n1", 1), 0);
    label(w, (const char *[]){"--topology-xml", XML_H100, NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "node gpu-r2-n1: ") != NULL, "%s", r.out);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-r2-n1"), 1);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 1);

    /* --node wins over the environment. */
    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n2", NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n2"), 1);

    /* Neither: a usage error, nothing sent. */
    cr_assert_eq(unsetenv("NODE_NAME"), 0);
    label(w, (const char *[]){"--topology-xml", XML_H100, NULL}, &r);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "NODE_NAME") != NULL, "%s", r.err);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 2);
}

Test(label_api, missing_node_is_a_one_line_error_naming_it)
{
    struct world *w = world_new();
    struct run_result r;

    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-gone", NULL}, &r);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(one_line(&r), "not one line: %s", r.err);
    cr_expect(strstr(r.err, "topox label: get node 'gpu-gone': ") == r.err, "%s", r.err);
    cr_expect(strstr(r.err, "HTTP 404") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "AddressSanitizer") == NULL, "%s", r.err);
    cr_expect_eq(r.out_len, 0, "%s", r.out);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "GET", "/api/v1/nodes/gpu-gone"), 1,
                 "a 404 is not retried");
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 0);
}

Test(label_api, forbidden_patch_is_a_clear_error)
{
    struct world *w = world_new();
    struct run_result r;

    fake_api_fail_method(w->api, "PATCH", 1, 403, "status-403-patch-node.json");
    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n1", NULL}, &r);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(one_line(&r), "not one line: %s", r.err);
    cr_expect(strstr(r.err, "topox label: patch node 'gpu-r1-n1': ") == r.err, "%s", r.err);
    cr_expect(strstr(r.err, "HTTP 403") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "cannot patch resource \"nodes\"") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "patch node 'gpu-r1-n1': patch node") == NULL,
              "the node is named once: %s", r.err);
    cr_expect_eq(r.out_len, 0, "%s", r.out);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 1, "a 403 is not retried");
}

Test(label_api, forbidden_get_is_a_clear_error)
{
    struct world *w = world_new();
    struct run_result r;

    fake_api_fail_method(w->api, "GET", 1, 403, "status-403-patch-node.json");
    label(w, (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n1", NULL}, &r);
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(one_line(&r), "not one line: %s", r.err);
    cr_expect(strstr(r.err, "topox label: get node 'gpu-r1-n1': ") == r.err, "%s", r.err);
    cr_expect(strstr(r.err, "HTTP 403") != NULL, "%s", r.err);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 0);
}

/* ---- inventory --------------------------------------------------------------------------------
 */

Test(label_api, inventory_csv_patches_every_listed_node_that_exists)
{
    struct world *w = world_new();
    const char *inv = temp_file(w, ".csv",
                                "node,rack,block,nvlink-domain\n"
                                "gpu-r1-n1,r1,b1,nd1\n"
                                "gpu-r2-n1,r3,b2,\n"
                                "ghost,r9,b9,nd9\n");
    const char *inv2 = temp_file(w, ".csv", "gpu-r2-n1,r3,,\n");
    struct run_result r;
    char *body;

    label(w, (const char *[]){"--inventory", inv, NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "gpu-r1-n1 topox.io/rack=r1 topox.io/block=b1 "
                            "topox.io/nvlink-domain=nd1 (changed)\n") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "gpu-r2-n1 topox.io/rack=r3 topox.io/block=b2 (changed)\n") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "ghost topox.io/rack=r9 topox.io/block=b9 topox.io/nvlink-domain=nd9 "
                            "(not in the cluster)\n") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "# gpu-r1-n2: in the cluster, not in the inventory\n") != NULL, "%s",
              r.out);
    cr_expect(strstr(r.err, "topox label: 1 inventory nodes are not in the cluster, 1 cluster "
                            "nodes are not in the inventory\n") != NULL,
              "%s", r.err);
    run_result_release(&r);

    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 2);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n2"), 0);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/ghost"), 0);
    /* Only the inventory's keys: topox.io/domain-size, which the nodes carry, stays untouched. */
    body = last_patch_text(w, "gpu-r1-n1");
    cr_expect_str_eq(body, "{\"metadata\":{\"labels\":{\"topox.io/block\":\"b1\","
                           "\"topox.io/nvlink-domain\":\"nd1\"}}}");
    free(body);
    body = last_patch_text(w, "gpu-r2-n1");
    cr_expect_str_eq(body, "{\"metadata\":{\"labels\":{\"topox.io/block\":\"b2\","
                           "\"topox.io/rack\":\"r3\"}}}");
    free(body);

    /* Again: the nodes now carry it all. */
    label(w, (const char *[]){"--inventory", inv, NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "gpu-r2-n1 topox.io/rack=r3 topox.io/block=b2 (unchanged)\n") != NULL,
              "%s", r.out);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 2);

    /* An emptied cell removes the label. */
    label(w, (const char *[]){"--inventory", inv2, NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 3);
    body = last_patch_text(w, "gpu-r2-n1");
    cr_expect_str_eq(body, "{\"metadata\":{\"labels\":{\"topox.io/block\":null}}}");
    free(body);
}

Test(label_api, inventory_yaml_json_report)
{
    struct world *w = world_new();
    const char *inv = temp_file(w, ".yaml",
                                "nodes:\n"
                                "  - name: gpu-r1-n2\n"
                                "    rack: r2\n"
                                "    block: b1\n"
                                "  - name: gpu-r2-n1\n"
                                "    rack: r2\n"
                                "    nvlink-domain: nd2\n"
                                "  - name: ghost-a\n"
                                "    rack: r5\n");
    struct run_result r;
    json_t *rep;
    json_t *rows;
    char *body;

    label(w, (const char *[]){"--inventory", inv, "-o", "json", NULL}, &r);
    cr_expect_eq(r.status, 0, "%s", r.err);
    rep = json_loads(r.out, 0, NULL);
    cr_assert_not_null(rep, "%s", r.out);
    cr_expect(json_is_false(json_object_get(rep, "dry_run")));
    cr_expect_eq(json_array_size(json_object_get(rep, "not_in_cluster")), 1);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(rep, "not_in_cluster"), 0)),
                     "ghost-a");
    cr_expect_eq(json_array_size(json_object_get(rep, "not_in_inventory")), 1);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(rep, "not_in_inventory"), 0)),
                     "gpu-r1-n1");
    rows = json_object_get(rep, "nodes");
    cr_assert_eq(json_array_size(rows), 3);
    cr_expect(json_is_true(json_object_get(json_array_get(rows, 0), "changed")));
    cr_expect(json_is_true(json_object_get(json_array_get(rows, 1), "changed")));
    cr_expect(json_is_false(json_object_get(json_array_get(rows, 2), "in_cluster")));
    json_decref(rep);
    cr_expect(strstr(r.err, "1 inventory nodes are not in the cluster, 1 cluster nodes are not "
                            "in the inventory") != NULL,
              "%s", r.err);
    run_result_release(&r);

    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 2);
    body = last_patch_text(w, "gpu-r1-n2");
    cr_expect_str_eq(body, "{\"metadata\":{\"labels\":{\"topox.io/block\":\"b1\","
                           "\"topox.io/rack\":\"r2\"}}}");
    free(body);
    body = last_patch_text(w, "gpu-r2-n1");
    cr_expect_str_eq(body, "{\"metadata\":{\"labels\":{\"topox.io/nvlink-domain\":\"nd2\"}}}");
    free(body);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1"), 0);
}

/* ---- --interval: the DaemonSet loop -----------------------------------------------------------
 */

/* Start `topox label --kubeconfig K --insecure ARGS...` in the background, stdout and stderr into
 * log (a temporary file). Returns the pid. */
static pid_t spawn_label(struct world *w, const char *const *extra, const char *log)
{
    const char *args[24] = {TOPOX_BIN, "label", "--kubeconfig", w->kubeconfig, "--insecure"};
    size_t n = 5;
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int rc;

    for (size_t i = 0; extra[i] && n < 23; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_APPEND, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_APPEND, 0);
    rc = posix_spawn(&pid, TOPOX_BIN, &fa, NULL, (char *const *)args, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "posix_spawn: %s", strerror(rc));
    return pid;
}

/* SIGTERM, wait; the exit status (128 + signal when killed). */
static int term_and_wait(pid_t pid)
{
    int ws;

    kill(pid, SIGTERM);
    if (waitpid(pid, &ws, 0) != pid)
        return -1;
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : -1;
}

Test(label_api, interval_relabels_until_sigterm_then_exits_0)
{
    struct world *w = world_new();
    const char *log = temp_file(w, ".log", "");
    pid_t pid;
    unsigned got;
    int status;
    char *text;

    pid = spawn_label(w,
                      (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n1",
                                       "--interval", "1s", NULL},
                      log);
    got = fake_api_wait_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1", 1, WAIT_MS);
    cr_expect_eq(got, 1, "no PATCH from the first round");
    /* A third GET means the second round (on the patched node) has finished. */
    got = fake_api_wait_count(w->api, "GET", "/api/v1/nodes/gpu-r1-n1", 3, WAIT_MS);
    cr_expect_geq(got, 3, "the loop did not go round");
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 1,
                 "later rounds on an unchanged node send nothing");
    status = term_and_wait(pid);
    text = read_file(log, NULL);
    cr_expect_eq(status, 0, "SIGTERM must end the loop with exit 0:\n%s", text ? text : "");
    cr_expect(text && strstr(text, "\"msg\":\"node labelled\"") != NULL, "%s", text ? text : "");
    free(text);
}

Test(label_api, interval_retries_a_failed_round)
{
    struct world *w = world_new();
    const char *log = temp_file(w, ".log", "");
    pid_t pid;
    unsigned got;
    int status;
    char *text;

    fake_api_fail_method(w->api, "PATCH", 1, 403, "status-403-patch-node.json");
    pid = spawn_label(w,
                      (const char *[]){"--topology-xml", XML_H100, "--node", "gpu-r1-n1",
                                       "--interval", "1s", NULL},
                      log);
    got = fake_api_wait_count(w->api, "PATCH", "/api/v1/nodes/gpu-r1-n1", 2, WAIT_MS);
    cr_expect_eq(got, 2, "the failed round was not retried");
    got = fake_api_wait_count(w->api, "GET", "/api/v1/nodes/gpu-r1-n1", 3, WAIT_MS);
    cr_expect_geq(got, 3);
    cr_expect_eq(fake_api_count(w->api, "PATCH", "/api/v1/nodes/"), 2);
    status = term_and_wait(pid);
    text = read_file(log, NULL);
    cr_expect_eq(status, 0, "%s", text ? text : "");
    cr_expect(text && strstr(text, "\"msg\":\"label failed\"") != NULL, "%s", text ? text : "");
    cr_expect(text && strstr(text, "\"msg\":\"node labelled\"") != NULL, "%s", text ? text : "");
    free(text);
}
