/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/harness.h - run the real topox binary: one-shot commands with captured output,
 * a long-running `topox serve` on port 0, and HTTP calls to it with libcurl. Links no project
 * library: these tests see topox only from outside. */
#ifndef TPX_TEST_HARNESS_H
#define TPX_TEST_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

struct run_result {
    int status; /* exit status, or 128 + signal number */
    char *out;  /* stdout, NUL-terminated; free with run_result_release() */
    size_t out_len;
    char *err; /* stderr, NUL-terminated */
    size_t err_len;
};

/* Run TOPOX_BIN with args (NULL-terminated, not counting argv[0]); feed stdin_data (may be NULL).
 * Returns 0, or -1 when the process could not be started. */
int run_topox(const char *const *args, const char *stdin_data, struct run_result *r);

/* Same with an explicit program path. */
int run_program(const char *path, const char *const *args, const char *stdin_data,
                struct run_result *r);

void run_result_release(struct run_result *r);

struct server {
    pid_t pid;
    int port;
    int err_fd; /* the read end of its stderr; drained into log */
    char *log;  /* stderr seen so far (NUL-terminated) */
    size_t log_len;
};

/* Start `topox serve --listen 127.0.0.1:0 ARGS...` and wait (up to 20 s) for the log line
 * `"msg":"listening"` with its `"port":N`. Returns 0, or -1 with whatever was logged kept in
 * s->log. */
int server_start(const char *const *args, struct server *s);

/* Read what the server has logged since the last call, without blocking. */
void server_drain(struct server *s);

/* Read its log until needle appears in it (1) or timeout_ms pass (0). For a line the server
 * writes after the change a test can see: once the change shows, its line may still be on the
 * way, so one server_drain() right after is a race. */
int server_wait_log(struct server *s, const char *needle, long timeout_ms);

/* SIGTERM, wait; returns the exit status (128 + signal when killed). Frees s->log. */
int server_stop(struct server *s);

/* SIGKILL and reap every server started and not stopped yet, and close its stderr, without
 * touching its struct server: for a suite's .fini, which runs after a failed cr_assert has left
 * the test, and with it the test's own struct server on its stack. */
void server_kill_all(void);

/* The same, and copies the last cap-1 bytes it logged (the exit included) into why, so a test
 * can show why the exit was not clean (a sanitizer report, a crash, an error). */
int server_stop_checked(struct server *s, char *why, size_t cap);

/* One HTTP request with libcurl. body may be NULL (then GET unless method says otherwise).
 * Returns the status code (0 on transport failure); *resp is malloc'd (free it) when not NULL. */
long http_call(const char *method, int port, const char *path, const char *body, char **resp);

/* Read a whole file into a malloc'd NUL-terminated string, or NULL. */
char *read_file(const char *path, size_t *len);

#endif
