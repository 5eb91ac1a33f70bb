/* SPDX-License-Identifier: Apache-2.0 */
/* common/envexpand.c - the kubelet's $(VAR) and the shell's $VAR / ${VAR:-d} / $((expr)) over a
 * container's env (common/envexpand.h). Every path that cannot be sure answers UNKNOWN. */
#include "common/envexpand.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool name_start(char c)
{
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* The last definition of name[0, len) in env; *found false when there is none. */
static const char *lookup(const struct tpx_env_var *env, size_t n, const char *name, size_t len,
                          bool *found)
{
    *found = false;
    for (size_t i = n; i-- > 0;) {
        if (env[i].name && strlen(env[i].name) == len && memcmp(env[i].name, name, len) == 0) {
            *found = true;
            return env[i].value;
        }
    }
    return NULL;
}

/* Output cursor: appends never overrun, and remember when they would have. */
struct out {
    char *p;
    size_t cap;
    size_t len;
    bool over;
    size_t limit; /* most bytes of output */
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->len + n >= o->cap || o->len + n > o->limit) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->p + o->len, s, n < room ? n : room);
        o->len += n < room ? n : room;
        o->over = true;
    } else {
        memcpy(o->p + o->len, s, n);
        o->len += n;
    }
    o->p[o->len] = '\0';
}

enum tpx_env_rc tpx_env_kube_expand(const char *in, const struct tpx_env_var *env, size_t n,
                                    char *out, size_t cap)
{
    struct out o = {out, cap, 0, false, cap ? cap - 1 : 0};

    if (!cap)
        return TPX_ENV_TOO_LONG;
    out[0] = '\0';
    if (!in)
        return TPX_ENV_UNKNOWN;
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '$') {
            put(&o, "$", 1);
            p += 2;
        } else if (p[0] == '$' && p[1] == '(' && name_start(p[2])) {
            const char *q = p + 2;
            while (name_char(*q))
                q++;
            if (*q == ')') {
                bool found;
                const char *v = lookup(env, n, p + 2, (size_t)(q - p - 2), &found);
                if (found && !v)
                    return TPX_ENV_UNKNOWN;
                if (found)
                    put(&o, v, strlen(v));
                else
                    put(&o, p, (size_t)(q + 1 - p)); /* the kubelet leaves it as written */
                p = q + 1;
            } else {
                put(&o, p, 1);
                p++;
            }
        } else {
            put(&o, p, 1);
            p++;
        }
        if (o.over)
            return TPX_ENV_TOO_LONG;
    }
    return TPX_ENV_OK;
}

size_t tpx_env_resolve_list(struct tpx_env_var *vars, size_t n, char *store, size_t cap)
{
    size_t used = 0;

    for (size_t i = 0; i < n; i++) {
        if (!vars[i].value)
            continue;
        if (used >= cap) {
            vars[i].value = NULL;
            continue;
        }
        if (tpx_env_kube_expand(vars[i].value, vars, i, store + used, cap - used) != TPX_ENV_OK) {
            vars[i].value = NULL;
            continue;
        }
        vars[i].value = store + used;
        used += strlen(store + used) + 1;
    }
    return n;
}

bool tpx_env_has_expansion(const char *text)
{
    for (const char *p = text ? strchr(text, '$') : NULL; p; p = strchr(p + 1, '$')) {
        if (name_start(p[1]) || p[1] == '{' || p[1] == '(' || (p[1] >= '0' && p[1] <= '9'))
            return true;
    }
    return text && strchr(text, '`') != NULL;
}

/* --- the shell --------------------------------------------------------------------------------
 */

struct sh {
    const struct tpx_env_var *env;
    size_t n;
    unsigned depth;
};

static enum tpx_env_rc sh_word(struct sh *s, const char *w, size_t len, struct out *o);

/* A variable's value as a shell would expand it; UNKNOWN when unset or not known. */
static enum tpx_env_rc sh_var(struct sh *s, const char *name, size_t len, struct out *o)
{
    bool found;
    const char *v = lookup(s->env, s->n, name, len, &found);

    if (!found || !v)
        return TPX_ENV_UNKNOWN;
    put(o, v, strlen(v));
    return o->over ? TPX_ENV_TOO_LONG : TPX_ENV_OK;
}

/* The end of a balanced (...) or {...} starting at p (p[0] is the opener), or NULL. Quotes are
 * already gone from the word; nesting of both kinds counts. */
static const char *match_close(const char *p, const char *end)
{
    int depth = 0;

    for (const char *q = p; q < end; q++) {
        if (*q == '(' || *q == '{')
            depth++;
        else if (*q == ')' || *q == '}') {
            if (--depth == 0)
                return q;
        }
    }
    return NULL;
}

/* ${...}: body is what is between the braces. */
static enum tpx_env_rc sh_brace(struct sh *s, const char *body, size_t len, struct out *o)
{
    size_t nl = 0;
    bool found;
    const char *v;
    bool colon = false;

    while (nl < len && name_char(body[nl]))
        nl++;
    if (nl == 0 || !name_start(body[0]))
        return TPX_ENV_UNKNOWN; /* ${#X}, ${1}, ${!X}, ... */
    if (nl == len)
        return sh_var(s, body, nl, o);
    if (body[nl] == ':') {
        colon = true;
        nl++;
    }
    if (nl >= len || (body[nl] != '-' && body[nl] != '='))
        return TPX_ENV_UNKNOWN; /* ${X:+y}, ${X%y}, ${X:1:2}, ... */
    v = lookup(s->env, s->n, body, colon ? nl - 1 : nl, &found);
    if (found && !v)
        return TPX_ENV_UNKNOWN; /* set to something we cannot know (maybe empty) */
    if (found && (!colon || v[0])) {
        put(o, v, strlen(v));
        return o->over ? TPX_ENV_TOO_LONG : TPX_ENV_OK;
    }
    return sh_word(s, body + nl + 1, len - nl - 1, o);
}

/* --- $(( )) ---------------------------------------------------------------------------------- */

struct ar {
    struct sh *s;
    const char *p;
    const char *end;
    enum tpx_env_rc rc;
    unsigned depth;
};

static void ar_blank(struct ar *a)
{
    while (a->p < a->end && (*a->p == ' ' || *a->p == '\t' || *a->p == '\n'))
        a->p++;
}

static bool ar_fail(struct ar *a, enum tpx_env_rc rc)
{
    if (a->rc == TPX_ENV_OK)
        a->rc = rc;
    return false;
}

static bool ar_expr(struct ar *a, int64_t *v);

/* A decimal integer, all of s[0, len) (blanks around allowed). */
static bool parse_int(const char *s, size_t len, int64_t *v)
{
    size_t i = 0;
    bool neg = false;
    uint64_t x = 0;

    while (i < len && s[i] == ' ')
        i++;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i >= len || s[i] < '0' || s[i] > '9')
        return false;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        x = x * 10 + (uint64_t)(s[i++] - '0');
        if (x > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
            return false;
    }
    while (i < len && s[i] == ' ')
        i++;
    if (i != len)
        return false;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return true;
}

/* A variable's value inside $(( )): it must be a plain integer here. */
static bool ar_var(struct ar *a, const char *name, size_t len, int64_t *v)
{
    char buf[64];
    struct out o = {buf, sizeof(buf), 0, false, sizeof(buf) - 1};
    enum tpx_env_rc rc = sh_var(a->s, name, len, &o);

    if (rc != TPX_ENV_OK)
        return ar_fail(a, rc);
    if (!parse_int(buf, o.len, v))
        return ar_fail(a, TPX_ENV_UNKNOWN);
    return true;
}

static bool ar_primary(struct ar *a, int64_t *v)
{
    ar_blank(a);
    if (a->p >= a->end)
        return ar_fail(a, TPX_ENV_UNKNOWN);
    if (*a->p == '(') {
        if (++a->depth > TPX_ENV_MAX_DEPTH * 4)
            return ar_fail(a, TPX_ENV_UNKNOWN);
        a->p++;
        if (!ar_expr(a, v))
            return false;
        ar_blank(a);
        if (a->p >= a->end || *a->p != ')')
            return ar_fail(a, TPX_ENV_UNKNOWN);
        a->p++;
        a->depth--;
        return true;
    }
    if (*a->p == '-' || *a->p == '+') {
        bool neg = *a->p == '-';
        if (++a->depth > TPX_ENV_MAX_DEPTH * 4)
            return ar_fail(a, TPX_ENV_UNKNOWN);
        a->p++;
        if (!ar_primary(a, v))
            return false;
        a->depth--;
        if (neg) {
            if (*v == INT64_MIN)
                return ar_fail(a, TPX_ENV_UNKNOWN);
            *v = -*v;
        }
        return true;
    }
    if (*a->p >= '0' && *a->p <= '9') {
        const char *q = a->p;
        while (q < a->end && name_char(*q))
            q++;
        if (*a->p == '0' && q - a->p > 1)
            return ar_fail(a, TPX_ENV_UNKNOWN); /* octal or hex: not worth a guess */
        if (!parse_int(a->p, (size_t)(q - a->p), v))
            return ar_fail(a, TPX_ENV_UNKNOWN);
        a->p = q;
        return true;
    }
    if (*a->p == '$' && a->p + 1 < a->end && a->p[1] == '{') {
        const char *close = match_close(a->p + 1, a->end);
        const char *q = a->p + 2;
        while (q < a->end && name_char(*q))
            q++;
        if (!close || q != close || q == a->p + 2)
            return ar_fail(a, TPX_ENV_UNKNOWN);
        if (!ar_var(a, a->p + 2, (size_t)(q - a->p - 2), v))
            return false;
        a->p = close + 1;
        return true;
    }
    if (*a->p == '$')
        a->p++;
    if (a->p < a->end && name_start(*a->p)) {
        const char *q = a->p;
        while (q < a->end && name_char(*q))
            q++;
        if (!ar_var(a, a->p, (size_t)(q - a->p), v))
            return false;
        a->p = q;
        return true;
    }
    return ar_fail(a, TPX_ENV_UNKNOWN);
}

static bool ar_term(struct ar *a, int64_t *v)
{
    if (!ar_primary(a, v))
        return false;
    for (;;) {
        char op;
        int64_t r;
        ar_blank(a);
        if (a->p >= a->end || (*a->p != '*' && *a->p != '/' && *a->p != '%'))
            return true;
        op = *a->p++;
        if (op == '*' && a->p < a->end && *a->p == '*')
            return ar_fail(a, TPX_ENV_UNKNOWN); /* ** is not POSIX */
        if (!ar_primary(a, &r))
            return false;
        if (op == '*') {
            if (__builtin_mul_overflow(*v, r, v))
                return ar_fail(a, TPX_ENV_UNKNOWN);
        } else {
            if (r == 0 || (*v == INT64_MIN && r == -1))
                return ar_fail(a, TPX_ENV_UNKNOWN);
            *v = op == '/' ? *v / r : *v % r;
        }
    }
}

static bool ar_expr(struct ar *a, int64_t *v)
{
    if (!ar_term(a, v))
        return false;
    for (;;) {
        char op;
        int64_t r;
        ar_blank(a);
        if (a->p >= a->end || (*a->p != '+' && *a->p != '-'))
            return true;
        op = *a->p++;
        if (!ar_term(a, &r))
            return false;
        if (op == '+' ? __builtin_add_overflow(*v, r, v) : __builtin_sub_overflow(*v, r, v))
            return ar_fail(a, TPX_ENV_UNKNOWN);
    }
}

static enum tpx_env_rc sh_arith(struct sh *s, const char *body, size_t len, struct out *o)
{
    struct ar a = {s, body, body + len, TPX_ENV_OK, 0};
    int64_t v = 0;
    char buf[32];
    int k;

    if (!ar_expr(&a, &v))
        return a.rc;
    ar_blank(&a);
    if (a.p != a.end)
        return TPX_ENV_UNKNOWN; /* an operator we do not read: ==, <<, ?:, ... */
    k = snprintf(buf, sizeof(buf), "%lld", (long long)v);
    put(o, buf, (size_t)k);
    return o->over ? TPX_ENV_TOO_LONG : TPX_ENV_OK;
}

static enum tpx_env_rc sh_word(struct sh *s, const char *w, size_t len, struct out *o)
{
    const char *end = w + len;
    enum tpx_env_rc rc = TPX_ENV_OK;

    if (++s->depth > TPX_ENV_MAX_DEPTH)
        return TPX_ENV_UNKNOWN;
    for (const char *p = w; p < end && rc == TPX_ENV_OK;) {
        if (*p == '`')
            return TPX_ENV_UNKNOWN;
        if (*p != '$' || p + 1 >= end) {
            put(o, p, 1);
            p++;
        } else if (p + 2 < end && p[1] == '(' && p[2] == '(') {
            const char *close = match_close(p + 1, end);
            if (!close || close - p < 4 || close[-1] != ')')
                return TPX_ENV_UNKNOWN;
            rc = sh_arith(s, p + 3, (size_t)(close - 1 - (p + 3)), o);
            p = close + 1;
        } else if (p[1] == '(') {
            return TPX_ENV_UNKNOWN; /* command substitution, or a $(VAR) the kubelet left */
        } else if (p[1] == '{') {
            const char *close = match_close(p + 1, end);
            if (!close)
                return TPX_ENV_UNKNOWN;
            rc = sh_brace(s, p + 2, (size_t)(close - p - 2), o);
            p = close + 1;
        } else if (name_start(p[1])) {
            const char *q = p + 1;
            while (q < end && name_char(*q))
                q++;
            rc = sh_var(s, p + 1, (size_t)(q - p - 1), o);
            p = q;
        } else if ((p[1] >= '0' && p[1] <= '9') || strchr("@*#?$!-", p[1])) {
            return TPX_ENV_UNKNOWN; /* positional and special parameters */
        } else {
            put(o, p, 1);
            p++;
        }
        if (o->over)
            return TPX_ENV_TOO_LONG;
    }
    s->depth--;
    return rc;
}

enum tpx_env_rc tpx_env_shell_expand(const char *word, const struct tpx_env_var *env, size_t n,
                                     char *out, size_t cap)
{
    struct sh s = {env, n, 0};
    struct out o = {out, cap, 0, false, TPX_ENV_MAX_LEN};
    size_t len;

    if (!cap)
        return TPX_ENV_TOO_LONG;
    out[0] = '\0';
    if (!word)
        return TPX_ENV_UNKNOWN;
    len = strlen(word);
    if (len > TPX_ENV_MAX_LEN)
        return TPX_ENV_TOO_LONG;
    return sh_word(&s, word, len, &o);
}
