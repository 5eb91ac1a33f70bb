/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/report.c - a diagnosis as the seed record (JSON, for -o json|yaml), as a table for
 * people, and as an SVG: effective utilization per stage against the bubble bound, and the
 * TTFT/TPOT sweep. */
#include "diagnose/diagnose.h"

#include <math.h>
#include <string.h>

#include "common/banned.h"

static json_t *num(double x)
{
    return isnan(x) || isinf(x) ? json_null() : json_real(round(x * 10000.0) / 10000.0);
}

static json_t *strs(char *const *list, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_string(list[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *per_stage(const double *v, unsigned pp)
{
    json_t *a = json_array();
    for (unsigned s = 0; a && s < pp && s < DG_MAX_STAGES; s++) {
        if (json_array_append_new(a, num(v[s])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *replica_json(const struct dg_replica_result *rr)
{
    const struct dg_replica_out *o = &rr->out;
    json_t *advice = json_array(), *perf, *use, *rec;

    for (size_t i = 0; advice && i < o->nadvice; i++)
        json_array_append_new(advice, json_string(o->advice[i]));
    use = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o?, s:o, s:o}", "occupancy",
                    num(o->occupancy), "effective", num(o->effective), "bubble_ratio_est",
                    num(rr->bubble_est), "stage_imbalance", num(rr->plan->imbalance),
                    "per_stage_effective", per_stage(o->per_stage, rr->pp), "measured_gap",
                    num(o->gap), "measured_gap_se", num(o->gap_se), "stage_spread", num(o->spread),
                    "per_stage_occupancy", per_stage(rr->stage_occ, rr->pp),
                    "per_stage_link_tx_bytes", per_stage(rr->link_tx, rr->pp), "gpus_measured",
                    json_integer((json_int_t)rr->gpus_joined), "gpus_expected",
                    json_integer((json_int_t)rr->gpus_expected));
    perf = rr->perf.known
               ? json_pack("{s:o, s:o, s:o, s:o, s:o, s:s}", "ttft", num(rr->perf.ttft_ms), "tpot",
                           num(rr->perf.tpot_ms), "e2e_throughput", num(rr->perf.throughput),
                           "ttft_p99", num(rr->perf.ttft_p99_ms), "tpot_p99",
                           num(rr->perf.tpot_p99_ms), "source", rr->perf.source)
               : json_pack("{s:n, s:n, s:n}", "ttft", "tpot", "e2e_throughput");
    rec = json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:s?, s:s, s:o, s:o, s:o, s:o}", "job",
                    rr->plan->job, "replica", (json_int_t)rr->plan->index, "pp", (json_int_t)rr->pp,
                    "tp", (json_int_t)rr->tp, "status", dg_status_name(o->status), "why", o->why,
                    "undecidable", o->undecidable[0] ? o->undecidable : NULL, "interconnect",
                    rr->plan->interconnect, "utilization", use, "perf", perf, "advice", advice,
                    "notes", strs(rr->notes, rr->nnotes));
    if (rec && (o->status == DG_IMBALANCE || o->status == DG_UNEXPLAINED) &&
        json_object_set_new(rec, "odd_stage", json_integer(o->odd_stage)) != 0) {
        json_decref(rec);
        return NULL;
    }
    return rec;
}

static const char *verdict_name(enum dg_sweep_verdict v)
{
    static const char *const names[] = {"none", "pipeline-depth", "tpot-rises", "ttft-flat",
                                        "inconsistent"};
    return (unsigned)v < 5 ? names[v] : "none";
}

enum tpx_code dg_report_json(const struct dg_result *r, json_t **out, struct tpx_err *err)
{
    json_t *reps = json_array(), *pts = json_array();
    bool ok = reps && pts;

    *out = NULL;
    for (size_t i = 0; ok && i < r->n; i++) {
        json_t *x = replica_json(&r->r[i]);
        ok = x && json_array_append_new(reps, x) == 0;
    }
    for (size_t i = 0; ok && i < r->nsweep; i++) {
        json_t *p = json_pack("{s:i, s:o, s:o}", "pp", (json_int_t)r->sweep_pts[i].pp, "ttft",
                              num(r->sweep_pts[i].ttft_ms), "tpot", num(r->sweep_pts[i].tpot_ms));
        ok = p && json_array_append_new(pts, p) == 0;
    }
    if (ok)
        *out = json_pack("{s:O, s:{s:o}, s:{s:s, s:s, s:o, s:o, s:O}, s:o}", "replicas", reps,
                         "baseline", "effective", num(r->baseline_eff), "sweep", "verdict",
                         verdict_name(r->sweep.verdict), "text", r->sweep.text, "ttft_ratio",
                         num(r->sweep.ttft_ratio), "tpot_ratio", num(r->sweep.tpot_ratio), "points",
                         pts, "notes", strs(r->notes, r->nnotes));
    json_decref(reps);
    json_decref(pts);
    if (!*out)
        return tpx_err_set(err, TPX_ENOMEM, "diagnose: out of memory");
    return TPX_OK;
}

/* --- the table ---------------------------------------------------------------------------------
 */

/* x with `decimals` digits, or "-" when not measured. */
static void fmt(char *b, size_t n, double x, int decimals)
{
    if (isnan(x))
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.*f", decimals, x);
}

enum tpx_code dg_report_table(const struct dg_result *r, struct tpx_buf *out, struct tpx_err *err)
{
    for (size_t i = 0; i < r->nnotes; i++) {
        if (tpx_buf_addf(out, err, "note: %s\n", r->notes[i]) != TPX_OK)
            return err->code;
    }
    if (r->nnotes && tpx_buf_adds(out, "\n", err) != TPX_OK)
        return err->code;
    if (tpx_buf_addf(out, err, "%-24s %3s %3s  %-31s %9s %9s %7s %7s %6s\n", "REPLICA", "PP", "TP",
                     "STATUS", "EFFECTIVE", "OCCUPANCY", "BUBBLE", "GAP", "SPREAD") != TPX_OK)
        return err->code;
    for (size_t i = 0; i < r->n; i++) {
        const struct dg_replica_result *rr = &r->r[i];
        const struct dg_replica_out *o = &rr->out;
        char name[DG_STR + 16], e[16], oc[16], b[16], g[16], s[16];

        snprintf(name, sizeof(name), "%s #%u", rr->plan->job, rr->plan->index);
        fmt(e, sizeof(e), o->effective, 3);
        fmt(oc, sizeof(oc), o->occupancy, 3);
        fmt(b, sizeof(b), rr->bubble_est, 3);
        fmt(g, sizeof(g), o->gap, 3);
        fmt(s, sizeof(s), o->effective >= 0 ? o->spread : NAN, 2);
        if (tpx_buf_addf(out, err, "%-24s %3u %3u  %-31s %9s %9s %7s %7s %6s\n", name, rr->pp,
                         rr->tp, dg_status_name(o->status), e, oc, b, g, s) != TPX_OK ||
            tpx_buf_addf(out, err, "  why: %s\n", o->why) != TPX_OK)
            return err->code;
        if (o->undecidable[0] &&
            tpx_buf_addf(out, err, "  cannot decide: %s\n", o->undecidable) != TPX_OK)
            return err->code;
        if (tpx_buf_adds(out, "  stages (effective):", err) != TPX_OK)
            return err->code;
        for (unsigned st = 0; st < rr->pp && st < DG_MAX_STAGES; st++) {
            fmt(e, sizeof(e), o->per_stage[st], 3);
            if (tpx_buf_addf(out, err, " %u:%s", st, e) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_adds(out, "\n", err) != TPX_OK)
            return err->code;
        if (rr->perf.known &&
            tpx_buf_addf(out, err, "  perf: TTFT %.1f ms, TPOT %.1f ms, %.1f tok/s (%s)\n",
                         rr->perf.ttft_ms, rr->perf.tpot_ms, rr->perf.throughput,
                         rr->perf.source) != TPX_OK)
            return err->code;
        for (size_t a = 0; a < o->nadvice; a++) {
            if (tpx_buf_addf(out, err, "  advice: %s\n", o->advice[a]) != TPX_OK)
                return err->code;
        }
        for (size_t n = 0; n < rr->nnotes; n++) {
            if (tpx_buf_addf(out, err, "  note: %s\n", rr->notes[n]) != TPX_OK)
                return err->code;
        }
    }
    return tpx_buf_addf(out, err, "\nsweep: %s\n", r->sweep.text);
}

/* --- the picture -------------------------------------------------------------------------------
 */

/* text for an SVG text node: & < > escaped (a job name comes from a file). */
static void xml_text(const char *in, char *out, size_t cap)
{
    size_t n = 0;

    for (; *in && n + 6 < cap; in++) {
        const char *e = *in == '&' ? "&amp;" : *in == '<' ? "&lt;" : *in == '>' ? "&gt;" : NULL;
        if (e) {
            memcpy(out + n, e, strlen(e));
            n += strlen(e);
        } else {
            out[n++] = *in;
        }
    }
    out[n] = '\0';
}

enum tpx_code dg_report_svg(const struct dg_result *r, struct tpx_buf *out, struct tpx_err *err)
{
    const int rowh = 160, w = 640, left = 60, plot = 520;
    int h = 40 + (int)r->n * rowh + (r->nsweep >= 2 ? rowh + 20 : 0), y = 30;

    if (tpx_buf_addf(out, err,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                     "font-family=\"sans-serif\" font-size=\"11\">\n"
                     "<text x=\"8\" y=\"18\" font-size=\"13\">topox diagnose: effective "
                     "utilization per stage against the bubble bound</text>\n",
                     w, h) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < r->n; i++, y += rowh) {
        const struct dg_replica_result *rr = &r->r[i];
        unsigned pp = rr->pp ? (rr->pp < DG_MAX_STAGES ? rr->pp : DG_MAX_STAGES) : 1;
        int bw = plot / (int)pp, base = y + rowh - 30;
        double bound = isnan(rr->bubble_est) ? NAN
                                             : (isnan(r->baseline_eff) ? 1.0 : r->baseline_eff) *
                                                   (1.0 - rr->bubble_est);

        char job[DG_STR * 6];

        xml_text(rr->plan->job, job, sizeof(job));
        if (tpx_buf_addf(out, err,
                         "<text x=\"8\" y=\"%d\">%s #%u (pp %u): %s</text>\n"
                         "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n",
                         y + 12, job, rr->plan->index, rr->pp, dg_status_name(rr->out.status), left,
                         base, left + plot, base) != TPX_OK)
            return err->code;
        for (unsigned s = 0; s < pp; s++) {
            double v = rr->out.per_stage[s];
            int bh = isnan(v) ? 0 : (int)(v * (rowh - 50));
            if (tpx_buf_addf(out, err,
                             "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>"
                             "<text x=\"%d\" y=\"%d\">%u</text>\n",
                             left + (int)s * bw + 2, base - bh, bw - 4, bh,
                             isnan(v) ? "#ccc" : "#4e79a7", left + (int)s * bw + bw / 2 - 3,
                             base + 12, s) != TPX_OK)
                return err->code;
        }
        if (!isnan(bound) &&
            tpx_buf_addf(out, err,
                         "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e15759\" "
                         "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%d\" fill=\"#e15759\">"
                         "bubble bound %.2f%s</text>\n",
                         left, base - (int)(bound * (rowh - 50)), left + plot,
                         base - (int)(bound * (rowh - 50)), left + plot - 150,
                         base - (int)(bound * (rowh - 50)) - 3, bound,
                         isnan(r->baseline_eff) ? " (no baseline)" : "") != TPX_OK)
            return err->code;
    }
    if (r->nsweep >= 2) {
        double tmax = 0, pmax = 0;
        unsigned ppmax = 1;
        int base = y + rowh - 10;
        for (size_t i = 0; i < r->nsweep; i++) {
            tmax = r->sweep_pts[i].ttft_ms > tmax ? r->sweep_pts[i].ttft_ms : tmax;
            pmax = r->sweep_pts[i].tpot_ms > pmax ? r->sweep_pts[i].tpot_ms : pmax;
            ppmax = r->sweep_pts[i].pp > ppmax ? r->sweep_pts[i].pp : ppmax;
        }
        if (tpx_buf_addf(out, err,
                         "<text x=\"8\" y=\"%d\">PP sweep: TTFT (orange) and TPOT (green) "
                         "against pp, each scaled to its largest value: %s</text>\n",
                         y + 12, r->sweep.text) != TPX_OK)
            return err->code;
        for (size_t i = 0; i < r->nsweep; i++) {
            const struct dg_sweep_point *p = &r->sweep_pts[i];
            int x = left + (int)((double)p->pp / ppmax * (plot - 20));
            if (tpx_buf_addf(out, err,
                             "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"#f28e2b\"/>"
                             "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"#59a14f\"/>"
                             "<text x=\"%d\" y=\"%d\">pp %u</text>\n",
                             x, base - (int)(tmax > 0 ? p->ttft_ms / tmax * (rowh - 40) : 0), x,
                             base - (int)(pmax > 0 ? p->tpot_ms / pmax * (rowh - 40) : 0), x - 10,
                             base + 12, p->pp) != TPX_OK)
                return err->code;
        }
    }
    return tpx_buf_adds(out, "</svg>\n", err);
}
