/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/trace.c - `topox simulate` traces: JSON lines in (jansson, one object a line, each
 * field checked, errors with the line number) and out. */
#include "simulate/trace.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/jsonstr.h"
#include "common/map.h"

#define MAX_PODS 64
#define MAX_GPUS 1024

/* A whole number in [lo, hi] under key of o into *out. */
static enum tpx_code get_uint(const json_t *o, const char *key, unsigned lo, unsigned hi,
                              unsigned *out, const char *name, size_t line, struct tpx_err *err)
{
    const json_t *v = json_object_get(o, key);

    if (!v)
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: arrival without \"%s\"", name, line, key);
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
        json_integer_value(v) > (json_int_t)hi)
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: \"%s\" must be a whole number in [%u, %u]",
                           name, line, key, lo, hi);
    *out = (unsigned)json_integer_value(v);
    return TPX_OK;
}

/* One line, already known to be an object, into *e. */
static enum tpx_code parse_event(const json_t *o, const char *name, size_t line,
                                 struct sim_event *e, struct tpx_err *err)
{
    const json_t *t = json_object_get(o, "time"), *ev = json_object_get(o, "event");
    const json_t *g = json_object_get(o, "group");
    const char *word;

    memset(e, 0, sizeof(*e));
    e->line = line;
    if (!t || !json_is_number(t) || !isfinite(json_number_value(t)) || json_number_value(t) < 0)
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: \"time\" must be a number of seconds >= 0",
                           name, line);
    e->t = json_number_value(t);
    word = json_is_string(ev) ? json_string_value(ev) : NULL;
    if (!word || (strcmp(word, "arrive") != 0 && strcmp(word, "leave") != 0))
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: \"event\" must be \"arrive\" or \"leave\"",
                           name, line);
    e->arrive = strcmp(word, "arrive") == 0;
    if (!json_is_string(g) || json_string_length(g) == 0 ||
        json_string_length(g) >= sizeof(e->group) ||
        strlen(json_string_value(g)) != json_string_length(g))
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: \"group\" must be a name of 1 to %zu bytes",
                           name, line, sizeof(e->group) - 1);
    memcpy(e->group, json_string_value(g), json_string_length(g) + 1);
    if (!e->arrive)
        return TPX_OK;
    if (get_uint(o, "pods", 1, MAX_PODS, &e->pods, name, line, err) != TPX_OK ||
        get_uint(o, "gpus", 1, MAX_GPUS, &e->gpus, name, line, err) != TPX_OK ||
        get_uint(o, "tp", 1, MAX_PODS * MAX_GPUS, &e->tp, name, line, err) != TPX_OK ||
        get_uint(o, "pp", 1, MAX_PODS * MAX_GPUS, &e->pp, name, line, err) != TPX_OK)
        return err->code;
    const json_t *sc = json_object_get(o, "scope");
    if (sc && (!json_is_string(sc) || (strcmp(json_string_value(sc), "rack") != 0 &&
                                       strcmp(json_string_value(sc), "block") != 0)))
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: \"scope\" must be \"rack\" or \"block\"", name,
                           line);
    e->block = sc && strcmp(json_string_value(sc), "block") == 0;
    /* in 64 bits: tp x pp may pass what an unsigned holds */
    if ((uint64_t)e->tp * e->pp > (uint64_t)e->pods * e->gpus ||
        (e->pods * e->gpus) % (e->tp * e->pp) != 0)
        return tpx_err_set(err, TPX_EINVAL,
                           "%s:%zu: tp %u x pp %u does not divide %u pods x %u gpus", name, line,
                           e->tp, e->pp, e->pods, e->gpus);
    return TPX_OK;
}

enum tpx_code sim_trace_parse(const char *data, size_t len, const char *name, struct sim_event **ev,
                              size_t *n, struct tpx_err *err)
{
    struct sim_event *out;
    struct tpx_map live;
    size_t cap = 1, count = 0, line = 0, pos = 0;
    double last_t = 0;
    enum tpx_code rc = TPX_OK;

    *ev = NULL;
    *n = 0;
    for (size_t i = 0; i < len; i++)
        cap += data[i] == '\n';
    /* allocated once: the map borrows the group names of out[] */
    out = calloc(cap, sizeof(*out));
    if (!out)
        return tpx_err_set(err, TPX_ENOMEM, "%s: out of memory", name);
    tpx_map_init(&live);
    while (pos < len && rc == TPX_OK) {
        const char *p = data + pos, *nl = memchr(p, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - p) : len - pos, skip = 0;
        json_error_t jerr;
        json_t *o;
        struct sim_event *e = &out[count];

        line++;
        pos += llen + (nl != NULL);
        while (skip < llen && (p[skip] == ' ' || p[skip] == '\t' || p[skip] == '\r'))
            skip++;
        if (skip == llen || p[skip] == '#')
            continue;
        o = json_loadb(p, llen, JSON_REJECT_DUPLICATES, &jerr);
        if (!o) {
            rc = tpx_err_set(err, TPX_EPARSE, "%s:%zu:%d: %s", name, line, jerr.column, jerr.text);
            break;
        }
        if (!json_is_object(o)) {
            json_decref(o);
            rc = tpx_err_set(err, TPX_EPARSE, "%s:%zu: not a JSON object", name, line);
            break;
        }
        rc = parse_event(o, name, line, e, err);
        json_decref(o);
        if (rc != TPX_OK)
            break;
        if (e->t < last_t) {
            rc = tpx_err_set(err, TPX_EINVAL, "%s:%zu: time %g is before the line above (%g)", name,
                             line, e->t, last_t);
            break;
        }
        last_t = e->t;
        if (e->arrive && tpx_map_find(&live, e->group)) {
            rc = tpx_err_set(err, TPX_EINVAL, "%s:%zu: group '%s' arrives again before it leaves",
                             name, line, e->group);
        } else if (e->arrive) {
            rc = tpx_map_put_num(&live, e->group, count, err);
        } else if (!tpx_map_del(&live, e->group, NULL)) {
            rc = tpx_err_set(err, TPX_EINVAL, "%s:%zu: group '%s' leaves but has not arrived", name,
                             line, e->group);
        }
        count++;
    }
    tpx_map_release(&live);
    if (rc != TPX_OK) {
        free(out);
        return rc;
    }
    *ev = out;
    *n = count;
    return TPX_OK;
}

enum tpx_code sim_trace_read(const char *path, struct sim_event **ev, size_t *n,
                             struct tpx_err *err)
{
    char *data;
    size_t len;
    enum tpx_code rc;

    *ev = NULL;
    *n = 0;
    if (tpx_read_file(path, SIM_TRACE_MAX_FILE, &data, &len, err) != TPX_OK) {
        tpx_err_prefix(err, "trace '%s'", path);
        return err->code;
    }
    rc = sim_trace_parse(data, len, strcmp(path, "-") == 0 ? "<stdin>" : path, ev, n, err);
    free(data);
    return rc;
}

enum tpx_code sim_trace_write(struct tpx_buf *out, const struct sim_event *ev, size_t n,
                              struct tpx_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const struct sim_event *e = &ev[i];
        if (tpx_buf_addf(out, err, "{\"time\":%.3f,\"event\":\"%s\",\"group\":", e->t,
                         e->arrive ? "arrive" : "leave") != TPX_OK ||
            tpx_json_str(out, e->group, err) != TPX_OK)
            return err->code;
        if (e->arrive && tpx_buf_addf(out, err, ",\"pods\":%u,\"gpus\":%u,\"tp\":%u,\"pp\":%u",
                                      e->pods, e->gpus, e->tp, e->pp) != TPX_OK)
            return err->code;
        if (e->arrive && e->block && tpx_buf_adds(out, ",\"scope\":\"block\"", err) != TPX_OK)
            return err->code;
        if (tpx_buf_adds(out, "}\n", err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}
