/* SPDX-License-Identifier: Apache-2.0 */
/* common/log.h - JSON-lines logging to stderr: one event, one line, one write(2).
 * Not for policy/ or topology/: they return reasons instead of logging. */
#ifndef TPX_COMMON_LOG_H
#define TPX_COMMON_LOG_H

#include <stdbool.h>

enum tpx_log_level { TPX_DEBUG = 0, TPX_INFO = 1, TPX_WARN = 2, TPX_ERROR = 3, TPX_OFF = 4 };

enum tpx_log_type { TPX_LOG_STR, TPX_LOG_INT, TPX_LOG_DBL, TPX_LOG_BOOL, TPX_LOG_RAW };

/* One field of an event. Strings are borrowed for the duration of the call. TPX_LOG_RAW inserts
 * s verbatim and must already be valid JSON (an object or array built by the caller). */
struct tpx_log_field {
    const char *key;
    enum tpx_log_type type;
    const char *s;
    long long i;
    double d;
};

#define TPX_S(k, v)                                                                                \
    {                                                                                              \
        (k), TPX_LOG_STR, (v), 0, 0                                                                \
    }
#define TPX_I(k, v)                                                                                \
    {                                                                                              \
        (k), TPX_LOG_INT, NULL, (long long)(v), 0                                                  \
    }
#define TPX_D(k, v)                                                                                \
    {                                                                                              \
        (k), TPX_LOG_DBL, NULL, 0, (double)(v)                                                     \
    }
#define TPX_B(k, v)                                                                                \
    {                                                                                              \
        (k), TPX_LOG_BOOL, NULL, (v) ? 1 : 0, 0                                                    \
    }
#define TPX_RAW(k, v)                                                                              \
    {                                                                                              \
        (k), TPX_LOG_RAW, (v), 0, 0                                                                \
    }

/* The current threshold. Written by main before threads start, read everywhere. */
extern enum tpx_log_level tpx_log_level;

/* Set the threshold. Not thread-safe: call before starting threads. */
void tpx_log_set_level(enum tpx_log_level level);

/* Parse "debug", "info", "warn", "error" or "off". false when unknown. */
bool tpx_log_parse_level(const char *s, enum tpx_log_level *out);

/* Send lines to fd instead of stderr (tests). Not thread-safe: call before starting threads. */
void tpx_log_set_fd(int fd);

/* Format one event and write it with a single write(2). Never fails visibly: a line that cannot be
 * written is dropped. Thread-safe. Use TPX_LOG(), which checks the level first. */
void tpx_log_emit(enum tpx_log_level level, const char *msg, const struct tpx_log_field *fields,
                  unsigned nfields);

/* TPX_LOG(TPX_INFO, "http request", TPX_S("pod", name), TPX_I("status", 200)). The level is checked
 * before any field expression is evaluated. */
#define TPX_LOG(level, msg, ...)                                                                   \
    do {                                                                                           \
        if ((level) >= tpx_log_level) {                                                            \
            const struct tpx_log_field tpx_f_[] = {{NULL, TPX_LOG_STR, NULL, 0, 0}, __VA_ARGS__};  \
            tpx_log_emit((level), (msg), tpx_f_ + 1,                                               \
                         (unsigned)(sizeof(tpx_f_) / sizeof(tpx_f_[0]) - 1));                      \
        }                                                                                          \
    } while (0)

#endif
