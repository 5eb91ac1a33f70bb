/* SPDX-License-Identifier: Apache-2.0 */
/* extender/codec_filter.c - ExtenderFilterResult out, buffered or streamed piece by piece (issue
 * 14), out of codec.c (STYLE 2.2, its line cap): names as valid UTF-8 and each failed name once
 * per map (issue 21, item 9). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/jsonstr.h"
#include "common/utf8.h"
#include "extender/codec.h"
#include "extender/codec_int.h"

/* ---- filter result ---- */

/* The name as the answer writes it: itself, or (with an invalid UTF-8 byte) a malloc'd copy with
 * U+FFFD in its place, into *own; NULL when out of memory. */
static const char *written_name(const char *name, char **own)
{
    size_t n = strlen(name), size = 3 * n + 1;

    *own = NULL;
    if (tpx_utf8_valid_len(name, n) == n)
        return name;
    if (!(*own = malloc(size)))
        return NULL;
    tpx_utf8_clean(*own, size, name);
    return *own;
}

/* Which failed names to leave out of their map (issue 21, item 9). A name listed twice with the
 * same verdict would be a duplicate key in FailedNodes or FailedAndUnresolvableNodes, which
 * kube-scheduler decodes with encoding/json into a Go map (FailedNodesMap, map[string]string in
 * k8s.io/kube-scheduler/extender/v1): there a repeated key is simply the last one written. So the
 * last occurrence is kept and the earlier ones skipped, and the answer says once what Go would
 * decode. Names compare as written (invalid bytes as U+FFFD). *skip is NULL when nothing is
 * skipped; false when out of memory. */
static bool failed_repeats(const struct ext_codec_args *a, const enum pol_verdict *verdict,
                           bool **skip)
{
    const struct tpx_hash_key *key = tpx_hash_process_key();
    size_t cap = 16, nfail = 0, *slot;
    const char **w;
    char **own;
    bool *s = NULL, ok = true;

    *skip = NULL;
    for (size_t i = 0; verdict && i < a->nnames; i++)
        nfail += verdict[i] != POL_FIT;
    if (nfail < 2)
        return true;
    while (cap < 2 * nfail)
        cap *= 2;
    slot = malloc(cap * sizeof(*slot));
    w = calloc(a->nnames, sizeof(*w));
    own = calloc(a->nnames, sizeof(*own));
    if (!slot || !w || !own) {
        ok = false;
        goto out;
    }
    memset(slot, 0xff, cap * sizeof(*slot));
    for (size_t i = a->nnames; ok && i-- > 0;) {
        uint64_t h;

        if (verdict[i] == POL_FIT)
            continue;
        if (!(w[i] = written_name(a->names[i], &own[i]))) {
            ok = false;
            break;
        }
        h = tpx_hash_keyed(key, w[i], strlen(w[i])) ^ (uint64_t)verdict[i];
        for (size_t k = h & (cap - 1);; k = (k + 1) & (cap - 1)) {
            size_t j = slot[k];

            if (j == SIZE_MAX) {
                slot[k] = i;
                break;
            }
            if (verdict[j] == verdict[i] && strcmp(w[j], w[i]) == 0) {
                if (!s && !(s = calloc(a->nnames, sizeof(*s))))
                    ok = false;
                else
                    s[i] = true; /* a later one stands for it */
                break;
            }
        }
    }
out:
    for (size_t i = 0; own && i < a->nnames; i++)
        free(own[i]);
    free(own);
    free(w);
    free(slot);
    if (!ok) {
        free(s);
        return false;
    }
    *skip = s;
    return true;
}

static enum tpx_code reason_map(const struct ext_codec_args *a, const enum pol_verdict *verdict,
                                const char *const *reason, const bool *skip, enum pol_verdict want,
                                struct tpx_buf *out, struct tpx_err *err)
{
    bool first = true;

    if (tpx_buf_add(out, "{", 1, err) != TPX_OK)
        return err->code;
    for (size_t i = 0; verdict && i < a->nnames; i++) {
        if (verdict[i] != want || (skip && skip[i]))
            continue;
        if (!first && tpx_buf_add(out, ",", 1, err) != TPX_OK)
            return err->code;
        first = false;
        if (tpx_json_str(out, a->names[i], err) != TPX_OK ||
            tpx_buf_add(out, ":", 1, err) != TPX_OK ||
            tpx_json_str(out, reason && reason[i] ? reason[i] : "rejected", err) != TPX_OK)
            return err->code;
    }
    return tpx_buf_add(out, "}", 1, err);
}

enum tpx_code ext_codec_filter_result(const struct ext_codec_args *a,
                                      const enum pol_verdict *verdict, const char *const *reason,
                                      struct tpx_buf *out, struct tpx_err *err)
{
    bool first = true, *skip = NULL;

    if (a->full_nodes) {
        if (tpx_buf_adds(out, "{\"Nodes\":{\"metadata\":{},\"items\":[", err) != TPX_OK)
            return err->code;
        for (size_t i = 0; i < a->nodes.n; i++) {
            const struct ext_nodescan_node *s = &a->nodes.items[i];
            if (verdict && verdict[i] != POL_FIT)
                continue;
            if (!first && tpx_buf_add(out, ",", 1, err) != TPX_OK)
                return err->code;
            first = false;
            if (tpx_json_raw_clean(out, a->body + a->nodes_off + s->off, s->len, err) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_adds(out, "]},\"NodeNames\":null", err) != TPX_OK)
            return err->code;
    } else {
        bool all = true;

        for (size_t i = 0; verdict && all && i < a->nnames; i++)
            all = verdict[i] == POL_FIT;
        /* every name passes: the answer's list is the request's, byte for byte (validated) */
        if (all && a->cached_bytes)
            return tpx_buf_adds(out, "{\"Nodes\":null,\"NodeNames\":", err) != TPX_OK ||
                           tpx_buf_add(out, a->cached_bytes, a->cached_len, err) != TPX_OK ||
                           tpx_buf_adds(out,
                                        ",\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},"
                                        "\"Error\":\"\"}",
                                        err) != TPX_OK
                       ? err->code
                       : TPX_OK;
        if (tpx_buf_adds(out, "{\"Nodes\":null,\"NodeNames\":[", err) != TPX_OK)
            return err->code;
        for (size_t i = 0; i < a->nnames; i++) {
            if (verdict && verdict[i] != POL_FIT)
                continue;
            if (!first && tpx_buf_add(out, ",", 1, err) != TPX_OK)
                return err->code;
            first = false;
            if (tpx_json_str(out, a->names[i], err) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_adds(out, "]", err) != TPX_OK)
            return err->code;
    }
    if (!failed_repeats(a, verdict, &skip))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory writing the filter answer");
    if (tpx_buf_adds(out, ",\"FailedNodes\":", err) != TPX_OK ||
        reason_map(a, verdict, reason, skip, POL_FAIL, out, err) != TPX_OK ||
        tpx_buf_adds(out, ",\"FailedAndUnresolvableNodes\":", err) != TPX_OK ||
        reason_map(a, verdict, reason, skip, POL_UNRESOLVABLE, out, err) != TPX_OK) {
        free(skip);
        return err->code;
    }
    free(skip);
    return tpx_buf_adds(out, ",\"Error\":\"\"}", err);
}

/* The filter answer as pieces, one at a time: static text, a name as it is (it needs no
 * escaping: the common case), a span of the request body (a full Node, or a cached NodeNames
 * list that passes whole), or text formatted in `item` (an escaped name, a reason). */
struct ext_codec_filter_stream {
    const struct ext_codec_args *a;
    const enum pol_verdict *verdict;
    const char *const *reason;
    void (*release)(void *);
    void *release_ctx;
    const uint32_t *plain; /* per name: its length when it needs no escaping, else UINT32_MAX */
    uint32_t *own_plain;
    bool *skip;   /* failed names a later repeat stands for (failed_repeats), or NULL */
    bool echo;    /* names mode, every name passes, the list is cached: send it back as it came */
    bool all_fit; /* every name passes: the failed lists are empty, without a look */
    unsigned phase;
    unsigned sub; /* the piece within an item */
    size_t i;
    bool first;
    struct tpx_buf item;
    const char *last_reason; /* the reason quoted in `reason_json` (reasons are shared) */
    struct tpx_buf reason_json;
    const char *piece; /* what is left of the current piece */
    size_t left;
    size_t pos; /* bytes handed out so far */
};

static bool stream_fits(const struct ext_codec_filter_stream *f, size_t i, enum pol_verdict want)
{
    return f->verdict ? f->verdict[i] == want : want == POL_FIT;
}

static void stream_piece(struct ext_codec_filter_stream *f, const char *p, size_t n)
{
    f->piece = p;
    f->left = n;
}

/* The pieces of name i, by f->sub: 0 ,"  (the comma unless first), 1 NAME, 2 " (or ": with
 * colon), then 3: done. A name to escape is one formatted piece instead, and goes to 3 at once.
 * false when out of memory. */
static bool stream_name(struct ext_codec_filter_stream *f, size_t i, bool colon)
{
    struct tpx_err e = TPX_ERR_INIT;
    const char *name = f->a->names[i];

    if (f->sub == 0 && f->plain[i] == UINT32_MAX) {
        tpx_buf_reset(&f->item);
        if ((!f->first && tpx_buf_add(&f->item, ",", 1, &e) != TPX_OK) ||
            tpx_json_str(&f->item, name, &e) != TPX_OK ||
            (colon && tpx_buf_add(&f->item, ":", 1, &e) != TPX_OK))
            return false;
        stream_piece(f, f->item.data, f->item.len);
        f->first = false;
        f->sub = 3;
    } else if (f->sub == 0) {
        stream_piece(f, f->first ? "\"" : ",\"", f->first ? 1 : 2);
        f->first = false;
        f->sub = 1;
    } else if (f->sub == 1) {
        stream_piece(f, name, f->plain[i]);
        f->sub = 2;
    } else {
        stream_piece(f, colon ? "\":" : "\"", colon ? 2 : 1);
        f->sub = 3;
    }
    return true;
}

/* The next piece into f->piece/f->left; false at the end (or out of memory: phase is then not
 * 7, and stream_new refuses it). */
static bool stream_next(struct ext_codec_filter_stream *f)
{
    const struct ext_codec_args *a = f->a;
    struct tpx_err e = TPX_ERR_INIT;
    static const char *const text[] = {
        "{\"Nodes\":null,\"NodeNames\":[",
        "{\"Nodes\":{\"metadata\":{},\"items\":[",
        "],\"FailedNodes\":{",
        "]},\"NodeNames\":null,\"FailedNodes\":{",
        "},\"FailedAndUnresolvableNodes\":{",
        "},\"Error\":\"\"}",
        "{\"Nodes\":null,\"NodeNames\":",
        ",\"FailedNodes\":{",
    };

    for (;;) {
        switch (f->phase) {
        case 0: /* the head */
            f->piece = text[a->full_nodes ? 1 : f->echo ? 6 : 0];
            f->phase = f->echo ? 11 : 1;
            f->i = 0;
            f->sub = 0;
            f->first = true;
            break;
        case 11: /* the cached list, as it came */
            stream_piece(f, a->cached_bytes, a->cached_len);
            f->phase = 2;
            return true;
        case 1: /* the names or Node objects that pass */
            if (f->sub == 3) {
                f->sub = 0;
                f->i++;
            }
            while (f->sub == 0 && f->i < a->nnames && !stream_fits(f, f->i, POL_FIT))
                f->i++;
            if (f->i == a->nnames) {
                f->phase = 2;
                continue;
            }
            if (a->full_nodes) {
                const struct ext_nodescan_node *s = &a->nodes.items[f->i];

                if (f->sub == 0 && !f->first) { /* the comma, then the Node's own bytes */
                    stream_piece(f, ",", 1);
                    f->sub = 2;
                    return true;
                }
                f->first = false;
                if (tpx_utf8_valid_len(a->body + a->nodes_off + s->off, s->len) == s->len) {
                    stream_piece(f, a->body + a->nodes_off + s->off, s->len);
                } else { /* an invalid UTF-8 byte in it: a cleaned copy */
                    tpx_buf_reset(&f->item);
                    if (tpx_json_raw_clean(&f->item, a->body + a->nodes_off + s->off, s->len, &e) !=
                        TPX_OK)
                        return false;
                    stream_piece(f, f->item.data, f->item.len);
                }
                f->sub = 3;
                return true;
            }
            return stream_name(f, f->i, false);
        case 2:
            f->piece = text[a->full_nodes ? 3 : f->echo ? 7 : 2];
            f->phase = 3;
            f->i = 0;
            f->sub = 0;
            f->first = true;
            break;
        case 3: /* FailedNodes, then (5) FailedAndUnresolvableNodes: ,"NAME":"REASON" */
        case 5: {
            enum pol_verdict want = f->phase == 3 ? POL_FAIL : POL_UNRESOLVABLE;
            const char *r;

            if (f->sub == 4) {
                f->sub = 0;
                f->i++;
            }
            while (f->sub == 0 && !f->all_fit && f->i < a->nnames &&
                   (f->verdict[f->i] != want || (f->skip && f->skip[f->i])))
                f->i++;
            if (f->all_fit || f->i == a->nnames) {
                f->phase++;
                continue;
            }
            if (f->sub < 3)
                return stream_name(f, f->i, true);
            r = f->reason && f->reason[f->i] ? f->reason[f->i] : "rejected";
            if (r != f->last_reason) { /* reasons are shared: quoted once per run */
                tpx_buf_reset(&f->reason_json);
                if (tpx_json_str(&f->reason_json, r, &e) != TPX_OK)
                    return false;
                f->last_reason = r;
            }
            stream_piece(f, f->reason_json.data, f->reason_json.len);
            f->sub = 4;
            return true;
        }
        case 4:
            f->piece = text[4];
            f->phase = 5;
            f->i = 0;
            f->sub = 0;
            f->first = true;
            break;
        case 6:
            f->piece = text[5];
            f->phase = 7;
            break;
        default:
            return false;
        }
        f->left = strlen(f->piece);
        return true;
    }
}

static void stream_restart(struct ext_codec_filter_stream *f)
{
    f->phase = 0;
    f->sub = 0;
    f->i = 0;
    f->first = true;
    f->left = 0;
    f->pos = 0;
}

struct ext_codec_filter_stream *
ext_codec_filter_stream_new(const struct ext_codec_args *a, const enum pol_verdict *verdict,
                            const char *const *reason, void (*release)(void *), void *release_ctx,
                            size_t *len, struct tpx_err *err)
{
    struct ext_codec_filter_stream *f = calloc(1, sizeof(*f));
    size_t total = 0;

    *len = 0;
    if (!f) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory");
        return NULL;
    }
    f->a = a;
    f->verdict = verdict;
    f->reason = reason;
    f->release = release;
    f->release_ctx = release_ctx;
    tpx_buf_init(&f->item, SIZE_MAX);
    tpx_buf_init(&f->reason_json, SIZE_MAX);
    f->plain = a->plain;
    if (!f->plain) { /* measured once, for both passes */
        f->own_plain = malloc((a->nnames ? a->nnames : 1) * sizeof(*f->own_plain));
        if (!f->own_plain) {
            free(f);
            tpx_err_set(err, TPX_ENOMEM, "out of memory");
            return NULL;
        }
        for (size_t i = 0; i < a->nnames; i++) {
            size_t pl = tpx_json_plain_len(a->names[i]);
            f->own_plain[i] = pl >= UINT32_MAX ? UINT32_MAX : (uint32_t)pl;
        }
        f->plain = f->own_plain;
    }
    f->all_fit = true;
    for (size_t i = 0; f->all_fit && verdict && i < a->nnames; i++)
        f->all_fit = verdict[i] == POL_FIT;
    f->echo = !a->full_nodes && a->cached_bytes && f->all_fit;
    if (!f->all_fit && !failed_repeats(a, verdict, &f->skip)) {
        f->release = NULL;
        ext_codec_filter_stream_free(f);
        tpx_err_set(err, TPX_ENOMEM, "out of memory writing the filter answer");
        return NULL;
    }
    /* one pass to size it (Content-Length), then the real one as MHD asks */
    stream_restart(f);
    while (stream_next(f))
        total += f->left;
    if (f->phase != 7) {
        f->release = NULL; /* the caller keeps what it gave */
        ext_codec_filter_stream_free(f);
        tpx_err_set(err, TPX_ENOMEM, "out of memory writing the filter answer");
        return NULL;
    }
    stream_restart(f);
    *len = total;
    return f;
}

size_t ext_codec_filter_stream_read(struct ext_codec_filter_stream *f, size_t pos, char *buf,
                                    size_t max)
{
    size_t n = 0;

    if (pos != f->pos)
        return 0; /* only sequential reads */
    while (n < max) {
        size_t k;

        if (!f->left && !stream_next(f))
            break;
        k = f->left < max - n ? f->left : max - n;
        memcpy(buf + n, f->piece, k);
        f->piece += k;
        f->left -= k;
        n += k;
    }
    f->pos += n;
    return n;
}

void ext_codec_filter_stream_free(struct ext_codec_filter_stream *f)
{
    if (!f)
        return;
    tpx_buf_release(&f->item);
    tpx_buf_release(&f->reason_json);
    free(f->own_plain);
    free(f->skip);
    if (f->release)
        f->release(f->release_ctx);
    free(f);
}
