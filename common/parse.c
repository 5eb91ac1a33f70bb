/* SPDX-License-Identifier: Apache-2.0 */
/* common/parse.c - durations and sizes (grammar in parse.h). libc only: no locale, no strtol,
 * whose overflow and sign rules differ from the grammar. */
#include "common/parse.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "common/banned.h"

/* digits at *p -> *v, advancing *p. false when there are none or they overflow 64 bits. */
static bool take_digits(const char **p, uint64_t *v, bool *too_big)
{
    const char *s = *p;
    uint64_t n = 0;

    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (n > (UINT64_MAX - d) / 10)
            *too_big = true;
        else
            n = n * 10 + d;
        s++;
    }
    if (s == *p)
        return false;
    *p = s;
    *v = n;
    return !*too_big;
}

/* The shared start: [blanks] ["+"]. */
static const char *skip_sign(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '+')
        s++;
    return s;
}

/* *acc += v * mult, or false when that passes 64 bits. */
static bool add_scaled(uint64_t *acc, uint64_t v, uint64_t mult)
{
    if (v > UINT64_MAX / mult || *acc > UINT64_MAX - v * mult)
        return false;
    *acc += v * mult;
    return true;
}

static enum tpx_code fail(struct tpx_err *err, bool too_big, const char *s, const char *what,
                          const char *like)
{
    const char *q = s ? s : "";

    if (too_big)
        return tpx_err_set(err, TPX_ETOOBIG, "'%.64s' is too large a %s", q, what);
    return tpx_err_set(err, TPX_EINVAL, "'%.64s' is not a %s (like %s)", q, what, like);
}

enum tpx_code tpx_parse_duration(const char *s, uint64_t *seconds, struct tpx_err *err)
{
    static const char like[] = "90s, 10m or 1h30m";
    uint64_t total = 0;
    bool too_big = false;
    const char *p;

    if (!s)
        return fail(err, false, s, "duration", like);
    p = skip_sign(s);
    for (;;) {
        uint64_t v, mult;

        if (!take_digits(&p, &v, &too_big))
            return fail(err, too_big, s, "duration", like);
        if (*p == 'h')
            mult = 3600;
        else if (*p == 'm')
            mult = 60;
        else if (*p == 's' || *p == '\0')
            mult = 1;
        else
            return fail(err, false, s, "duration", like);
        if (!add_scaled(&total, v, mult))
            return fail(err, true, s, "duration", like);
        if (*p == '\0' || *++p == '\0')
            break;
    }
    *seconds = total;
    return TPX_OK;
}

enum tpx_code tpx_parse_size(const char *s, uint64_t *bytes, struct tpx_err *err)
{
    static const char like[] = "1000, 64M or 256Mi";
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"", 1},        {"k", 1000},        {"K", 1000},       {"Ki", 1ULL << 10},
                 {"M", 1000000}, {"Mi", 1ULL << 20}, {"G", 1000000000}, {"Gi", 1ULL << 30}};
    bool too_big = false;
    uint64_t v = 0;
    const char *p;

    if (!s)
        return fail(err, false, s, "size", like);
    p = skip_sign(s);
    if (!take_digits(&p, &v, &too_big))
        return fail(err, too_big, s, "size", like);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        uint64_t total = 0;

        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (!add_scaled(&total, v, units[i].mult))
            return fail(err, true, s, "size", like);
        *bytes = total;
        return TPX_OK;
    }
    return fail(err, false, s, "size", like);
}
