/* SPDX-License-Identifier: Apache-2.0 */
/* cli/cmd_simulate.c - `topox simulate`: replay a trace of group arrivals and departures on a
 * synthetic cluster through the policy core (simulate/sim.c) with topox's score or a reference
 * policy, and print what became of the groups (table or JSON) and the fragmentation over time
 * (SVG); or write a generated trace (simulate/simgen.c). docs/simulate.md. */
#include "cli/cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "common/buf.h"
#include "common/parse.h"
#include "simulate/trace.h"
#include "simulate/sim.h"

static const char usage[] =
    "usage: topox simulate --cluster SPEC (--trace FILE | --generate GEN)\n"
    "                      [--policy LIST] [-o table|json] [--by-shape] [--svg FILE]\n"
    "                      [--queue [--backfill] [--max-wait DURATION]]\n"
    "       topox simulate --generate GEN\n"
    "\n"
    "Replay a trace of LeaderWorkerSet-like groups arriving and leaving on a synthetic cluster,\n"
    "through the same filter, score and commit as `topox serve` (or a reference policy), and\n"
    "print how many groups were placed whole, half-placed, across racks, with a TP group split\n"
    "over domains, or rejected (WITH-ROOM: of those, how many found enough free GPUs in the\n"
    "cluster, not where the rules allow), the GPU-hours used and stranded, and the mean\n"
    "fragmentation.\n"
    "With --generate and no --cluster, write the generated trace to stdout instead.\n"
    "\n"
    "  --cluster SPEC   a synthetic cluster (see `topox cluster --help`), e.g.\n"
    "                   racks=8,nodes-per-rack=8,gpus-per-node=8,domain-nodes=2; several\n"
    "                   joined with + (a mixed fleet); or a named shape: hgx (16 racks of 8\n"
    "                   8-GPU nodes), gb200 (8 NVL72-like racks of 18 4-GPU nodes), mixed,\n"
    "                   openb (the openb trace's nodes; docs/simulate.md)\n"
    "  --trace FILE     JSON lines, one event each (- is stdin):\n"
    "                   {\"time\":S,\"event\":\"arrive\",\"group\":\"g1\",\"pods\":2,\"gpus\":8,\n"
    "                    \"tp\":8,\"pp\":2}  and  "
    "{\"time\":S,\"event\":\"leave\",\"group\":\"g1\"}\n"
    "  --generate GEN   a generated trace: seed=N (1), groups=N (400), gpus=N (512: the cluster\n"
    "                   size the load is meant for), load=X (1.0: offered load), life=H (6: mean\n"
    "                   lifetime in hours), mix=classic|llm-serving|training|mixed (classic),\n"
    "                   fleet=hgx|gb200|mixed (hgx: the node sizes the mix is drawn for; with a\n"
    "                   mix gpus defaults to that cluster shape and life to 8), diurnal=0|1\n"
    "                   (arrivals follow the day; on for llm-serving and mixed)\n"
    "  --policy LIST    comma-separated, each replayed in turn (default topox,best-fit,blind):\n"
    "                   topox     the score `topox serve` answers /prioritize with\n"
    "                   best-fit  the same rules and holds; the rack left with the least free\n"
    "                             GPUs after the whole group, then the fullest node\n"
    "                   blind     no rules, no holds: each pod on the first node with room\n"
    "                   pack      topox with the experimental rack rank of policy/pack.c\n"
    "                             (off in serve and plan; docs/simulate.md)\n"
    "                   pack-term topox with the absolute per-rack packing term of\n"
    "                             policy/pack.c (off in serve and plan; docs/simulate.md)\n"
    "                   fluid     a reference, not a placement (no rules): a group is admitted\n"
    "                             whole whenever the cluster has as many free GPUs as it\n"
    "                             needs, as if any free GPUs could be combined\n"
    "                   fluid-rack  the same, when some rack has as many free GPUs\n"
    "                   kueue-best-fit    Kueue TAS BestFit: the tightest rack, the roomiest node\n"
    "                   kueue-least-free  Kueue TAS LeastFreeCapacity: the least free rack, node\n"
    "                   volcano-binpack   Volcano HyperNode binpack: the most used rack, node\n"
    "                   slurm-block       Slurm topology/block: whole racks and NVLink domains\n"
    "                                     kept free, best fit (all four: first member only,\n"
    "                                     topox's rules and holds; docs/simulate.md)\n"
    "  -o, --output FMT table (default) or json\n"
    "  --by-shape       also print, per policy and group shape, the groups that arrived, were\n"
    "                   placed whole and were rejected: with room in the cluster, and of those\n"
    "                   with room in one rack (-o json always has them)\n"
    "  --svg FILE       also write the stranded share of the cluster over time, one curve per\n"
    "                   policy (with --queue: the wait CDF of each shape, a curve per policy)\n"
    "  --queue          a group that cannot be placed waits (Pending) instead of being rejected:\n"
    "                   retried in arrival order when capacity is freed, after kube-scheduler's\n"
    "                   backoff (1 s doubling to 10 s); it lives its trace lifetime from when it\n"
    "                   was placed. Prints waits per shape (p50, p95, max), GPU-hours delivered\n"
    "                   up to the last arrival, the allocation rate while groups wait, the share\n"
    "                   of time each shape was placeable, and the groups that gave up\n"
    "  --backfill       with --queue: a later group that fits may go while an earlier one waits\n"
    "                   (else the first waiting group blocks the rest: strict FIFO)\n"
    "  --max-wait DUR   with --queue: a group gives up after waiting DUR (e.g. 6h), counted\n"
    "  -h, --help       this text\n"
    "\n"
    "exit status: 0 replayed (or written), 1 failed, 2 bad flag, spec or trace\n";

#define MAX_POLICIES 12

struct simulate_opts {
    const char *cluster;
    const char *trace;
    const char *generate;
    const char *output;
    const char *svg;
    bool by_shape;
    struct sim_opts q;
    enum sim_policy policies[MAX_POLICIES];
    size_t npolicies;
};

static int parse_policies(const struct cmd_args *a, const char *list, struct simulate_opts *o)
{
    const char *p = list;

    o->npolicies = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        char word[32];
        snprintf(word, sizeof(word), "%.*s", (int)(len < 31 ? len : 31), p);
        if (o->npolicies == MAX_POLICIES || !sim_policy_parse(word, &o->policies[o->npolicies]))
            return cmd_args_usage_error(a,
                                        "--policy: '%s' is not topox, best-fit, blind, pack, "
                                        "pack-term, fluid, fluid-rack, kueue-best-fit, "
                                        "kueue-least-free, volcano-binpack or slurm-block",
                                        word);
        o->npolicies++;
        p += len;
        if (*p == ',')
            p++;
    }
    if (o->npolicies == 0)
        return cmd_args_usage_error(a, "%s", "--policy: empty list");
    return 0;
}

static int parse(int argc, char **argv, struct simulate_opts *o)
{
    enum {
        OPT_CLUSTER = 256,
        OPT_TRACE,
        OPT_GENERATE,
        OPT_POLICY,
        OPT_SVG,
        OPT_BY_SHAPE,
        OPT_QUEUE,
        OPT_BACKFILL,
        OPT_MAX_WAIT
    };
    static const struct option opts[] = {
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"generate", required_argument, NULL, OPT_GENERATE},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"output", required_argument, NULL, 'o'},
        {"svg", required_argument, NULL, OPT_SVG},
        {"by-shape", no_argument, NULL, OPT_BY_SHAPE},
        {"queue", no_argument, NULL, OPT_QUEUE},
        {"backfill", no_argument, NULL, OPT_BACKFILL},
        {"max-wait", required_argument, NULL, OPT_MAX_WAIT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cmd_args a = {"topox simulate", usage, ":o:h", opts, argc, argv, NULL, 0, 0};
    const char *policy = "topox,best-fit,blind";
    const struct sim_opts q0 = SIM_OPTS_INIT;
    int ch, rc;

    memset(o, 0, sizeof(*o));
    o->q = q0;
    o->output = "table";
    while ((ch = cmd_args_next(&a)) != CMD_ARGS_END) {
        switch (ch) {
        case CMD_ARGS_EXIT:
            return a.status == CMD_OK ? -1 : a.status;
        case OPT_CLUSTER:
            o->cluster = optarg;
            break;
        case OPT_TRACE:
            o->trace = optarg;
            break;
        case OPT_GENERATE:
            o->generate = optarg;
            break;
        case OPT_POLICY:
            policy = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        case OPT_SVG:
            o->svg = optarg;
            break;
        case OPT_BY_SHAPE:
            o->by_shape = true;
            break;
        case OPT_QUEUE:
            o->q.queue = true;
            break;
        case OPT_BACKFILL:
            o->q.backfill = true;
            break;
        case OPT_MAX_WAIT: {
            struct tpx_err err = TPX_ERR_INIT;
            uint64_t sec;
            if (tpx_parse_duration(optarg, &sec, &err) != TPX_OK || sec == 0)
                return cmd_args_usage_error(&a, "--max-wait: %s",
                                            err.msg[0] ? err.msg : "must be more than 0 s");
            o->q.max_wait_s = (double)sec;
            break;
        }
        }
    }
    if ((o->q.backfill || o->q.max_wait_s > 0) && !o->q.queue)
        return cmd_args_usage_error(&a, "%s", "--backfill and --max-wait need --queue");
    if (strcmp(o->output, "table") != 0 && strcmp(o->output, "json") != 0)
        return cmd_args_usage_error(&a, "-o '%s': use table or json", o->output);
    if (o->trace && o->generate)
        return cmd_args_usage_error(&a, "%s", "give --trace FILE or --generate GEN, not both");
    if (!o->cluster && !o->generate)
        return cmd_args_usage_error(&a, "%s", "give --cluster SPEC and --trace FILE");
    if (o->cluster && !o->trace && !o->generate)
        return cmd_args_usage_error(&a, "%s", "give --trace FILE or --generate GEN");
    if (!o->cluster && (o->svg || o->trace))
        return cmd_args_usage_error(&a, "%s", "--trace and --svg need --cluster SPEC");
    rc = parse_policies(&a, policy, o);
    return rc;
}

static double mean_frag(const struct sim_result *r)
{
    double sum = 0, span;

    if (r->nsamples < 2)
        return 0;
    /* time-weighted: each sample holds until the next */
    for (size_t i = 0; i + 1 < r->nsamples; i++)
        sum += r->samples[i].frag * (r->samples[i + 1].t - r->samples[i].t);
    span = r->samples[r->nsamples - 1].t - r->samples[0].t;
    return span > 0 ? sum / span : 0;
}

static void print_table(const struct sim_result *res, size_t n, size_t nevents)
{
    printf("%zu events, %u GPUs\n\n", nevents, n ? res[0].accel_total : 0);
    printf("%-16s %6s %6s %10s %8s %5s %8s %9s %10s %10s %14s %9s\n", "POLICY", "GROUPS", "WHOLE",
           "CROSS-RACK", "TP-SPLIT", "HALF", "REJECTED", "WITH-ROOM", "WHOLE-GPUS", "GPU-H-USED",
           "GPU-H-STRANDED", "MEAN-FRAG");
    for (size_t i = 0; i < n; i++) {
        const struct sim_counts *c = &res[i].counts;
        printf("%-16s %6zu %6zu %10zu %8zu %5zu %8zu %9zu %10zu %10.0f %14.0f %9.3f\n",
               sim_policy_name(res[i].policy), c->arrived, c->whole, c->cross_rack, c->tp_split,
               c->half, c->rejected, c->rejected_with_room, c->whole_gpus, c->gpu_hours_used,
               c->gpu_hours_stranded, mean_frag(&res[i]));
    }
}

/* --by-shape: where each policy's rejections come from, one row per group shape. */
static void print_shapes(const struct sim_result *res, size_t n)
{
    printf("\n%-10s %-12s %7s %6s %8s %9s %9s\n", "POLICY", "SHAPE", "ARRIVED", "WHOLE", "REJECTED",
           "WITH-ROOM", "IN-A-RACK");
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < res[i].nshapes; k++) {
            const struct sim_shape *sh = &res[i].shapes[k];
            char name[48];
            snprintf(name, sizeof(name), "%ux%u tp%u pp%u", sh->pods, sh->gpus, sh->tp, sh->pp);
            printf("%-10s %-12s %7zu %6zu %8zu %9zu %9zu\n", sim_policy_name(res[i].policy), name,
                   sh->arrived, sh->whole, sh->rejected, sh->with_room, sh->with_rack_room);
        }
    }
}

/* --queue: per policy what the cluster delivered and how long groups waited, then per shape. */
static void print_queue(const struct sim_result *res, size_t n)
{
    printf("\n%-16s %6s %6s %7s %8s %13s %14s %9s %10s %5s %5s %5s\n", "POLICY", "GROUPS", "PLACED",
           "GAVE-UP", "WAITING", "GPU-H-DELIVER", "GPU-H-STRANDED", "ALLOC@SAT", "SATURATED",
           "TP-SPLIT", "CROSS", "HALF");
    for (size_t i = 0; i < n; i++) {
        const struct sim_counts *c = &res[i].counts;
        printf("%-16s %6zu %6zu %7zu %8zu %13.0f %14.0f %9.3f %9.1fh %5zu %5zu %5zu\n",
               sim_policy_name(res[i].policy), c->arrived, c->arrived - c->rejected, c->gave_up,
               c->never_placed, c->gpu_hours_delivered, c->gpu_hours_stranded,
               c->allocation_at_saturation, c->saturated_hours, c->tp_split, c->cross_rack,
               c->half);
    }
    printf("\n%-16s %-22s %5s %6s %9s %9s %9s %7s %9s\n", "POLICY", "SHAPE", "GPUS", "GROUPS",
           "WAIT-P50", "WAIT-P95", "WAIT-MAX", "GAVE-UP", "PLACEABLE");
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < res[i].nshapes; k++) {
            const struct sim_shape *sh = &res[i].shapes[k];
            printf("%-16s %-22s %5u %6zu %8.0fs %8.0fs %8.0fs %7zu %9.3f\n",
                   sim_policy_name(res[i].policy), sh->name, sh->pods * sh->gpus, sh->arrived,
                   sh->wait_p50_s, sh->wait_p95_s, sh->wait_max_s, sh->gave_up,
                   sh->placeable_share);
        }
    }
}

static enum tpx_code render_shapes_json(const struct sim_result *r, struct tpx_buf *out,
                                        struct tpx_err *err)
{
    for (size_t k = 0; k < r->nshapes; k++) {
        const struct sim_shape *sh = &r->shapes[k];
        if (tpx_buf_addf(out, err,
                         "%s{\"shape\":\"%s\",\"gpus\":%u,\"pods\":%u,\"gpus_per_pod\":%u,"
                         "\"tp\":%u,\"pp\":%u,\"scope\":\"%s\",\"groups\":%zu,\"whole\":%zu,"
                         "\"rejected\":%zu,\"rejected_with_room\":%zu,"
                         "\"rejected_with_rack_room\":%zu,\"wait_p50_s\":%.3f,\"wait_p95_s\":%.3f,"
                         "\"wait_max_s\":%.3f,\"wait_mean_s\":%.3f,\"gave_up\":%zu,"
                         "\"placeable_share\":%.4f}",
                         k ? "," : "", sh->name, sh->pods * sh->gpus, sh->pods, sh->gpus, sh->tp,
                         sh->pp, sh->block ? "block" : "rack", sh->arrived, sh->whole, sh->rejected,
                         sh->with_room, sh->with_rack_room, sh->wait_p50_s, sh->wait_p95_s,
                         sh->wait_max_s, sh->wait_mean_s, sh->gave_up,
                         sh->placeable_share) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}

static enum tpx_code render_json(const struct sim_result *res, size_t n, size_t nevents,
                                 struct tpx_buf *out, struct tpx_err *err)
{
    if (tpx_buf_addf(out, err, "{\"events\":%zu,\"gpus\":%u,\"policies\":[", nevents,
                     n ? res[0].accel_total : 0) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < n; i++) {
        const struct sim_counts *c = &res[i].counts;
        if (tpx_buf_addf(
                out, err,
                "%s{\"policy\":\"%s\",\"groups\":%zu,\"whole\":%zu,\"cross_rack\":%zu,"
                "\"tp_split\":%zu,\"half\":%zu,\"rejected\":%zu,\"rejected_with_room\":%zu,"
                "\"whole_gpus\":%zu,"
                "\"gpu_hours_used\":%.3f,\"gpu_hours_stranded\":%.3f,"
                "\"mean_fragmentation\":%.4f,\"gpu_hours_delivered\":%.3f,"
                "\"gpu_hours_idle_waiting\":%.3f,\"saturated_hours\":%.3f,"
                "\"allocation_at_saturation\":%.4f,\"gave_up\":%zu,\"never_placed\":%zu,"
                "\"horizon_s\":%.3f,\"rule_breaks\":{\"tp_split\":%zu,\"cross_rack\":%zu,"
                "\"half_placed\":%zu},\"shapes\":[",
                i ? "," : "", sim_policy_name(res[i].policy), c->arrived, c->whole, c->cross_rack,
                c->tp_split, c->half, c->rejected, c->rejected_with_room, c->whole_gpus,
                c->gpu_hours_used, c->gpu_hours_stranded, mean_frag(&res[i]),
                c->gpu_hours_delivered, c->gpu_hours_idle_waiting, c->saturated_hours,
                c->allocation_at_saturation, c->gave_up, c->never_placed, c->horizon_s, c->tp_split,
                c->cross_rack, c->half) != TPX_OK)
            return err->code;
        if (render_shapes_json(&res[i], out, err) != TPX_OK ||
            tpx_buf_adds(out, "],\"samples\":[", err) != TPX_OK)
            return err->code;
        for (size_t k = 0; k < res[i].nsamples; k++) {
            const struct sim_sample *s = &res[i].samples[k];
            if (tpx_buf_addf(out, err,
                             "%s{\"time\":%.3f,\"used\":%u,\"free\":%u,\"free_whole\":%u,"
                             "\"stranded\":%u,\"fragmentation\":%.4f}",
                             k ? "," : "", s->t, s->used, s->free, s->free_whole, s->stranded,
                             s->frag) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_adds(out, "]}", err) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "]}\n", err);
}

/* A sample's share of the cluster that is stranded (free outside whole domains, or held by
 * half-placed groups): the curve of --svg. */
static double stranded_share(const struct sim_result *r, const struct sim_sample *s)
{
    return r->accel_total ? (double)s->stranded / r->accel_total : 0;
}

/* The stranded share of each replay over time: hours on x, 0..ymax on y, one polyline each. */
static enum tpx_code render_svg(const struct sim_result *res, size_t n, struct tpx_buf *out,
                                struct tpx_err *err)
{
    static const char *const colour[] = {"#1f77b4", "#d62728", "#7f7f7f", "#2ca02c", "#9467bd"};
    const double w = 760, h = 260, x0 = 60, y0 = 20;
    double tmax = 0, ymax = 0;

    for (size_t i = 0; i < n; i++) {
        if (res[i].nsamples && res[i].samples[res[i].nsamples - 1].t > tmax)
            tmax = res[i].samples[res[i].nsamples - 1].t;
        for (size_t k = 0; k < res[i].nsamples; k++) {
            double y = stranded_share(&res[i], &res[i].samples[k]);
            ymax = y > ymax ? y : ymax;
        }
    }
    tmax = tmax > 0 ? tmax : 1;
    ymax = ymax > 0 ? (double)(unsigned)(ymax * 10 + 0.999) / 10 : 1; /* up to a tenth */
    if (tpx_buf_addf(out, err,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "font-family=\"sans-serif\" font-size=\"12\">\n"
                     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                     "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
                     "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
                     "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.1f</text>\n"
                     "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n"
                     "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.0f h</text>\n"
                     "<text x=\"%.0f\" y=\"%.0f\">stranded GPUs / all GPUs (free outside whole "
                     "domains, or held by half-placed groups)</text>\n",
                     w + x0 + 20, h + y0 + 56, x0, y0, x0, y0 + h, x0, y0 + h, x0 + w, y0 + h,
                     x0 - 4, y0 + 4, ymax, x0 - 4, y0 + h, x0 + w, y0 + h + 16, tmax / 3600.0,
                     x0 + 8, y0 + h + 32) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < n; i++) {
        const char *col = colour[i % (sizeof(colour) / sizeof(colour[0]))];
        size_t step = res[i].nsamples / 600 + 1;
        if (tpx_buf_addf(out, err,
                         "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n<polyline "
                         "fill=\"none\" stroke=\"%s\" stroke-width=\"1\" points=\"",
                         x0 + 8 + 80.0 * (double)i, y0 + h + 50, col,
                         sim_policy_name(res[i].policy), col) != TPX_OK)
            return err->code;
        for (size_t k = 0; k < res[i].nsamples; k += step) {
            const struct sim_sample *s = &res[i].samples[k];
            if (tpx_buf_addf(out, err, "%.1f,%.1f ", x0 + w * s->t / tmax,
                             y0 + h * (1.0 - stranded_share(&res[i], s) / ymax)) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_adds(out, "\"/>\n", err) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "</svg>\n", err);
}

/* --queue --svg: one panel per shape (largest first), the CDF of its waits, one curve per policy
 * (x: hours, to the largest wait of that shape; y: share of its groups that waited at most x). */
static enum tpx_code render_wait_svg(const struct sim_result *res, size_t n, struct tpx_buf *out,
                                     struct tpx_err *err)
{
    static const char *const colour[] = {"#1f77b4", "#d62728", "#7f7f7f", "#2ca02c",
                                         "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
    const double pw = 360, ph = 160, mx = 50, my = 40, gap = 30;
    size_t ns = n ? res[0].nshapes : 0, cols = 2, rows = (ns + 1) / 2;
    size_t order[64];
    size_t no = 0;

    for (size_t k = 0; k < ns && no < 64; k++)
        order[no++] = k;
    for (size_t a = 1; a < no; a++) { /* by GPUs, largest first (stable) */
        for (size_t b = a; b > 0; b--) {
            const struct sim_shape *x = &res[0].shapes[order[b - 1]], *y = &res[0].shapes[order[b]];
            if (x->pods * x->gpus >= y->pods * y->gpus)
                break;
            size_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    }
    if (tpx_buf_addf(out, err,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "font-family=\"sans-serif\" font-size=\"11\">\n"
                     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                     "<text x=\"10\" y=\"16\">wait CDF per shape (x: hours waited, y: share of "
                     "the shape's groups)</text>\n",
                     cols * (pw + mx + gap), rows * (ph + my + gap) + 40) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < n; i++) {
        if (tpx_buf_addf(out, err, "<text x=\"%.0f\" y=\"32\" fill=\"%s\">%s</text>\n",
                         10 + 90.0 * (double)i, colour[i % 8],
                         sim_policy_name(res[i].policy)) != TPX_OK)
            return err->code;
    }
    for (size_t j = 0; j < no; j++) {
        size_t k = order[j];
        double x0 = mx + (double)(j % cols) * (pw + mx + gap);
        double y0 = 40 + my + (double)(j / cols) * (ph + my + gap), xmax = 0;
        for (size_t i = 0; i < n; i++) {
            const struct sim_shape *sh = &res[i].shapes[k];
            if (sh->nwaits && sh->waits[sh->nwaits - 1] > xmax)
                xmax = sh->waits[sh->nwaits - 1];
        }
        xmax = xmax > 0 ? xmax / 3600.0 : 1;
        if (tpx_buf_addf(out, err,
                         "<text x=\"%.0f\" y=\"%.0f\">%s (%u GPUs)</text>\n"
                         "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                         "fill=\"none\" stroke=\"black\"/>\n"
                         "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">1</text>\n"
                         "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.2f h</text>\n",
                         x0, y0 - 6, res[0].shapes[k].name,
                         res[0].shapes[k].pods * res[0].shapes[k].gpus, x0, y0, pw, ph, x0 - 4,
                         y0 + 8, x0 + pw, y0 + ph + 14, xmax) != TPX_OK)
            return err->code;
        for (size_t i = 0; i < n; i++) {
            const struct sim_shape *sh = &res[i].shapes[k];
            if (tpx_buf_addf(out, err,
                             "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" "
                             "points=\"%.1f,%.1f ",
                             colour[i % 8], x0, y0 + ph) != TPX_OK)
                return err->code;
            for (size_t m = 0; m < sh->nwaits; m++) {
                double x = x0 + pw * (sh->waits[m] / 3600.0) / xmax;
                if (tpx_buf_addf(out, err, "%.1f,%.1f %.1f,%.1f ", x,
                                 y0 + ph * (1.0 - (double)m / (double)sh->nwaits), x,
                                 y0 + ph * (1.0 - (double)(m + 1) / (double)sh->nwaits)) != TPX_OK)
                    return err->code;
            }
            if (tpx_buf_adds(out, "\"/>\n", err) != TPX_OK)
                return err->code;
        }
    }
    return tpx_buf_adds(out, "</svg>\n", err);
}

static int write_file(const char *path, const struct tpx_buf *b)
{
    FILE *f = fopen(path, "w");

    if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        perror(path);
        if (f)
            fclose(f);
        return CMD_FAILED;
    }
    return CMD_OK;
}

/* The events: generated or read. 2 with the message printed for bad input. */
static int load_events(const struct simulate_opts *o, struct sim_event **ev, size_t *n)
{
    struct tpx_err err = TPX_ERR_INIT;

    if (o->generate) {
        struct sim_gen g;
        if (sim_gen_parse(o->generate, &g, &err) != TPX_OK) {
            fprintf(stderr, "topox simulate: %s\n", err.msg);
            return CMD_USAGE;
        }
        if (sim_gen_run(&g, ev, n, &err) != TPX_OK) {
            fprintf(stderr, "topox simulate: %s\n", err.msg);
            return CMD_FAILED;
        }
        return CMD_OK;
    }
    if (sim_trace_read(o->trace, ev, n, &err) != TPX_OK) {
        fprintf(stderr, "topox simulate: %s\n", err.msg);
        return err.code == TPX_ENOMEM ? CMD_FAILED : CMD_USAGE;
    }
    return CMD_OK;
}

static int replay(const struct simulate_opts *o, const struct sim_event *ev, size_t n)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = sim_cluster_new(o->cluster, &err);
    struct sim_result res[MAX_POLICIES];
    struct tpx_buf out;
    size_t done = 0;
    int status = CMD_FAILED;

    memset(res, 0, sizeof(res));
    tpx_buf_init(&out, (size_t)1 << 30);
    if (!c) {
        fprintf(stderr, "topox simulate: --cluster: %s\n", err.msg);
        return CMD_USAGE;
    }
    for (; done < o->npolicies; done++) {
        if (sim_run_opts(c, ev, n, o->policies[done], &o->q, &res[done], &err) != TPX_OK) {
            fprintf(stderr, "topox simulate: %s: %s\n", sim_policy_name(o->policies[done]),
                    err.msg);
            status = err.code == TPX_EINVAL ? CMD_USAGE : CMD_FAILED;
            goto out;
        }
    }
    if (strcmp(o->output, "json") == 0) {
        if (render_json(res, done, n, &out, &err) != TPX_OK) {
            fprintf(stderr, "topox simulate: %s\n", err.msg);
            goto out;
        }
        fwrite(out.data, 1, out.len, stdout);
    } else {
        print_table(res, done, n);
        if (o->q.queue)
            print_queue(res, done);
        if (o->by_shape)
            print_shapes(res, done);
    }
    status = CMD_OK;
    if (o->svg) {
        tpx_buf_reset(&out);
        if ((o->q.queue ? render_wait_svg(res, done, &out, &err)
                        : render_svg(res, done, &out, &err)) != TPX_OK) {
            fprintf(stderr, "topox simulate: %s\n", err.msg);
            status = CMD_FAILED;
        } else {
            status = write_file(o->svg, &out);
        }
    }
out:
    for (size_t i = 0; i < done; i++)
        sim_result_release(&res[i]);
    tpx_buf_release(&out);
    topo_cluster_free(c);
    return status;
}

int cmd_simulate(int argc, char **argv)
{
    struct simulate_opts o;
    struct sim_event *ev = NULL;
    size_t n = 0;
    int status = parse(argc, argv, &o);

    if (status != 0)
        return status < 0 ? CMD_OK : status;
    status = load_events(&o, &ev, &n);
    if (status != CMD_OK)
        return status;
    if (!o.cluster) {
        struct tpx_err err = TPX_ERR_INIT;
        struct tpx_buf out;
        tpx_buf_init(&out, (size_t)1 << 30);
        if (sim_trace_write(&out, ev, n, &err) != TPX_OK) {
            fprintf(stderr, "topox simulate: %s\n", err.msg);
            status = CMD_FAILED;
        } else {
            fwrite(out.data ? out.data : "", 1, out.len, stdout);
        }
        tpx_buf_release(&out);
    } else {
        status = replay(&o, ev, n);
    }
    free(ev);
    return status;
}
