/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_dashboard.c - the Grafana dashboard (deploy/grafana/topox-dashboard.json)
 * asks only for what topox serve exports. The real binary runs against the fake API server
 * (--bind-mode api, so the API-side metrics exist too), answers one filter and one bind so that
 * the per-request series have samples, and /metrics is scraped. Every metric an expression of
 * every panel names must be exported (as a sample, or as a histogram's _bucket/_sum/_count), and
 * every label the expression selects on or groups by must be a label of that metric's samples. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_apiserver.h"
#include "harness.h"

#define DASHBOARD TPX_SOURCE_DIR "/deploy/grafana/topox-dashboard.json"

static struct fake_api *api;
static struct server srv;
static bool running;
static char kubeconfig[64];

static void teardown(void)
{
    if (running)
        server_stop(&srv);
    running = false;
    fake_api_stop(api);
    api = NULL;
    if (kubeconfig[0])
        unlink(kubeconfig);
}

TestSuite(dashboard, .fini = teardown);

/* topox serve against the fake, ready, after a filter and a bind of the pending sglang-0. */
static char *scrape(void)
{
    FILE *f;
    int fd;
    char *resp = NULL;
    const char *args[] = {"--kubeconfig", kubeconfig, "--insecure", "true",
                          "--bind-mode",  "api",      NULL};
    const char *filter =
        "{\"Pod\":{\"metadata\":{\"name\":\"sglang-0\",\"namespace\":\"llm\","
        "\"uid\":\"u-sglang-0\",\"annotations\":{\"topox.io/"
        "tensor-parallel-size\":\"1\"}},\"spec\":{\"containers\":[{\"name\":"
        "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}},"
        "\"Nodes\":null,\"NodeNames\":[\"gpu-r1-n1\",\"gpu-r1-n2\",\"gpu-r2-n1\"]}";
    const char *bind = "{\"PodName\":\"sglang-0\",\"PodNamespace\":\"llm\",\"PodUID\":"
                       "\"u-sglang-0\",\"Node\":\"gpu-r1-n2\"}";
    long st = 0;

    api = fake_api_start(TPX_FIXTURES "/apiserver");
    cr_assert_not_null(api);
    snprintf(kubeconfig, sizeof(kubeconfig), "/tmp/topox-dash-kc-XXXXXX");
    fd = mkstemp(kubeconfig);
    cr_assert(fd >= 0);
    f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
            "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
            "users:\n- name: u\n  user:\n    token: t\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: u\n",
            fake_api_url(api));
    fclose(f);
    cr_assert_eq(server_start(args, &srv), 0, "serve did not start:\n%s", srv.log ? srv.log : "");
    running = true;
    for (int i = 0; i < 300 && st != 200; i++) {
        st = http_call("GET", srv.port, "/readyz", NULL, NULL);
        if (st != 200)
            usleep(100000);
    }
    cr_assert_eq(st, 200, "serve never became ready");
    cr_assert_eq(http_call("POST", srv.port, "/filter", filter, NULL), 200);
    cr_assert_eq(http_call("POST", srv.port, "/bind", bind, NULL), 200);
    cr_assert_eq(http_call("GET", srv.port, "/metrics", NULL, &resp), 200);
    cr_assert_not_null(resp);
    return resp;
}

/* The label names of metric's samples in the scrape, as " a b c " (space around each). */
static bool sample_labels(const char *scrape, const char *metric, char *labels, size_t len)
{
    size_t ml = strlen(metric);
    bool found = false;

    snprintf(labels, len, " ");
    for (const char *l = scrape; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *p;
        if (*l == '#' || strncmp(l, metric, ml) != 0 || (l[ml] != '{' && l[ml] != ' '))
            continue;
        found = true;
        for (p = l + ml; *p == '{' || *p == ',';) {
            const char *eq = strchr(p + 1, '=');
            size_t used = strlen(labels);
            if (!eq)
                break;
            snprintf(labels + used, len - used, "%.*s ", (int)(eq - p - 1), p + 1);
            p = strchr(eq + 2, '"'); /* the value's closing quote (values here have no \") */
            if (!p)
                break;
            p++;
        }
    }
    return found;
}

/* The metric a dashboard name stands for in the scrape: itself, or a histogram's base. */
static bool exported(const char *scrape, const char *name, char *labels, size_t len)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    char type_line[256];

    if (sample_labels(scrape, name, labels, len))
        return true;
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(name), s = strlen(suffixes[i]);
        if (n > s && strcmp(name + n - s, suffixes[i]) == 0) {
            snprintf(type_line, sizeof(type_line), "# TYPE %.*s histogram\n", (int)(n - s), name);
            if (strstr(scrape, type_line))
                return sample_labels(scrape, name, labels, len);
        }
    }
    return false;
}

/* Every label name expr uses for metric: in `metric{a="x",b!~"y"}` and in `by (a, b)`. */
static void check_labels(const char *expr, const char *title, const char *labels)
{
    regex_t sel, by;
    regmatch_t m[2];
    const char *p;

    cr_assert_eq(regcomp(&sel, "([a-z_]+)[ ]*(=~|!~|!=|=)[ ]*\"", REG_EXTENDED), 0);
    cr_assert_eq(regcomp(&by, "by[ ]*\\(([a-z_, ]*)\\)", REG_EXTENDED), 0);
    for (p = expr; regexec(&sel, p, 2, m, 0) == 0; p += m[0].rm_eo) {
        char name[64], want[70];
        snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), p + m[1].rm_so);
        snprintf(want, sizeof(want), " %s ", name);
        cr_expect(strcmp(name, "job") == 0 || strstr(labels, want),
                  "panel '%s': label '%s' is no label of the metric (it has:%s)", title, name,
                  labels);
    }
    for (p = expr; regexec(&by, p, 2, m, 0) == 0; p += m[0].rm_eo) {
        char list[256];
        char *save = NULL;
        snprintf(list, sizeof(list), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), p + m[1].rm_so);
        for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            char want[70];
            snprintf(want, sizeof(want), " %s ", t);
            cr_expect(strcmp(t, "le") == 0 || strcmp(t, "job") == 0 || strstr(labels, want),
                      "panel '%s': groups by '%s', no label of the metric (it has:%s)", title, t,
                      labels);
        }
    }
    regfree(&sel);
    regfree(&by);
}

Test(dashboard, every_panel_asks_for_metrics_serve_exports, .timeout = 120)
{
    char *metrics = scrape();
    json_error_t je;
    json_t *d = json_load_file(DASHBOARD, 0, &je);
    regex_t name_re;
    size_t i, npanels = 0, nexpr = 0;
    json_t *panel;

    cr_assert_not_null(d, "%s: %s (line %d)", DASHBOARD, je.text, je.line);
    cr_assert_eq(regcomp(&name_re, "topox_[a-z_]+", REG_EXTENDED), 0);
    json_array_foreach(json_object_get(d, "panels"), i, panel)
    {
        const char *title = json_string_value(json_object_get(panel, "title"));
        size_t k;
        json_t *t;

        if (strcmp(json_string_value(json_object_get(panel, "type")), "row") == 0)
            continue;
        npanels++;
        cr_expect_gt(json_array_size(json_object_get(panel, "targets")), 0, "panel '%s'", title);
        json_array_foreach(json_object_get(panel, "targets"), k, t)
        {
            const char *expr = json_string_value(json_object_get(t, "expr"));
            regmatch_t m[1];
            size_t names = 0;

            cr_assert_not_null(expr, "panel '%s' has a target without expr", title);
            nexpr++;
            for (const char *p = expr; regexec(&name_re, p, 1, m, 0) == 0; p += m[0].rm_eo) {
                char name[128];
                char labels[512];
                snprintf(name, sizeof(name), "%.*s", (int)(m[0].rm_eo - m[0].rm_so),
                         p + m[0].rm_so);
                names++;
                cr_expect(exported(metrics, name, labels, sizeof(labels)),
                          "panel '%s': %s is not in serve's /metrics", title, name);
                check_labels(expr, title, labels);
            }
            cr_expect_gt(names, 0, "panel '%s': '%s' names no topox metric", title, expr);
        }
    }
    /* the panels the issue asks for are there */
    cr_expect_geq(npanels, 10);
    cr_expect_geq(nexpr, npanels);
    for (const char *const *w =
             (const char *const[]){"topox_rack_free_domains", "topox_rack_largest_tp_placeable",
                                   "topox_reservations", "topox_uncertain_layouts_total",
                                   "topox_request_duration_seconds_bucket",
                                   "topox_filter_nodes_total", NULL};
         *w; w++) {
        char *s = json_dumps(d, 0);
        cr_expect(strstr(s, *w), "no panel shows %s", *w);
        free(s);
    }
    regfree(&name_re);
    json_decref(d);
    free(metrics);
}
