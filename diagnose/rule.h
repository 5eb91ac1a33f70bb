/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/rule.h - the pipeline-bubble diagnosis as a pure rule on plain structs: per replica,
 * per stage and per GPU, effective utilization against the bubble estimate -> bubble-dominated,
 * imbalance-dominated, inter-stage-transfer-dominated, unexplained or undecided, with the guide's
 * advice and its cost (docs/diagnose.md). No I/O, no JSON, no allocation: the parsers in
 * diagnose/ fill these structs. The thresholds and where they come from are in
 * dg_default_thresholds (rule.c) and docs/diagnose.md, "Thresholds". */
#ifndef TPX_DIAGNOSE_RULE_H
#define TPX_DIAGNOSE_RULE_H

#include <stdbool.h>
#include <stddef.h>

#define DG_MAX_STAGES 64
#define DG_MAX_ADVICE 3

enum dg_status {
    DG_UNDECIDED = 0, /* a needed input is missing or the noise is larger than the margin */
    DG_BUBBLE,        /* the measured gap equals the bubble estimate */
    DG_IMBALANCE,     /* one stage constantly apart from the others */
    DG_TRANSFER,      /* a larger gap on every stage: inter-stage transfer on the critical path */
    DG_UNEXPLAINED,   /* the measurements fit none of the three */
};

/* "bubble-dominated", ... "undecided". Static text. */
const char *dg_status_name(enum dg_status s);

/* One stage of a replica as measured. eff_t[k] is the mean effective utilization (0..1) of the
 * stage's GPUs at time step k, or NaN where none of them has a sample; borrowed. */
struct dg_stage_in {
    const double *eff_t;
    size_t ngpus;          /* GPUs of the stage with an effective series */
    size_t ngpus_expected; /* the GPUs the plan gives the stage (tp) */
    double occupancy;      /* mean DCGM_FI_DEV_GPU_UTIL as 0..1, NaN when not measured */
    double link_tx;        /* mean NVLink + PCIe TX in bytes/s, NaN when not measured */
};

struct dg_replica_in {
    unsigned pp, tp;
    double bubble_est;    /* (pp-1)/(num_ubatches+pp-1), NaN when num_ubatches is unknown */
    double imbalance_est; /* the plan's stage imbalance, NaN when unknown */
    size_t nt;            /* time steps of every eff_t */
    struct dg_stage_in stages[DG_MAX_STAGES]; /* pp of them, stage 0 first */
    double baseline_eff;    /* mean effective of the pp = 1 run, NaN without a baseline */
    double baseline_eff_se; /* its standard error (0 when exact) */
    bool layout_mismatch;   /* the engine's startup log says another pp than the plan */
};

/* The rule's knobs (docs/diagnose.md, "Thresholds", says where each value comes from). */
struct dg_thresholds {
    double bubble_tol_abs; /* a gap within max(abs, rel * bubble) of the bubble is the bubble */
    double bubble_tol_rel;
    double spread_min; /* (max - min) / max of the stage means that counts as imbalance */
    double constancy;  /* share of time steps the odd stage must be the extreme one */
    double z;          /* standard errors a margin must clear */
    size_t min_steps;  /* fewer time steps: the noise cannot be estimated */
};

extern const struct dg_thresholds dg_default_thresholds;

struct dg_replica_out {
    enum dg_status status;
    double effective;                /* mean over the measured stages, NaN when none */
    double effective_se;             /* standard error of that mean over time */
    double occupancy;                /* mean over the stages that have it, NaN when none */
    double per_stage[DG_MAX_STAGES]; /* mean effective per stage, NaN when not measured */
    double spread;                   /* (max - min) / max of the measured stage means */
    unsigned odd_stage;              /* the stage farthest from the others */
    double constancy;                /* share of time steps it was the extreme one */
    double gap;    /* measured lost fraction 1 - effective / baseline, NaN without baseline */
    double gap_se; /* its standard error */
    char why[320]; /* one line: why this status */
    char undecidable[320]; /* which statuses could not be decided, and what is missing; "" */
    const char *advice[DG_MAX_ADVICE]; /* static texts: what to change, then its cost */
    size_t nadvice;
};

/* Decide one replica. Never fails: a missing input gives DG_UNDECIDED with why and undecidable
 * filled. out is overwritten. */
void dg_decide(const struct dg_replica_in *in, const struct dg_thresholds *t,
               struct dg_replica_out *out);

/* The PP sweep (the guide's step 4): TTFT should rise with pp while TPOT stays flat. */
struct dg_sweep_point {
    unsigned pp;
    double ttft_ms, tpot_ms;
};

enum dg_sweep_verdict {
    DG_SWEEP_NONE = 0,     /* fewer than two distinct pp */
    DG_SWEEP_DEPTH,        /* TTFT rises with pp, TPOT flat: the cost is pipeline depth */
    DG_SWEEP_TPOT_RISES,   /* TPOT grows with pp: per-token work crosses the stage links */
    DG_SWEEP_TTFT_FLAT,    /* TTFT does not rise: depth is not what costs */
    DG_SWEEP_INCONSISTENT, /* neither monotone nor flat */
};

struct dg_sweep_out {
    enum dg_sweep_verdict verdict;
    double ttft_ratio; /* TTFT at the deepest pp / TTFT at the shallowest */
    double tpot_ratio; /* the same for TPOT */
    char text[256];
};

/* pts need not be sorted; several points at one pp are averaged. n may be 0. */
void dg_sweep_check(const struct dg_sweep_point *pts, size_t n, struct dg_sweep_out *out);

/* Flat and rising, as the sweep check reads them: a ratio within DG_SWEEP_FLAT of 1 is flat. */
#define DG_SWEEP_FLAT 0.10

#endif
