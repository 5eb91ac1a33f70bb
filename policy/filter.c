/* SPDX-License-Identifier: Apache-2.0 */
/* policy/filter.c - pol_filter: one verdict per candidate node, and one reason text per
 * distinct reason, interned so that 5 000 failing nodes cost a handful of strings. */
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

#include "policy/ledger_int.h"

#define RCACHE 32

struct rtable {
    struct reason_code code[RCACHE];
    unsigned idx[RCACHE];
    size_t ncode;
    unsigned *scope_idx; /* per scope: reason index + 1 for R_SCOPE_* (0: none yet) */
    size_t cap;
};

static bool add_reason(struct pol_filter_result *res, struct rtable *t, const char *text,
                       unsigned *out)
{
    for (size_t i = 0; i < res->nreasons; i++) {
        if (res->nreasons <= 64 && strcmp(res->reasons[i], text) == 0) {
            *out = (unsigned)i;
            return true;
        }
    }
    if (res->nreasons == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 8;
        char **nr = realloc(res->reasons, ncap * sizeof(*nr));
        if (!nr)
            return false;
        res->reasons = nr;
        t->cap = ncap;
    }
    res->reasons[res->nreasons] = strdup(text);
    if (!res->reasons[res->nreasons])
        return false;
    *out = (unsigned)res->nreasons++;
    return true;
}

static bool intern_reason(const struct ctx *x, struct pol_filter_result *res, struct rtable *t,
                          const struct reason_code *why, unsigned *out)
{
    char text[512];
    bool scoped = why->kind == R_SCOPE_DYN || why->kind == R_SCOPE_STATIC;

    if (scoped && t->scope_idx[why->a]) {
        *out = t->scope_idx[why->a] - 1;
        return true;
    }
    if (!scoped) {
        for (size_t i = 0; i < t->ncode; i++) {
            if (t->code[i].kind == why->kind && t->code[i].a == why->a && t->code[i].b == why->b) {
                *out = t->idx[i];
                return true;
            }
        }
    }
    led_reason_text(x, why, text, sizeof(text));
    if (!add_reason(res, t, text, out))
        return false;
    if (scoped) {
        t->scope_idx[why->a] = *out + 1;
    } else if (t->ncode < RCACHE) {
        t->code[t->ncode] = *why;
        t->idx[t->ncode++] = *out;
    }
    return true;
}

enum tpx_code pol_filter(const struct pol_ledger *l, const struct pol_workload *wl,
                         const size_t *cand, size_t n, time_t now, struct pol_filter_result *res,
                         struct tpx_err *err)
{
    return pol_filter_memo(l, NULL, wl, cand, n, now, res, err);
}

enum tpx_code pol_filter_memo(const struct pol_ledger *l, struct pol_scope_memo *memo,
                              const struct pol_workload *wl, const size_t *cand, size_t n,
                              time_t now, struct pol_filter_result *res, struct tpx_err *err)
{
    struct ctx x;
    struct rtable t = {.ncode = 0};
    struct led_cells cells;
    bool use_cells;
    enum tpx_code rc = TPX_OK;

    (void)now;
    memset(res, 0, sizeof(*res));
    for (size_t i = 0; i < n; i++) {
        if (cand[i] >= l->nnodes)
            return tpx_err_set(err, TPX_EINVAL, "filter: bad node index %zu", cand[i]);
    }
    if (led_ctx_init(&x, l, wl, memo, err) != TPX_OK)
        return err->code;
    /* every entry is written below (a reason 0 where the node fits) */
    res->verdict = malloc((n + 1) * sizeof(*res->verdict));
    res->reason = malloc((n + 1) * sizeof(*res->reason));
    t.scope_idx = calloc(l->nscopes[wl->scope] + 1, sizeof(unsigned));
    if (!res->verdict || !res->reason || !t.scope_idx) {
        rc = tpx_err_set(err, TPX_ENOMEM, "filter: out of memory");
        goto out;
    }
    res->n = n;
    /* a first member's answers come from the memo's cells (policy/index.c): a read per node */
    use_cells = led_cells_apply(&x) && led_memo_cells(&x, &cells);
    for (size_t i = 0; i < n; i++) {
        struct reason_code code;
        const struct led_cell *c = use_cells ? led_cell_at(&x, &cells, cand[i]) : NULL;
        enum pol_verdict v = c ? (enum pol_verdict)c->verdict : led_judge(&x, cand[i], &code);

        res->verdict[i] = v;
        res->reason[i] = 0;
        if (v == POL_FIT) {
            res->nfit++;
            continue;
        }
        if (c)
            code = (struct reason_code){(enum rkind)c->kind, c->a, c->b};
        if (!intern_reason(&x, res, &t, &code, &res->reason[i])) {
            rc = tpx_err_set(err, TPX_ENOMEM, "filter: out of memory");
            goto out;
        }
    }
out:
    free(t.scope_idx);
    led_ctx_release(&x);
    if (rc != TPX_OK)
        pol_filter_result_release(res);
    return rc;
}

void pol_filter_result_release(struct pol_filter_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->nreasons; i++)
        free(res->reasons[i]);
    free(res->reasons);
    free(res->verdict);
    free(res->reason);
    memset(res, 0, sizeof(*res));
}
