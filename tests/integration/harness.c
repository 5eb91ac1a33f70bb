/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/harness.c - process and HTTP helpers for the black-box tests. */
#include "harness.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct sink {
    char *p;
    size_t len;
    size_t alloc;
};

static void sink_add(struct sink *s, const char *data, size_t n)
{
    if (s->len + n + 1 > s->alloc) {
        size_t want = s->alloc ? s->alloc : 4096;
        while (want < s->len + n + 1)
            want *= 2;
        s->p = realloc(s->p, want);
        if (!s->p)
            abort();
        s->alloc = want;
    }
    memcpy(s->p + s->len, data, n);
    s->len += n;
    s->p[s->len] = '\0';
}

static char **build_argv(const char *path, const char *const *args)
{
    size_t n = 0;
    char **argv;

    while (args && args[n])
        n++;
    argv = calloc(n + 2, sizeof(*argv));
    argv[0] = (char *)path;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    return argv;
}

static int exit_status(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return -1;
}

int run_program(const char *path, const char *const *args, const char *stdin_data,
                struct run_result *r)
{
    int in[2], out[2], errp[2];
    posix_spawn_file_actions_t fa;
    struct sink so = {0}, se = {0};
    size_t in_off = 0, in_len = stdin_data ? strlen(stdin_data) : 0;
    char **argv = build_argv(path, args);
    pid_t pid;
    int ws;

    memset(r, 0, sizeof(*r));
    if (pipe(in) || pipe(out) || pipe(errp)) {
        free(argv);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addclose(&fa, errp[0]);
    if (posix_spawn(&pid, path, &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        free(argv);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    if (in_len == 0) {
        close(in[1]);
        in[1] = -1;
    } else {
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    }
    for (int open_fds = 2; open_fds > 0 || in[1] >= 0;) {
        struct pollfd p[3] = {{out[0], POLLIN, 0}, {errp[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
        char buf[65536];

        if (poll(p, 3, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP))) {
                ssize_t n = read(p[i].fd, buf, sizeof(buf));
                if (n > 0) {
                    sink_add(i == 0 ? &so : &se, buf, (size_t)n);
                } else {
                    close(p[i].fd);
                    if (i == 0)
                        out[0] = -1;
                    else
                        errp[0] = -1;
                    open_fds--;
                }
            }
        }
        if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(in[1], stdin_data + in_off, in_len - in_off);
            if (n > 0)
                in_off += (size_t)n;
            if (n < 0 || in_off == in_len) {
                close(in[1]);
                in[1] = -1;
            }
        }
        if (open_fds == 0 && in[1] >= 0) {
            close(in[1]);
            in[1] = -1;
        }
    }
    waitpid(pid, &ws, 0);
    sink_add(&so, "", 0);
    sink_add(&se, "", 0);
    r->status = exit_status(ws);
    r->out = so.p;
    r->out_len = so.len;
    r->err = se.p;
    r->err_len = se.len;
    return 0;
}

int run_topox(const char *const *args, const char *stdin_data, struct run_result *r)
{
    return run_program(TOPOX_BIN, args, stdin_data, r);
}

void run_result_release(struct run_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

void server_drain(struct server *s)
{
    struct sink sk = {s->log, s->log_len, s->log ? s->log_len + 1 : 0};
    char buf[65536];
    ssize_t n;

    while ((n = read(s->err_fd, buf, sizeof(buf))) > 0)
        sink_add(&sk, buf, (size_t)n);
    if (!sk.p)
        sink_add(&sk, "", 0);
    s->log = sk.p;
    s->log_len = sk.len;
}

/* The servers started and not stopped yet (server_kill_all), by their pid and stderr. */
#define LIVE_MAX 32
static struct {
    pid_t pid;
    int fd;
} live[LIVE_MAX];

static void live_add(pid_t pid, int fd)
{
    for (size_t i = 0; i < LIVE_MAX; i++) {
        if (live[i].pid <= 0) {
            live[i].pid = pid;
            live[i].fd = fd;
            return;
        }
    }
}

static void live_del(pid_t pid)
{
    for (size_t i = 0; pid > 0 && i < LIVE_MAX; i++) {
        if (live[i].pid == pid)
            live[i].pid = 0;
    }
}

void server_kill_all(void)
{
    for (size_t i = 0; i < LIVE_MAX; i++) {
        if (live[i].pid <= 0)
            continue;
        kill(live[i].pid, SIGKILL);
        waitpid(live[i].pid, NULL, 0);
        close(live[i].fd);
        live[i].pid = 0;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int server_wait_log(struct server *s, const char *needle, long timeout_ms)
{
    double deadline = now_s() + (double)timeout_ms / 1000.0;

    for (;;) {
        struct pollfd p = {s->err_fd, POLLIN, 0};

        server_drain(s);
        if (s->log && strstr(s->log, needle))
            return 1;
        if (s->err_fd < 0 || now_s() >= deadline)
            return 0;
        poll(&p, 1, 50);
    }
}

int server_start(const char *const *args, struct server *s)
{
    const char *const head[] = {"serve", "--listen", "127.0.0.1:0"};
    size_t n = 0, nh = sizeof(head) / sizeof(head[0]);
    posix_spawn_file_actions_t fa;
    const char **all;
    char **argv;
    int errp[2];
    double deadline = now_s() + 20.0;

    memset(s, 0, sizeof(*s));
    s->err_fd = -1;
    while (args && args[n])
        n++;
    all = calloc(nh + n + 1, sizeof(*all));
    for (size_t i = 0; i < nh; i++)
        all[i] = head[i];
    for (size_t i = 0; i < n; i++)
        all[nh + i] = args[i];
    argv = build_argv(TOPOX_BIN, all);
    free(all);
    if (pipe(errp)) {
        free(argv);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawn_file_actions_addclose(&fa, errp[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (posix_spawn(&s->pid, TOPOX_BIN, &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        free(argv);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    close(errp[1]);
    s->err_fd = errp[0];
    fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
    live_add(s->pid, s->err_fd);
    while (now_s() < deadline) {
        struct pollfd p = {s->err_fd, POLLIN, 0};
        const char *line;
        int ws;

        poll(&p, 1, 100);
        server_drain(s);
        line = s->log ? strstr(s->log, "\"msg\":\"listening\"") : NULL;
        if (line) {
            const char *port = strstr(line, "\"port\":");
            if (port) {
                s->port = (int)strtol(port + 7, NULL, 10);
                return s->port > 0 ? 0 : -1;
            }
        }
        if (waitpid(s->pid, &ws, WNOHANG) == s->pid) {
            live_del(s->pid);
            s->pid = 0;
            server_drain(s);
            return -1;
        }
    }
    return -1;
}

/* SIGTERM, wait, read the rest of its stderr into s->log; returns the exit status. */
static int stop_and_wait(struct server *s)
{
    int ws = 0;
    int status = -1;

    live_del(s->pid);
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, &ws, 0);
        status = exit_status(ws);
    }
    if (s->err_fd >= 0) {
        server_drain(s);
        close(s->err_fd);
        s->err_fd = -1;
    }
    s->pid = 0;
    return status;
}

static void forget_log(struct server *s)
{
    free(s->log);
    s->log = NULL;
    s->log_len = 0;
}

int server_stop(struct server *s)
{
    int status = stop_and_wait(s);

    forget_log(s);
    return status;
}

int server_stop_checked(struct server *s, char *why, size_t cap)
{
    int status = stop_and_wait(s);
    const char *log = s->log ? s->log : "";
    size_t len = s->log ? s->log_len : 0;

    if (cap)
        snprintf(why, cap, "%s", len >= cap ? log + (len - cap + 1) : log);
    forget_log(s);
    return status;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    sink_add(userdata, data, size * nmemb);
    return size * nmemb;
}

long http_call(const char *method, int port, const char *path, const char *body, char **resp)
{
    struct sink sk = {0};
    struct curl_slist *hdr = NULL;
    char url[512];
    long status = 0;
    CURL *h = curl_easy_init();

    if (!h)
        return 0;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sk);
    if (body) {
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (method)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    sink_add(&sk, "", 0);
    if (resp)
        *resp = sk.p;
    else
        free(sk.p);
    return status;
}

char *read_file(const char *path, size_t *len)
{
    struct sink sk = {0};
    char buf[65536];
    size_t n;
    FILE *f = fopen(path, "rb");

    if (!f)
        return NULL;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        sink_add(&sk, buf, n);
    fclose(f);
    sink_add(&sk, "", 0);
    if (len)
        *len = sk.len;
    return sk.p;
}
