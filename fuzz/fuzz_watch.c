/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_watch.c - libFuzzer target for the watch-stream framing of kube/watch.c: the bytes
 * of a chunked WATCH body are cut into chunks of fuzzer-chosen sizes and fed to
 * kube_watch_lines_feed(), and the lines it hands back are compared with a plain split of the
 * whole stream on '\n' (empty lines skipped, a line longer than the cap an error, a line that
 * starts with '!' stops the stream as a consumer's `false` does). Each line is then decoded as a
 * watch event ({"type", "object"}) the way on_event() does. A mismatch aborts.
 * Layout of an input: byte 0 picks the line cap, bytes 1-2 seed the chunk sizes, the rest is the
 * stream.
 *   build/fuzz/fuzz/fuzz_watch -dict=fuzz/dict/json.dict fuzz/seeds/fuzz_watch */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct expect {
    const char *stream; /* the whole stream, for the reference split */
    size_t len;
    size_t pos;   /* where the next expected line starts */
    size_t lines; /* lines delivered */
    bool stopped; /* a '!' line was delivered */
};

/* The next non-empty complete line of the reference split at or after e->pos, or false. */
static bool next_line(struct expect *e, const char **line, size_t *n)
{
    while (e->pos < e->len) {
        const char *s = e->stream + e->pos;
        const char *nl = memchr(s, '\n', e->len - e->pos);

        if (!nl)
            return false;
        e->pos += (size_t)(nl - s) + 1;
        if (nl > s) {
            *line = s;
            *n = (size_t)(nl - s);
            return true;
        }
    }
    return false;
}

static void decode_event(const char *line, size_t n)
{
    json_error_t je;
    json_t *ev = json_loadb(line, n, 0, &je);
    json_t *obj = json_object_get(ev, "object");
    json_t *t = json_object_get(ev, "type");

    if (ev && json_is_string(t) && json_is_object(obj)) {
        json_t *md = json_object_get(obj, "metadata");
        json_t *rv = json_object_get(md, "resourceVersion");

        (void)json_string_value(rv);
    }
    json_decref(ev);
}

static bool on_line(void *ctx, const char *line, size_t n)
{
    struct expect *e = ctx;
    const char *want;
    size_t wn;

    if (e->stopped || !next_line(e, &want, &wn) || wn != n || memcmp(want, line, n) != 0)
        abort(); /* a line that the plain split does not have, or a line after a stop */
    e->lines++;
    decode_event(line, n);
    if (line[0] == '!') {
        e->stopped = true;
        return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_watch_lines l;
    struct tpx_err err = TPX_ERR_INIT;
    struct expect e = {0};
    uint32_t seed;
    size_t cap;
    size_t off = 0;
    size_t start = 0;
    size_t want_lines = 0;
    bool want_stop = false;
    bool want_error = false;

    if (size < 3)
        return 0;
    cap = 1 + (size_t)data[0] * 16;
    seed = (uint32_t)data[1] << 8 | data[2];
    e.stream = (const char *)data + 3;
    e.len = size - 3;

    /* The reference: how many lines come out, and whether the stream ends in an error. */
    while (start < e.len) {
        const char *s = e.stream + start;
        const char *nl = memchr(s, '\n', e.len - start);
        size_t ln = nl ? (size_t)(nl - s) : e.len - start;

        if (ln > cap) {
            want_error = true;
            break;
        }
        if (!nl)
            break;
        if (ln > 0) {
            want_lines++;
            if (s[0] == '!') {
                want_stop = true;
                break;
            }
        }
        start += ln + 1;
    }

    kube_watch_lines_init(&l, cap);
    while (off < e.len && !e.stopped) {
        size_t chunk;

        seed = seed * 1103515245u + 12345u;
        chunk = 1 + (seed >> 16) % (seed & 1 ? 7 : 4096);
        if (chunk > e.len - off)
            chunk = e.len - off;
        if (kube_watch_lines_feed(&l, e.stream + off, chunk, on_line, &e, &err) != TPX_OK)
            break;
        off += chunk;
    }
    kube_watch_lines_release(&l);
    if ((err.code != TPX_OK) != want_error || e.lines != want_lines || e.stopped != want_stop)
        abort();
    if (err.code != TPX_OK && err.code != TPX_ETOOBIG)
        abort();
    return 0;
}
