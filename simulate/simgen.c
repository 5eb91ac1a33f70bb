/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/simgen.c - `topox simulate --generate`: traces of LeaderWorkerSet-like groups arriving
 * as a Poisson process (with a mix, optionally following the day) and living a hyperexponential
 * time, deterministic per seed. The classic shapes of issue 14 (1-4 pods of 4 or 8 GPUs, TP
 * 4/8/16, PP 1-4), or a mix of docs/simulate.md ("Workload mixes", every shape's source cited
 * there): llm-serving, training, mixed, for 8-GPU HGX nodes, 4-GPU NVL72 racks or both. Only
 * integer and +-x/ arithmetic (the logarithm and the sine are series here, not libm's), so a seed
 * gives the same trace everywhere. Pure: no I/O. */
#include "simulate/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shapes and how often each arrives, in per mille (they sum to 1000). */
static const struct shape {
    unsigned pods, gpus, tp, pp, weight;
} shapes[] = {
    {1, 8, 8, 1, 260}, /* one 8-GPU node, TP 8: the common 70B-class replica */
    {2, 8, 8, 2, 120}, /* TP 8 x PP 2 over two nodes */
    {3, 8, 8, 3, 30},  /* TP 8 x PP 3 */
    {4, 8, 8, 4, 40},  /* TP 8 x PP 4 */
    {2, 8, 16, 1, 80}, /* TP 16 over a two-node NVLink domain */
    {4, 8, 16, 2, 30}, /* TP 16 x PP 2 */
    {1, 8, 4, 2, 40},  /* TP 4 x PP 2 inside one node */
    {2, 8, 4, 4, 20},  /* TP 4 x PP 4 over two nodes */
    {1, 4, 4, 1, 200}, /* half a node, TP 4: the common small replica */
    {2, 4, 4, 2, 80},  /* TP 4 x PP 2 */
    {3, 4, 4, 3, 20},  /* TP 4 x PP 3 */
    {4, 4, 4, 4, 20},  /* TP 4 x PP 4 */
    {2, 4, 8, 1, 40},  /* TP 8 over two 4-GPU pods */
    {4, 4, 8, 2, 10},  /* TP 8 x PP 2 */
    {4, 4, 16, 1, 10}, /* TP 16 over four 4-GPU pods */
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* The mixes (docs/simulate.md "Workload mixes"): shapes in per mille of a table's arrivals. */
struct mshape {
    unsigned pods, gpus, tp, pp, weight;
    bool training; /* a gang of whole nodes, block scope, living 1.5 x the mean */
};
static const struct mshape serving_hgx[] = {
    {1, 1, 1, 1, 100, false}, /* TP 1: a small model, one GPU */
    {1, 2, 2, 1, 100, false}, /* TP 2 */
    {1, 4, 4, 1, 200, false}, /* TP 4 */
    {1, 8, 8, 1, 250, false}, /* TP 8 on one node: the 70B-class replica */
    {2, 8, 8, 2, 120, false}, /* TP 8 x PP 2 over two nodes: a 405B-class replica */
    {2, 8, 1, 1, 80, false},  /* DP 16 + EP over two nodes: an llm-d wide-EP worker */
    {2, 8, 8, 1, 150, false}, /* a prefill/decode pair of TP 8 pods */
};
static const struct mshape serving_gb200[] = {
    {1, 1, 1, 1, 100, false},  /* TP 1 */
    {1, 2, 2, 1, 100, false},  /* TP 2 */
    {1, 4, 4, 1, 250, false},  /* TP 4: one GB200 node */
    {2, 4, 8, 1, 150, false},  /* TP 8 over two nodes of one NVLink domain */
    {4, 4, 8, 2, 100, false},  /* TP 8 x PP 2 */
    {4, 4, 16, 1, 100, false}, /* a ComputeDomain of 4 nodes (TP/EP 16 over NVLink) */
    {8, 4, 32, 1, 80, false},  /* a ComputeDomain of 8 nodes: wide EP inside one NVL72 */
    {9, 4, 36, 1, 50, false},  /* a ComputeDomain of 9 nodes: half a rack */
    {18, 4, 72, 1, 20, false}, /* a ComputeDomain of the whole rack */
    {2, 4, 4, 1, 50, false},   /* a prefill/decode pair of TP 4 pods */
};
static const struct mshape training_hgx[] = {
    {8, 8, 8, 4, 400, true},  /* TP 8 x PP 4 x DP 2 */
    {16, 8, 8, 4, 300, true}, /* DP 4 */
    {32, 8, 8, 4, 200, true}, /* DP 8 */
    {64, 8, 8, 4, 100, true}, /* DP 16 */
};
static const struct mshape training_gb200[] = {
    {8, 4, 8, 4, 400, true},  /* TP 8 over two NVLink nodes x PP 4 */
    {16, 4, 8, 4, 300, true}, /* DP 2 */
    {32, 4, 8, 4, 200, true}, /* DP 4 */
    {64, 4, 8, 4, 100, true}, /* DP 8 */
};
#define MIX_TRAINING_PM 50 /* of the arrivals of "mixed": training gangs */
#define MIX_MAX 32

/* Lifetimes: with probability SHORT_PM per mille a short life of mean SHORT_F x life_h, else a long
 * one of mean LONG_F x life_h; the mean is life_h (0.7 x 0.4 + 0.3 x 2.4 = 1). */
#define SHORT_PM 700
#define SHORT_F 0.4
#define LONG_F 2.4

/* splitmix64 (Steele, Lea, Flood 2014): small, fast, and a full 2^64 period. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double next_unit(uint64_t *s)
{
    return ((double)(next_u64(s) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

/* ln(x) for x in (0, 1]: x = m 2^-k with m in [0.5, 1), ln m = 2 atanh((m-1)/(m+1)). */
static double ln_unit(double x)
{
    static const double ln2 = 0.69314718055994530942;
    double z, z2, term, sum = 0;
    int k = 0;

    while (x < 0.5) {
        x *= 2;
        k++;
    }
    z = (x - 1) / (x + 1); /* |z| <= 1/3 */
    z2 = z * z;
    term = z;
    for (unsigned i = 1; i < 60; i += 2) {
        sum += term / i;
        term *= z2;
    }
    return 2 * sum - k * ln2;
}

/* Exponential with the given mean. */
static double next_exp(uint64_t *s, double mean)
{
    return -ln_unit(next_unit(s)) * mean;
}

static double mean_gpus(void)
{
    double sum = 0;

    for (size_t i = 0; i < NSHAPES; i++)
        sum += (double)shapes[i].weight * shapes[i].pods * shapes[i].gpus;
    return sum / 1000.0;
}

static enum tpx_code parse_num(const char *key, const char *v, size_t len, double lo, double hi,
                               double *out, struct tpx_err *err)
{
    char buf[64], *end;
    double d;

    if (len == 0 || len >= sizeof(buf))
        return tpx_err_set(err, TPX_EINVAL, "generate: key '%s': bad value '%.*s'", key, (int)len,
                           v);
    memcpy(buf, v, len);
    buf[len] = '\0';
    d = strtod(buf, &end);
    if (*end || !(d >= lo && d <= hi))
        return tpx_err_set(err, TPX_EINVAL, "generate: key '%s': '%s' is not a number in [%g, %g]",
                           key, buf, lo, hi);
    *out = d;
    return TPX_OK;
}

enum tpx_code sim_gen_parse(const char *spec, struct sim_gen *g, struct tpx_err *err)
{
    const char *p = spec ? spec : "";

    bool gpus_set = false, life_set = false, diurnal_set = false;

    *g = (struct sim_gen){1, 400, 512, 1.0, 6.0, SIM_MIX_CLASSIC, SIM_FLEET_HGX, false};
    while (*p) {
        size_t len = strcspn(p, ","), klen;
        const char *eq = memchr(p, '=', len);
        double d;
        char key[32];

        if (len == 0) {
            p++;
            continue;
        }
        if (!eq)
            return tpx_err_set(err, TPX_EINVAL, "generate: '%.*s' is not key=value", (int)len, p);
        klen = (size_t)(eq - p);
        snprintf(key, sizeof(key), "%.*s", (int)(klen < 31 ? klen : 31), p);
        if (strcmp(key, "seed") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 0, 9007199254740992.0, &d, err) != TPX_OK)
                return err->code;
            g->seed = (uint64_t)d;
        } else if (strcmp(key, "groups") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 1, 1000000, &d, err) != TPX_OK)
                return err->code;
            g->groups = (size_t)d;
        } else if (strcmp(key, "gpus") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 1, 10000000, &d, err) != TPX_OK)
                return err->code;
            g->gpus = (unsigned)d;
            gpus_set = true;
        } else if (strcmp(key, "mix") == 0 || strcmp(key, "fleet") == 0) {
            static const char *const mixes[] = {"classic", "llm-serving", "training", "mixed"};
            static const char *const fleets[] = {"hgx", "gb200", "mixed"};
            bool is_mix = key[0] == 'm';
            size_t vlen = len - klen - 1, nwords = is_mix ? 4 : 3, w;
            for (w = 0; w < nwords; w++) {
                const char *word = is_mix ? mixes[w] : fleets[w];
                if (strlen(word) == vlen && memcmp(word, eq + 1, vlen) == 0)
                    break;
            }
            if (w == nwords)
                return tpx_err_set(
                    err, TPX_EINVAL, "generate: key '%s': '%.*s' is not %s", key, (int)vlen, eq + 1,
                    is_mix ? "classic, llm-serving, training or mixed" : "hgx, gb200 or mixed");
            if (is_mix)
                g->mix = (enum sim_mix)w;
            else
                g->fleet = (enum sim_fleet)w;
        } else if (strcmp(key, "diurnal") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 0, 1, &d, err) != TPX_OK)
                return err->code;
            g->diurnal = d >= 0.5;
            diurnal_set = true;
        } else if (strcmp(key, "load") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 0.01, 100, &g->load, err) != TPX_OK)
                return err->code;
        } else if (strcmp(key, "life") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 0.001, 100000, &g->life_h, err) != TPX_OK)
                return err->code;
            life_set = true;
        } else {
            return tpx_err_set(err, TPX_EINVAL,
                               "generate: unknown key '%s' (seed, mix, fleet, groups, gpus, load, "
                               "life, diurnal)",
                               key);
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (g->mix != SIM_MIX_CLASSIC) {
        static const unsigned fleet_gpus[] = {1024, 576, 928}; /* sim_cluster_spec's shapes */
        g->gpus = gpus_set ? g->gpus : fleet_gpus[g->fleet];
        g->life_h = life_set ? g->life_h : 8.0;
        g->diurnal = diurnal_set ? g->diurnal : g->mix != SIM_MIX_TRAINING;
    }
    return TPX_OK;
}

/* Time order; at one time leaves first, then by group number (the line order is total). */
static int ev_cmp(const void *a, const void *b)
{
    const struct sim_event *x = a, *y = b;

    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->arrive != y->arrive)
        return x->arrive ? 1 : -1;
    return strcmp(x->group, y->group);
}

struct mix_entry {
    const struct mshape *sh;
    double p; /* of all arrivals */
};

static size_t mix_add(struct mix_entry *out, size_t n, const struct mshape *t, size_t nt,
                      double share)
{
    for (size_t i = 0; i < nt && n < MIX_MAX; i++)
        out[n++] = (struct mix_entry){&t[i], share * t[i].weight / 1000.0};
    return n;
}

/* The shapes of g's mix and fleet with their probabilities (they sum to 1). */
static size_t mix_table(const struct sim_gen *g, struct mix_entry *out)
{
    double train = g->mix == SIM_MIX_TRAINING ? 1.0
                   : g->mix == SIM_MIX_MIXED  ? MIX_TRAINING_PM / 1000.0
                                              : 0.0;
    double hgx = g->fleet == SIM_FLEET_HGX ? 1.0 : g->fleet == SIM_FLEET_MIXED ? 0.5 : 0.0;
    size_t n = 0;

    n = mix_add(out, n, serving_hgx, sizeof(serving_hgx) / sizeof(serving_hgx[0]),
                (1 - train) * hgx);
    n = mix_add(out, n, serving_gb200, sizeof(serving_gb200) / sizeof(serving_gb200[0]),
                (1 - train) * (1 - hgx));
    n = mix_add(out, n, training_hgx, sizeof(training_hgx) / sizeof(training_hgx[0]), train * hgx);
    n = mix_add(out, n, training_gb200, sizeof(training_gb200) / sizeof(training_gb200[0]),
                train * (1 - hgx));
    return n;
}

/* sin(x): reduced to [-pi, pi], then its series (no libm, the same bits everywhere). */
static double sin_series(double x)
{
    static const double pi = 3.14159265358979323846;
    double term, sum;

    x -= 2 * pi * (double)(int64_t)(x / (2 * pi));
    if (x > pi)
        x -= 2 * pi;
    if (x < -pi)
        x += 2 * pi;
    term = x;
    sum = x;
    for (unsigned k = 1; k < 20; k++) {
        term *= -x * x / ((2.0 * k) * (2.0 * k + 1));
        sum += term;
    }
    return sum;
}

/* Group i's arrival at t and its leaving after life, into ev[0] and ev[1]: times in whole
 * milliseconds, so a written trace reads back the same. */
static void emit_group(struct sim_event *ev, size_t i, double t, double life, unsigned pods,
                       unsigned gpus, unsigned tp, unsigned pp, bool block)
{
    struct sim_event *a = &ev[0], *l = &ev[1];

    a->t = (double)(uint64_t)(t * 1000.0) / 1000.0;
    a->arrive = true;
    snprintf(a->group, sizeof(a->group), "g%06zu", i);
    a->pods = pods;
    a->gpus = gpus;
    a->tp = tp;
    a->pp = pp;
    a->block = block;
    *l = *a;
    l->arrive = false;
    l->t = (double)(uint64_t)((t + life) * 1000.0 + 1.0) / 1000.0;
}

/* A trace of g's mix: arrivals at the mean rate that offers g->load (following the day when
 * g->diurnal: thinned from 1.5 times the rate by 1 + 0.5 sin(2 pi t / 24 h)), shapes by their
 * share, lifetimes hyperexponential (training gangs 1.5 times longer). */
static enum tpx_code gen_mix(const struct sim_gen *g, struct sim_event *out)
{
    struct mix_entry tab[MIX_MAX];
    size_t nt = mix_table(g, tab);
    uint64_t s = g->seed;
    double life_s = g->life_h * 3600.0, work = 0, rate, peak, t = 0;

    for (size_t k = 0; k < nt; k++)
        work += tab[k].p * tab[k].sh->pods * tab[k].sh->gpus * (tab[k].sh->training ? 1.5 : 1.0);
    rate = g->load * g->gpus / (work * life_s);
    peak = g->diurnal ? 1.5 * rate : rate;
    for (size_t i = 0; i < g->groups; i++) {
        const struct mshape *sh = tab[nt - 1].sh;
        double u, acc = 0, mean, life;
        do {
            t += next_exp(&s, 1.0 / peak);
        } while (g->diurnal &&
                 next_unit(&s) * 1.5 >
                     1.0 + 0.5 * sin_series(t * (2 * 3.14159265358979323846) / 86400.0));
        u = next_unit(&s);
        for (size_t k = 0; k < nt; k++) {
            acc += tab[k].p;
            if (u <= acc) {
                sh = tab[k].sh;
                break;
            }
        }
        mean = life_s * (sh->training ? 1.5 : 1.0);
        life = (next_u64(&s) % 1000 < SHORT_PM) ? next_exp(&s, SHORT_F * mean)
                                                : next_exp(&s, LONG_F * mean);
        emit_group(&out[2 * i], i, t, life, sh->pods, sh->gpus, sh->tp, sh->pp, sh->training);
    }
    return TPX_OK;
}

enum tpx_code sim_gen_run(const struct sim_gen *g, struct sim_event **ev, size_t *n,
                          struct tpx_err *err)
{
    uint64_t s = g->seed;
    double life_s = g->life_h * 3600.0;
    /* arrivals per second that offer `load` of the cluster: rate x mean life x mean GPUs = load x
     * gpus */
    double rate = g->load * g->gpus / (mean_gpus() * life_s);
    double t = 0;
    struct sim_event *out = calloc(2 * g->groups + 1, sizeof(*out));

    *ev = NULL;
    *n = 0;
    if (!out)
        return tpx_err_set(err, TPX_ENOMEM, "generate: out of memory");
    for (size_t i = 0; g->mix == SIM_MIX_CLASSIC && i < g->groups; i++) {
        unsigned pick = (unsigned)(next_u64(&s) % 1000), acc = 0;
        const struct shape *sh = &shapes[0];
        double life;

        t += next_exp(&s, 1.0 / rate);
        for (size_t k = 0; k < NSHAPES; k++) {
            acc += shapes[k].weight;
            if (pick < acc) {
                sh = &shapes[k];
                break;
            }
        }
        life = (next_u64(&s) % 1000 < SHORT_PM) ? next_exp(&s, SHORT_F * life_s)
                                                : next_exp(&s, LONG_F * life_s);
        emit_group(&out[2 * i], i, t, life, sh->pods, sh->gpus, sh->tp, sh->pp, false);
    }
    if (g->mix != SIM_MIX_CLASSIC)
        gen_mix(g, out);
    qsort(out, 2 * g->groups, sizeof(*out), ev_cmp);
    *ev = out;
    *n = 2 * g->groups;
    return TPX_OK;
}
