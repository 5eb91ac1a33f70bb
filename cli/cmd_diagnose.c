/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_diagnose.c - `topox diagnose`: the plan (a `topox plan -o json` file, or the manifests
 * planned here by plan's own code), benchmark results, DCGM series (files, or a live Prometheus
 * through kube/'s HTTP client) and the engine's startup log -> which cost dominates each replica
 * and what to change (diagnose/). Exit 0 diagnosed, 2 bad input, 1 failure. */
#include "cli/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/plan_render.h"
#include "common/buf.h"
#include "diagnose/diagnose.h"
#include "kube/client.h"
#include "objects/yamljson.h"

static const char usage[] =
    "usage: topox diagnose (--plan PLAN.json | -f MANIFEST (--cluster SPEC | --nodes FILE...))\n"
    "                      --bench FILE... --metrics FILE\n"
    "                      [--baseline-bench FILE --baseline-metrics FILE] [--startup-log FILE]\n"
    "                      [--window START,END] [--prometheus URL] [-o table|json|yaml]\n"
    "                      [--svg FILE]\n"
    "\n"
    "Judge a pipeline-parallel placement by what it measured: per replica, per stage and per GPU,\n"
    "the effective utilization against the bubble estimate, and the status bubble-dominated,\n"
    "imbalance-dominated, inter-stage-transfer-dominated, unexplained or undecided, with the\n"
    "advice for it and its cost. A missing input leaves the statuses it decides undecided.\n"
    "\n"
    "  --plan FILE           `topox plan -o json` output, with or without --record (JSON or YAML)\n"
    "  -f, --filename FILE   or the job manifests, planned here as `topox plan` plans them\n"
    "                        (repeatable), on one of:\n"
    "  --cluster SPEC        a synthetic cluster, as `topox plan --cluster` takes it\n"
    "  --nodes FILE          Node objects, as `topox plan --nodes` takes them (repeatable)\n"
    "  --bench FILE...       `vllm bench serve --save-result`/`--append-result` JSON, SGLang\n"
    "                        bench_serving JSON lines; files at several pp make a sweep (pp from\n"
    "                        a pp / pipeline_parallel_size key, `--metadata pp=N`, or the name:\n"
    "                        run-pp4.json)\n"
    "  --metrics FILE        DCGM series: a Prometheus /api/v1/query_range answer (matrix) of\n"
    "                        DCGM_FI_PROF_SM_ACTIVE (or DCGM_FI_PROF_GR_ENGINE_ACTIVE),\n"
    "                        DCGM_FI_DEV_GPU_UTIL, optionally DCGM_FI_PROF_NVLINK_TX_BYTES and\n"
    "                        DCGM_FI_PROF_PCIE_TX_BYTES (AMD: gpu_prof_sm_active,\n"
    "                        gpu_gfx_activity); or a /metrics scrape (repeatable)\n"
    "  --baseline-bench FILE  the same workload at pp=1: the sweep's first point\n"
    "  --baseline-metrics FILE  its DCGM series: the reference for the measured gap\n"
    "  --startup-log FILE    the engine's log: the layout it really ran (vLLM \"Initializing a V1\n"
    "                        LLM engine\", SGLang \"server_args=ServerArgs(\"); a mismatch with\n"
    "                        the plan is reported first\n"
    "  --window START,END    only samples in it (RFC 3339 or seconds since the epoch)\n"
    "  --prometheus URL      query the series from Prometheus for --window (needs it)\n"
    "  -o, --output FMT      table (default), json or yaml\n"
    "  --svg FILE            also write effective utilization per stage against the bubble\n"
    "                        bound, and the TTFT/TPOT sweep, as SVG\n"
    "  -h, --help            this text\n"
    "\n"
    "See docs/diagnose.md for the rule and its thresholds.\n"
    "exit status: 0 diagnosed (whatever the statuses), 2 bad input or flag, 1 failure\n";

#define MAX_FILES 64

struct diag_opts {
    const char *plan;
    const char *files[MAX_FILES], *nodes[MAX_FILES], *bench[MAX_FILES], *metrics[MAX_FILES];
    size_t nfiles, nnodes, nbench, nmetrics;
    const char *cluster, *baseline_bench, *baseline_metrics, *startup, *window, *prometheus;
    const char *output, *svg;
};

enum {
    OPT_PLAN = 256,
    OPT_CLUSTER,
    OPT_NODES,
    OPT_BENCH,
    OPT_METRICS,
    OPT_BBENCH,
    OPT_BMETRICS,
    OPT_STARTUP,
    OPT_WINDOW,
    OPT_PROM,
    OPT_SVG
};

static int add(const char **list, size_t *n, const char *v)
{
    if (*n == MAX_FILES) {
        fprintf(stderr, "topox diagnose: more than %d files\n", MAX_FILES);
        return CMD_USAGE;
    }
    list[(*n)++] = v;
    return CMD_OK;
}

static int parse(int argc, char **argv, struct diag_opts *o)
{
    static const struct option opts[] = {
        {"plan", required_argument, NULL, OPT_PLAN},
        {"filename", required_argument, NULL, 'f'},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"nodes", required_argument, NULL, OPT_NODES},
        {"bench", required_argument, NULL, OPT_BENCH},
        {"metrics", required_argument, NULL, OPT_METRICS},
        {"baseline-bench", required_argument, NULL, OPT_BBENCH},
        {"baseline-metrics", required_argument, NULL, OPT_BMETRICS},
        {"startup-log", required_argument, NULL, OPT_STARTUP},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"prometheus", required_argument, NULL, OPT_PROM},
        {"output", required_argument, NULL, 'o'},
        {"svg", required_argument, NULL, OPT_SVG},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cmd_args a = {"topox diagnose",
                         usage,
                         ":f:o:h",
                         opts,
                         argc,
                         argv,
                         "more files go right after --bench",
                         0,
                         0};
    int ch, rc = CMD_OK;

    memset(o, 0, sizeof(*o));
    o->output = "table";
    while (rc == CMD_OK && (ch = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (ch) {
        case CMD_ARGS_EXIT:
            return a.status == CMD_OK ? -1 : a.status;
        case OPT_PLAN:
            o->plan = optarg;
            break;
        case 'f':
            rc = add(o->files, &o->nfiles, optarg);
            break;
        case OPT_CLUSTER:
            o->cluster = optarg;
            break;
        case OPT_NODES:
            rc = add(o->nodes, &o->nnodes, optarg);
            break;
        case OPT_BENCH:
            rc = add(o->bench, &o->nbench, optarg);
            /* --bench a.json b.json c.json: the files up to the next flag */
            while (rc == CMD_OK && optind < argc && argv[optind][0] != '-')
                rc = add(o->bench, &o->nbench, argv[optind++]);
            break;
        case OPT_METRICS:
            rc = add(o->metrics, &o->nmetrics, optarg);
            break;
        case OPT_BBENCH:
            o->baseline_bench = optarg;
            break;
        case OPT_BMETRICS:
            o->baseline_metrics = optarg;
            break;
        case OPT_STARTUP:
            o->startup = optarg;
            break;
        case OPT_WINDOW:
            o->window = optarg;
            break;
        case OPT_PROM:
            o->prometheus = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        case OPT_SVG:
            o->svg = optarg;
            break;
        }
    }
    if (rc != CMD_OK)
        return rc;
    if (strcmp(o->output, "table") != 0 && strcmp(o->output, "json") != 0 &&
        strcmp(o->output, "yaml") != 0)
        return cmd_args_usage_error(&a, "-o '%s': use table, json or yaml", o->output);
    if ((o->plan != NULL) + (o->nfiles > 0) != 1)
        return cmd_args_usage_error(&a, "give the plan: --plan FILE or -f MANIFEST");
    if (o->plan && (o->cluster || o->nnodes))
        return cmd_args_usage_error(&a, "--cluster and --nodes go with -f, not --plan");
    if (o->nfiles && (o->cluster != NULL) + (o->nnodes > 0) != 1)
        return cmd_args_usage_error(&a, "-f needs one of --cluster SPEC or --nodes FILE");
    if (o->prometheus && !o->window)
        return cmd_args_usage_error(&a, "--prometheus needs --window START,END");
    return CMD_OK;
}

/* Percent-encode a PromQL query for the URL. */
static void url_escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (; *s && n + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '-' || c == '.') {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
}

/* The DCGM series of the window (and AMD's equivalents) from a live Prometheus: one query_range
 * per family. A transport
 * or HTTP failure is CMD_FAILED; no DCGM series at all, CMD_USAGE. */
static int from_prometheus(const char *url, const struct dg_window *w, struct dg_metrics *m,
                           struct tpx_err *err)
{
    struct kube_config cfg;
    struct kube_client *k;
    struct tpx_buf body;
    size_t len = strlen(url), before = m->n;
    double step = ceil((w->end - w->start) / 250.0);
    int status = CMD_OK;

    memset(&cfg, 0, sizeof(cfg));
    while (len && url[len - 1] == '/')
        len--;
    cfg.server = strndup(url, len);
    if (!cfg.server)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory"), CMD_FAILED;
    k = kube_client_new(&cfg, err);
    kube_config_release(&cfg);
    if (!k)
        return CMD_FAILED;
    tpx_buf_init(&body, DG_MAX_FILE);
    for (int i = 0; i < DG_M_COUNT + DG_AMD_FAMILIES && status == CMD_OK; i++) {
        const char *family =
            i < DG_M_COUNT ? dg_metric_name((enum dg_metric)i) : dg_amd_families[i - DG_M_COUNT];
        char q[128], path[512], name[DG_STR + 64];
        url_escape(family, q, sizeof(q));
        snprintf(path, sizeof(path), "/api/v1/query_range?query=%s&start=%.3f&end=%.3f&step=%.0f",
                 q, w->start, w->end, step < 1 ? 1 : step);
        snprintf(name, sizeof(name), "%.*s %s", (int)len, url, family);
        if (kube_request(k, "GET", path, NULL, NULL, &body, err) != TPX_OK) {
            tpx_err_prefix(err, "--prometheus %.*s", (int)len, url);
            status = CMD_FAILED;
        } else if (dg_metrics_parse(m, body.data ? body.data : "", body.len, name, w, err) !=
                   TPX_OK) {
            status = CMD_USAGE;
        }
    }
    tpx_buf_release(&body);
    kube_client_free(k);
    if (status == CMD_OK && m->n == before) {
        tpx_err_set(err, TPX_EINVAL, "--prometheus %.*s: no DCGM series in the window", (int)len,
                    url);
        status = CMD_USAGE;
    }
    return status;
}

static enum tpx_code write_svg(const char *path, const struct dg_result *r, struct tpx_err *err)
{
    struct tpx_buf b;
    FILE *f;
    enum tpx_code rc;

    tpx_buf_init(&b, (size_t)64 << 20);
    rc = dg_report_svg(r, &b, err);
    if (rc == TPX_OK) {
        f = fopen(path, "w");
        if (!f)
            rc = tpx_err_errno(err, errno, "cannot open '%s'", path);
        else if (fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0)
            rc = tpx_err_set(err, TPX_EIO, "cannot write '%s'", path);
    }
    tpx_buf_release(&b);
    return rc;
}

/* The plan: a file, or the manifests planned here. */
static int load_plan(const struct diag_opts *o, struct dg_plan *plan, struct tpx_err *err)
{
    json_t *recs = NULL;
    int status;

    if (o->plan)
        return dg_plan_load(plan, o->plan, err) == TPX_OK ? CMD_OK : CMD_USAGE;
    status = cmd_plan_records(o->files, o->nfiles, o->nodes, o->nnodes, o->cluster, &recs, err);
    if (status == CMD_OK && (!recs || dg_plan_add_json(plan, recs, o->files[0], err) != TPX_OK))
        status = err->code == TPX_OK ? CMD_USAGE : CMD_FAILED;
    if (status == CMD_OK && plan->n == 0) {
        tpx_err_set(err, TPX_EINVAL, "%s: no replica to diagnose", o->files[0]);
        status = CMD_USAGE;
    }
    json_decref(recs);
    return status;
}

static int render(const struct diag_opts *o, const struct dg_result *res, struct tpx_err *err)
{
    struct tpx_buf out;
    json_t *doc = NULL;
    int status = CMD_FAILED;

    tpx_buf_init(&out, (size_t)256 << 20);
    if (strcmp(o->output, "table") == 0) {
        if (dg_report_table(res, &out, err) != TPX_OK)
            goto out;
    } else {
        if (dg_report_json(res, &doc, err) != TPX_OK)
            goto out;
        if (strcmp(o->output, "json") == 0) {
            char *s = json_dumps(doc, JSON_INDENT(2));
            if (!s || tpx_buf_adds(&out, s, err) != TPX_OK || tpx_buf_adds(&out, "\n", err)) {
                free(s);
                tpx_err_set(err, TPX_ENOMEM, "out of memory");
                goto out;
            }
            free(s);
        } else if (obj_yaml_dump(doc, &out, err) != TPX_OK) {
            goto out;
        }
    }
    fwrite(out.data, 1, out.len, stdout);
    if (o->svg && write_svg(o->svg, res, err) != TPX_OK)
        goto out;
    status = CMD_OK;
out:
    json_decref(doc);
    tpx_buf_release(&out);
    return status;
}

int cmd_diagnose(int argc, char **argv)
{
    struct diag_opts o;
    struct tpx_err err = TPX_ERR_INIT;
    struct dg_plan plan = {0};
    struct dg_bench_set bench = {0}, bbench = {0};
    struct dg_metrics metrics = {0}, bmetrics = {0};
    struct dg_startup startup;
    struct dg_window w = {0, 0, false};
    struct dg_result res;
    struct dg_inputs in;
    int status;

    memset(&res, 0, sizeof(res));
    status = parse(argc, argv, &o);
    if (status != CMD_OK)
        return status < 0 ? CMD_OK : status;
    status = CMD_USAGE; /* bad input until every file is read */
    if (o.window && dg_window_parse(o.window, &w, &err) != TPX_OK)
        goto out;
    if ((status = load_plan(&o, &plan, &err)) != CMD_OK)
        goto out;
    status = CMD_USAGE;
    for (size_t i = 0; i < o.nbench; i++) {
        if (dg_bench_load(&bench, o.bench[i], &err) != TPX_OK)
            goto out;
    }
    for (size_t i = 0; i < o.nmetrics; i++) {
        if (dg_metrics_load(&metrics, o.metrics[i], &w, &err) != TPX_OK)
            goto out;
    }
    if (o.prometheus && (status = from_prometheus(o.prometheus, &w, &metrics, &err)) != CMD_OK)
        goto out;
    status = CMD_USAGE;
    if ((o.baseline_bench && dg_bench_load(&bbench, o.baseline_bench, &err) != TPX_OK) ||
        (o.baseline_metrics && dg_metrics_load(&bmetrics, o.baseline_metrics, NULL, &err)) ||
        (o.startup && dg_startup_load(&startup, o.startup, &err) != TPX_OK))
        goto out;
    in = (struct dg_inputs){&plan,
                            o.nmetrics || o.prometheus ? &metrics : NULL,
                            o.nbench ? &bench : NULL,
                            o.baseline_metrics ? &bmetrics : NULL,
                            o.baseline_bench ? &bbench : NULL,
                            o.startup ? &startup : NULL,
                            NULL};
    status = CMD_FAILED;
    if (dg_run(&in, &res, &err) != TPX_OK)
        goto out;
    if (!o.nmetrics && !o.prometheus)
        fprintf(stderr, "topox diagnose: note: no --metrics: every status is undecided\n");
    if (!o.nbench)
        fprintf(stderr, "topox diagnose: note: no --bench: perf is empty, no sweep\n");
    status = render(&o, &res, &err);
out:
    if (err.code != TPX_OK)
        fprintf(stderr, "topox diagnose: %s\n", err.msg);
    dg_result_release(&res);
    dg_plan_release(&plan);
    dg_bench_release(&bench);
    dg_bench_release(&bbench);
    dg_metrics_release(&metrics);
    dg_metrics_release(&bmetrics);
    return status;
}
