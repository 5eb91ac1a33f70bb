/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/simgen.c - `topox simulate --generate`: traces of LeaderWorkerSet-like groups (1-4 pods
 * of 4 or 8 GPUs, TP 4/8/16, PP 1-4) arriving as a Poisson process and living a
 * hyperexponential time, deterministic per seed (docs/simulate.md gives the distributions). Only
 * integer and +-x/ arithmetic (the logarithm is a series here, not libm's), so a seed gives the
 * same trace everywhere. Pure: no I/O. */
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

    *g = (struct sim_gen){1, 400, 512, 1.0, 6.0};
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
        } else if (strcmp(key, "load") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 0.01, 100, &g->load, err) != TPX_OK)
                return err->code;
        } else if (strcmp(key, "life") == 0) {
            if (parse_num(key, eq + 1, len - klen - 1, 0.001, 100000, &g->life_h, err) != TPX_OK)
                return err->code;
        } else {
            return tpx_err_set(err, TPX_EINVAL,
                               "generate: unknown key '%s' (seed, groups, gpus, load, life)", key);
        }
        p += len;
        if (*p == ',')
            p++;
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
    for (size_t i = 0; i < g->groups; i++) {
        struct sim_event *a = &out[2 * i], *l = &out[2 * i + 1];
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
        /* whole milliseconds, so a written trace reads back the same */
        a->t = (double)(uint64_t)(t * 1000.0) / 1000.0;
        a->arrive = true;
        snprintf(a->group, sizeof(a->group), "g%06zu", i);
        a->pods = sh->pods;
        a->gpus = sh->gpus;
        a->tp = sh->tp;
        a->pp = sh->pp;
        *l = *a;
        l->arrive = false;
        l->t = (double)(uint64_t)((t + life) * 1000.0 + 1.0) / 1000.0;
    }
    qsort(out, 2 * g->groups, sizeof(*out), ev_cmp);
    *ev = out;
    *n = 2 * g->groups;
    return TPX_OK;
}
