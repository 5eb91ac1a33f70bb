/* SPDX-License-Identifier: Apache-2.0 */
/* common/log.c - formats one JSON line and writes it with one write(2), so lines from different
 * threads never interleave. */
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/jsonstr.h"

enum tpx_log_level tpx_log_level = TPX_INFO;
static int log_fd = 2;

/* A log line longer than this is cut and marked, never split over two writes. */
#define LOG_LINE_CAP (64 * 1024)

void tpx_log_set_level(enum tpx_log_level level)
{
    tpx_log_level = level;
}

void tpx_log_set_fd(int fd)
{
    log_fd = fd;
}

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

bool tpx_log_parse_level(const char *s, enum tpx_log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum tpx_log_level)i;
            return true;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = TPX_WARN;
        return true;
    }
    return false;
}

static void add_string(struct tpx_buf *b, const char *s, struct tpx_err *err)
{
    tpx_json_str(b, s ? s : "", err);
}

static void add_field(struct tpx_buf *b, const struct tpx_log_field *f, struct tpx_err *err)
{
    tpx_buf_add(b, ",", 1, err);
    add_string(b, f->key, err);
    tpx_buf_add(b, ":", 1, err);
    switch (f->type) {
    case TPX_LOG_STR:
        add_string(b, f->s, err);
        break;
    case TPX_LOG_INT:
        tpx_buf_addf(b, err, "%lld", f->i);
        break;
    case TPX_LOG_DBL:
        tpx_buf_addf(b, err, "%.6g", f->d);
        break;
    case TPX_LOG_BOOL:
        tpx_buf_adds(b, f->i ? "true" : "false", err);
        break;
    case TPX_LOG_RAW:
        tpx_buf_adds(b, f->s && *f->s ? f->s : "null", err);
        break;
    }
}

void tpx_log_emit(enum tpx_log_level level, const char *msg, const struct tpx_log_field *fields,
                  unsigned nfields)
{
    struct tpx_buf b;
    struct tpx_err err = TPX_ERR_INIT;
    struct timespec ts;
    struct tm tm;
    char when[40];
    size_t off = 0;

    if ((unsigned)level > TPX_ERROR)
        level = TPX_ERROR;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

    tpx_buf_init(&b, LOG_LINE_CAP);
    tpx_buf_addf(&b, &err, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":", when,
                 ts.tv_nsec / 1000000L, level_names[level]);
    add_string(&b, msg, &err);
    for (unsigned i = 0; i < nfields; i++)
        add_field(&b, &fields[i], &err);
    tpx_buf_add(&b, "}\n", 2, &err);
    if (err.code != TPX_OK) {
        /* Too long or out of memory: say so in a line that is still valid JSON. */
        tpx_buf_release(&b);
        tpx_buf_init(&b, LOG_LINE_CAP);
        tpx_err_clear(&err);
        tpx_buf_addf(&b, &err, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":", when,
                     ts.tv_nsec / 1000000L, level_names[level]);
        add_string(&b, msg, &err);
        tpx_buf_adds(&b, ",\"log_truncated\":true}\n", &err);
        if (err.code != TPX_OK) {
            tpx_buf_release(&b);
            return;
        }
    }
    while (off < b.len) {
        ssize_t w = write(log_fd, b.data + off, b.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    tpx_buf_release(&b);
}
