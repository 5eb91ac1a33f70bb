/* SPDX-License-Identifier: Apache-2.0 */
/* extender/nodescan.c - a one-pass JSON tokenizer: validates while it skips, decodes only the
 * strings the filter needs into one arena. Written because a full jansson DOM of 5 000 Node
 * objects (~30 MB) costs hundreds of milliseconds and a million allocations; this costs one pass
 * and a handful of allocations. */
#include "extender/nodescan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct scan {
    const char *b;
    size_t len;
    size_t pos;
    unsigned depth;
    struct tpx_err *err;
};

static enum tpx_code fail(struct scan *s, const char *what)
{
    return tpx_err_set(s->err, TPX_EPARSE, "malformed JSON at byte %zu: %s", s->pos, what);
}

static inline void ws(struct scan *s)
{
    /* compact JSON (what Go's json.Marshal writes) has none: one test in the common case */
    if (s->pos < s->len && (unsigned char)s->b[s->pos] > ' ')
        return;
    while (s->pos < s->len) {
        char c = s->b[s->pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
            break;
        s->pos++;
    }
}

static int peek(struct scan *s)
{
    ws(s);
    return s->pos < s->len ? (unsigned char)s->b[s->pos] : -1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* SWAR (issue 14): eight bytes at a time. The result has the high bit set in each byte of w
 * that is a quote or a backslash (and, with ctl, below 0x20). Only the lowest flagged byte is
 * exact (a borrow can flag bytes above a true hit), which is the only one read. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static inline uint64_t special8(uint64_t w, bool ctl)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    uint64_t m = ((q - ONES) & ~q) | ((b - ONES) & ~b);

    if (ctl)
        m |= (w - ONES * 0x20) & ~w;
    return m & HIGHS;
}

/* The first byte at or after i (before len) that is a quote, a backslash or (ctl) a control
 * byte; len when there is none. */
static inline size_t next_special(const char *b, size_t i, size_t len, bool ctl)
{
#if defined(__SSE2__)
    /* sixteen bytes at a time where SSE2 is there (every x86-64): three compares and a mask */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i low = _mm_set1_epi8(0x1f);

    for (; i + 16 <= len; i += 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        __m128i m = _mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, bslash));
        unsigned bits;

        if (ctl) /* unsigned w <= 0x1f: max(w, 0x1f) == 0x1f */
            m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_max_epu8(w, low), low));
        bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return i + (size_t)__builtin_ctz(bits);
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= len; i += 8) {
        uint64_t w, m;

        memcpy(&w, b + i, 8);
        m = special8(w, ctl);
        if (m)
            return i + ((size_t)__builtin_ctzll(m) >> 3);
    }
#endif
    for (; i < len; i++) {
        unsigned char c = (unsigned char)b[i];

        if (c == '"' || c == '\\' || (ctl && c < 0x20))
            return i;
    }
    return len;
}

/* At a quote: validate the string, leave pos after the closing quote. *raw and *rawlen give
 * the bytes between the quotes; *esc says whether any escape is inside. */
static enum tpx_code string_tok(struct scan *s, size_t *raw, size_t *rawlen, bool *esc)
{
    size_t j;

    if (s->pos >= s->len || s->b[s->pos] != '"')
        return fail(s, "expected a string");
    *raw = s->pos + 1;
    *esc = false;
    for (j = *raw;;) {
        unsigned char c;

        j = next_special(s->b, j, s->len, true);
        if (j >= s->len) {
            s->pos = s->len;
            return fail(s, "unterminated string");
        }
        c = (unsigned char)s->b[j];
        if (c == '"') {
            *rawlen = j - *raw;
            s->pos = j + 1;
            return TPX_OK;
        }
        if (c < 0x20) {
            s->pos = j;
            return fail(s, "control character in a string");
        }
        *esc = true; /* a backslash */
        if (j + 1 >= s->len) {
            s->pos = j;
            return fail(s, "unterminated escape");
        }
        c = (unsigned char)s->b[j + 1];
        if (c == 'u') {
            if (j + 5 >= s->len || hexval(s->b[j + 2]) < 0 || hexval(s->b[j + 3]) < 0 ||
                hexval(s->b[j + 4]) < 0 || hexval(s->b[j + 5]) < 0) {
                s->pos = j;
                return fail(s, "bad \\u escape");
            }
            j += 6;
        } else if (c && strchr("\"\\/bfnrt", c)) {
            j += 2;
        } else {
            s->pos = j;
            return fail(s, "bad escape");
        }
    }
}

static void put_utf8(char **d, uint32_t cp)
{
    char *o = *d;

    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    *d = o;
}

static uint32_t hex4(const char *p)
{
    return (uint32_t)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
}

/* Decode an already validated string body into dst (room for rawlen + 1 bytes); NUL-terminates.
 * Returns the decoded length. Unpaired surrogates become U+FFFD, as Go does. */
static size_t decode(const char *raw, size_t rawlen, char *dst)
{
    char *d = dst;
    size_t i = 0;

    while (i < rawlen) {
        char c = raw[i];
        uint32_t cp;

        if (c != '\\') {
            *d++ = c;
            i++;
            continue;
        }
        c = raw[i + 1];
        i += 2;
        switch (c) {
        case 'b':
            *d++ = '\b';
            break;
        case 'f':
            *d++ = '\f';
            break;
        case 'n':
            *d++ = '\n';
            break;
        case 'r':
            *d++ = '\r';
            break;
        case 't':
            *d++ = '\t';
            break;
        case 'u':
            cp = hex4(raw + i);
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= rawlen && raw[i] == '\\' &&
                raw[i + 1] == 'u') {
                uint32_t lo = hex4(raw + i + 2);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000)
                cp = 0xFFFD;
            /* a \u escape takes 6 raw bytes and decodes to at most 3 (4 for a pair of 12) */
            put_utf8(&d, cp);
            break;
        default:
            *d++ = c;
            break;
        }
    }
    *d = '\0';
    return (size_t)(d - dst);
}

static enum tpx_code skip_value(struct scan *s);

static enum tpx_code number_tok(struct scan *s)
{
    size_t i = s->pos;
    size_t digits;

    if (i < s->len && s->b[i] == '-')
        i++;
    digits = i;
    while (i < s->len && s->b[i] >= '0' && s->b[i] <= '9')
        i++;
    if (i == digits)
        return fail(s, "bad number");
    if (i < s->len && s->b[i] == '.') {
        i++;
        digits = i;
        while (i < s->len && s->b[i] >= '0' && s->b[i] <= '9')
            i++;
        if (i == digits)
            return fail(s, "bad number");
    }
    if (i < s->len && (s->b[i] == 'e' || s->b[i] == 'E')) {
        i++;
        if (i < s->len && (s->b[i] == '+' || s->b[i] == '-'))
            i++;
        digits = i;
        while (i < s->len && s->b[i] >= '0' && s->b[i] <= '9')
            i++;
        if (i == digits)
            return fail(s, "bad number");
    }
    s->pos = i;
    return TPX_OK;
}

static enum tpx_code literal(struct scan *s, const char *word)
{
    size_t n = strlen(word);

    if (s->len - s->pos < n || memcmp(s->b + s->pos, word, n) != 0)
        return fail(s, "unexpected character");
    s->pos += n;
    return TPX_OK;
}

/* Iterate an object: call at '{'. Returns 1 with *key set for each member (pos at the value),
 * 0 at the end (pos after '}'), -1 on error. *first must start true. */
static int obj_next(struct scan *s, bool *first, size_t *kraw, size_t *klen, bool *kesc)
{
    int c;

    if (*first) {
        if (peek(s) != '{') {
            fail(s, "expected an object");
            return -1;
        }
        s->pos++;
        *first = false;
        c = peek(s);
        if (c == '}') {
            s->pos++;
            return 0;
        }
    } else {
        c = peek(s);
        if (c == '}') {
            s->pos++;
            return 0;
        }
        if (c != ',') {
            fail(s, "expected ',' or '}' in an object");
            return -1;
        }
        s->pos++;
        ws(s);
    }
    if (string_tok(s, kraw, klen, kesc) != TPX_OK)
        return -1;
    if (peek(s) != ':') {
        fail(s, "expected ':' after a key");
        return -1;
    }
    s->pos++;
    ws(s);
    return 1;
}

/* Iterate an array: call at '['. Returns 1 at each element (pos at it), 0 at the end. */
static int arr_next(struct scan *s, bool *first)
{
    int c;

    if (*first) {
        if (peek(s) != '[') {
            fail(s, "expected an array");
            return -1;
        }
        s->pos++;
        *first = false;
        c = peek(s);
        if (c == ']') {
            s->pos++;
            return 0;
        }
        return 1;
    }
    c = peek(s);
    if (c == ']') {
        s->pos++;
        return 0;
    }
    if (c != ',') {
        fail(s, "expected ',' or ']' in an array");
        return -1;
    }
    s->pos++;
    ws(s);
    return 1;
}

static enum tpx_code skip_value(struct scan *s)
{
    int c = peek(s);
    size_t a, b;
    bool e, first = true;
    int r;

    switch (c) {
    case '"':
        return string_tok(s, &a, &b, &e);
    case '{':
    case '[':
        if (++s->depth > EXT_SCAN_MAX_DEPTH)
            return tpx_err_set(s->err, TPX_ETOOBIG, "JSON nested deeper than %d at byte %zu",
                               EXT_SCAN_MAX_DEPTH, s->pos);
        if (c == '{') {
            while ((r = obj_next(s, &first, &a, &b, &e)) == 1) {
                if (skip_value(s) != TPX_OK)
                    return s->err->code;
            }
        } else {
            while ((r = arr_next(s, &first)) == 1) {
                if (skip_value(s) != TPX_OK)
                    return s->err->code;
            }
        }
        s->depth--;
        return r == 0 ? TPX_OK : s->err->code;
    case 't':
        return literal(s, "true");
    case 'f':
        return literal(s, "false");
    case 'n':
        return literal(s, "null");
    case -1:
        return fail(s, "unexpected end of input");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return number_tok(s);
        return fail(s, "unexpected character");
    }
}

static enum tpx_code at_end(struct scan *s)
{
    if (peek(s) != -1)
        return fail(s, "trailing data after the JSON value");
    return TPX_OK;
}

enum tpx_code ext_nodescan_validate(const char *p, size_t len, struct tpx_err *err)
{
    struct scan s = {p, len, 0, 0, err};

    if (skip_value(&s) != TPX_OK)
        return err->code;
    return at_end(&s);
}

static bool key_is(const char *raw, size_t rawlen, const char *key)
{
    return strlen(key) == rawlen && memcmp(raw, key, rawlen) == 0;
}

/* Whether an object key matches a field name the way Go's encoding/json matches it: the key
 * unescaped, then equal under case folding. Folding is ASCII's, plus the two non-ASCII runes whose
 * simple fold is an ASCII letter: U+017F (long s) and U+212A (Kelvin sign). */
static bool key_matches(const char *raw, size_t rawlen, bool esc, const char *name)
{
    char buf[256];
    const unsigned char *k = (const unsigned char *)raw;
    size_t n = rawlen, i = 0, j = 0, nl = strlen(name);

    if (esc) {
        if (rawlen >= sizeof(buf))
            return false; /* longer than any name matched here */
        n = decode(raw, rawlen, buf);
        k = (const unsigned char *)buf;
    }
    while (i < n && j < nl) {
        unsigned char want = (unsigned char)name[j];

        if (want >= 'A' && want <= 'Z')
            want = (unsigned char)(want - 'A' + 'a');
        if (k[i] < 0x80) {
            unsigned char c = k[i];

            if (c >= 'A' && c <= 'Z')
                c = (unsigned char)(c - 'A' + 'a');
            if (c != want)
                return false;
            i++;
        } else if (want == 's' && i + 1 < n && k[i] == 0xC5 && k[i + 1] == 0xBF) {
            i += 2;
        } else if (want == 'k' && i + 2 < n && k[i] == 0xE2 && k[i + 1] == 0x84 &&
                   k[i + 2] == 0xAA) {
            i += 3;
        } else {
            return false;
        }
        j++;
    }
    return i == n && j == nl;
}

bool ext_nodescan_key_is(const char *key, size_t len, const char *name)
{
    return key_matches(key, len, false, name);
}

/* Past the array or object at pos by its brackets and string quotes alone, validating nothing
 * inside (for a span its own parser validates next); any other value is skipped with validation.
 * Fails only when the value does not end. */
static enum tpx_code span_skip(struct scan *s)
{
    size_t depth = 0;
    int c = peek(s);

    if (c != '[' && c != '{')
        return skip_value(s);
    while (s->pos < s->len) {
        char ch = s->b[s->pos];

        if (ch == '"') {
            size_t i = s->pos + 1;

            for (;;) { /* to the closing quote; a backslash takes the byte after it */
                i = next_special(s->b, i, s->len, false);
                if (i < s->len && s->b[i] == '\\') {
                    i += 2;
                    continue;
                }
                break;
            }
            if (i >= s->len) {
                s->pos = s->len;
                return fail(s, "unterminated string");
            }
            s->pos = i + 1;
            continue;
        }
        if (ch == '[' || ch == '{') {
            depth++;
        } else if ((ch == ']' || ch == '}') && --depth == 0) {
            s->pos++;
            return TPX_OK;
        }
        s->pos++;
    }
    return fail(s, "unterminated value");
}

/* Validate [off, end) of s's input as one value; errors give positions in the whole input. */
static enum tpx_code validate_span(const struct scan *s, size_t off, size_t end)
{
    struct scan v = {s->b, end, off, 1, s->err};

    if (skip_value(&v) != TPX_OK)
        return v.err->code;
    return at_end(&v);
}

enum tpx_code ext_nodescan_object_keys(const char *p, size_t len, const char *const *keys,
                                       size_t nkeys, unsigned deferred,
                                       struct ext_nodescan_span *spans, struct tpx_err *err)
{
    return ext_nodescan_object_keys_hook(p, len, keys, nkeys, deferred, 0, NULL, NULL, spans, err);
}

enum tpx_code ext_nodescan_object_keys_hook(const char *p, size_t len, const char *const *keys,
                                            size_t nkeys, unsigned deferred, unsigned hooked,
                                            ext_nodescan_hook_fn *hook, void *ctx,
                                            struct ext_nodescan_span *spans, struct tpx_err *err)
{
    struct scan s = {p, len, 0, 1, err};
    bool first = true, kesc;
    size_t kraw, klen;
    int r;

    if (nkeys > 16)
        return tpx_err_set(err, TPX_EINVAL, "ext_nodescan_object_keys: at most 16 keys");
    for (size_t i = 0; i < nkeys; i++)
        spans[i] = (struct ext_nodescan_span){0, 0, false, true};
    while ((r = obj_next(&s, &first, &kraw, &klen, &kesc)) == 1) {
        size_t start;
        size_t hit = nkeys;
        bool lazy;

        for (size_t i = 0; i < nkeys && hit == nkeys; i++) {
            if (key_matches(p + kraw, klen, kesc, keys[i]))
                hit = i;
        }
        lazy = hit < nkeys && (deferred >> hit & 1U);
        ws(&s);
        start = s.pos;
        if (hit < nkeys && hook && (hooked >> hit & 1U)) {
            size_t used = 0;

            /* the caller parses (and so validates) this value itself, in the same pass */
            if (hook(ctx, hit, p + start, len - start, &used, err) != TPX_OK)
                return err->code;
            s.pos = start + used;
        } else if ((lazy ? span_skip(&s) : skip_value(&s)) != TPX_OK) {
            return err->code;
        }
        if (hit == nkeys)
            continue;
        /* Go decodes every occurrence into the field, so the last one wins, whatever its
         * spelling; a deferred value it replaces is never parsed, so it is validated now */
        if (lazy && spans[hit].present &&
            validate_span(&s, spans[hit].off, spans[hit].off + spans[hit].len) != TPX_OK)
            return err->code;
        spans[hit].off = start;
        spans[hit].len = s.pos - start;
        spans[hit].present = true;
        spans[hit].null = (s.pos - start == 4 && memcmp(p + start, "null", 4) == 0);
    }
    if (r < 0)
        return err->code;
    return at_end(&s);
}

/* A decoded name holds a NUL or a control byte. Called only for strings with an escape: a raw
 * control byte is already refused by string_tok(), so plain names pay nothing. */
static bool has_control(const char *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)d[i] < 0x20 || d[i] == 0x7f)
            return true;
    }
    return false;
}

/* names: NodeNames (issue 12, item 6): each entry 1..EXT_SCAN_NAME_MAX bytes decoded, with no NUL
 * or control byte (TPX_EINVAL naming the entry); more than max entries is TPX_ETOOBIG. */
static enum tpx_code string_array(const char *p, size_t len, bool names, size_t max, char ***out,
                                  size_t *n, size_t *used, struct tpx_err *err)
{
    struct scan s = {p, len, 0, 1, err};
    struct span {
        size_t raw;
        size_t len; /* the top bit: it holds an escape */
    } *sp = NULL, *nsp;
    const size_t esc_bit = (size_t)1 << (sizeof(size_t) * 8 - 1);
    bool first = true, esc;
    size_t count = 0, nalloc = 0, chars = 0, raw, rawlen;
    char **v;
    char *d;
    int r;

    *out = NULL;
    *n = 0;
    /* pass 1: validate, size, and remember where each string is */
    while ((r = arr_next(&s, &first)) == 1) {
        if (peek(&s) != '"') {
            free(sp);
            return fail(&s, "expected a string in the array");
        }
        if (string_tok(&s, &raw, &rawlen, &esc) != TPX_OK) {
            free(sp);
            return err->code;
        }
        if (names && count == max) {
            free(sp);
            return tpx_err_set(err, TPX_ETOOBIG, "more than %zu candidate nodes", max);
        }
        /* escaped names are measured once decoded, below; a \u escape is 6 raw bytes */
        if (names && (rawlen == 0 || rawlen > (esc ? 6 : 1) * EXT_SCAN_NAME_MAX)) {
            free(sp);
            return tpx_err_set(err, TPX_EINVAL,
                               "entry %zu is not a node name: %s (a DNS subdomain of at most %d "
                               "characters)",
                               count, rawlen ? "too long" : "empty", EXT_SCAN_NAME_MAX);
        }
        if (count == nalloc) {
            nalloc = nalloc ? nalloc * 2 : 256;
            nsp = realloc(sp, nalloc * sizeof(*sp));
            if (!nsp) {
                free(sp);
                return tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu names", count);
            }
            sp = nsp;
        }
        sp[count].raw = raw;
        sp[count].len = rawlen | (esc ? esc_bit : 0);
        count++;
        chars += rawlen + 1;
    }
    if (used)
        *used = s.pos;
    if (r < 0 || (!used && at_end(&s) != TPX_OK)) {
        free(sp);
        return err->code;
    }
    v = malloc(count * sizeof(char *) + chars + 1);
    if (!v) {
        free(sp);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu names", count);
    }
    d = (char *)(v + count);
    /* pass 2: copy or decode, without tokenizing again */
    for (size_t i = 0; i < count; i++) {
        rawlen = sp[i].len & ~esc_bit;
        v[i] = d;
        if (sp[i].len & esc_bit) {
            size_t dl = decode(p + sp[i].raw, rawlen, d);

            if (names && (dl == 0 || dl > EXT_SCAN_NAME_MAX || has_control(d, dl))) {
                free(sp);
                free(v);
                return tpx_err_set(err, TPX_EINVAL, "entry %zu is not a node name: %s", i,
                                   dl == 0                  ? "empty"
                                   : dl > EXT_SCAN_NAME_MAX ? "too long"
                                                            : "it holds a NUL or control byte");
            }
            d += dl + 1;
        } else {
            memcpy(d, p + sp[i].raw, rawlen);
            d[rawlen] = '\0';
            d += rawlen + 1;
        }
    }
    free(sp);
    *out = v;
    *n = count;
    return TPX_OK;
}

enum tpx_code ext_nodescan_string_array(const char *p, size_t len, char ***out, size_t *n,
                                        struct tpx_err *err)
{
    return string_array(p, len, false, 0, out, n, NULL, err);
}

enum tpx_code ext_nodescan_node_names(const char *p, size_t len, size_t max, char ***out, size_t *n,
                                      struct tpx_err *err)
{
    return string_array(p, len, true, max, out, n, NULL, err);
}

enum tpx_code ext_nodescan_node_names_prefix(const char *p, size_t len, size_t max, char ***out,
                                             size_t *n, size_t *used, struct tpx_err *err)
{
    return string_array(p, len, true, max, out, n, used, err);
}

/* ---- NodeList ---- */

struct nl {
    struct scan s;
    struct ext_nodescan_nodes *out;
    size_t kv_alloc;
    size_t items_alloc;
    char *arena_pos;
};

static const char *take_string(struct nl *l, size_t raw, size_t rawlen, bool esc)
{
    char *d = l->arena_pos;

    if (esc) {
        l->arena_pos += decode(l->s.b + raw, rawlen, d) + 1;
    } else {
        memcpy(d, l->s.b + raw, rawlen);
        d[rawlen] = '\0';
        l->arena_pos += rawlen + 1;
    }
    return d;
}

static enum tpx_code add_kv(struct nl *l, const char *k, const char *v)
{
    struct ext_nodescan_nodes *o = l->out;

    if (o->nkv == l->kv_alloc) {
        size_t want = l->kv_alloc ? l->kv_alloc * 2 : 1024;
        struct topo_kv *p = realloc(o->kv, want * sizeof(*p));
        if (!p)
            return tpx_err_set(l->s.err, TPX_ENOMEM, "out of memory scanning nodes");
        o->kv = p;
        l->kv_alloc = want;
    }
    o->kv[o->nkv].key = k;
    o->kv[o->nkv].value = v;
    o->nkv++;
    return TPX_OK;
}

/* An object of string -> string into kv pairs; non-string values are skipped. */
static enum tpx_code string_map(struct nl *l, size_t *first_kv, size_t *count)
{
    struct scan *s = &l->s;
    bool first = true, kesc, vesc;
    size_t kraw, klen, vraw, vlen;
    int r;

    *first_kv = l->out->nkv;
    *count = 0;
    if (peek(s) == 'n')
        return literal(s, "null");
    while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
        if (peek(s) != '"') {
            if (skip_value(s) != TPX_OK)
                return s->err->code;
            continue;
        }
        if (string_tok(s, &vraw, &vlen, &vesc) != TPX_OK)
            return s->err->code;
        {
            const char *k = take_string(l, kraw, klen, kesc);
            const char *v = take_string(l, vraw, vlen, vesc);
            if (add_kv(l, k, v) != TPX_OK)
                return s->err->code;
        }
        (*count)++;
    }
    return r == 0 ? TPX_OK : s->err->code;
}

static enum tpx_code metadata(struct nl *l, struct ext_nodescan_node *n)
{
    struct scan *s = &l->s;
    bool first = true, kesc, vesc;
    size_t kraw, klen, vraw, vlen;
    int r;

    if (peek(s) != '{')
        return skip_value(s);
    while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
        if (key_matches(s->b + kraw, klen, kesc, "name") && peek(s) == '"') {
            if (string_tok(s, &vraw, &vlen, &vesc) != TPX_OK)
                return s->err->code;
            n->name = take_string(l, vraw, vlen, vesc);
            /* a NUL would cut the name short: refuse it, never truncate (issue 12, item 6) */
            if (vesc && has_control(n->name, (size_t)(l->arena_pos - n->name) - 1))
                return fail(s, "a NUL or control byte in a node name");
        } else if (key_matches(s->b + kraw, klen, kesc, "labels") &&
                   (peek(s) == '{' || peek(s) == 'n')) {
            if (string_map(l, &n->labels, &n->nlabels) != TPX_OK)
                return s->err->code;
        } else if (skip_value(s) != TPX_OK) {
            return s->err->code;
        }
    }
    return r == 0 ? TPX_OK : s->err->code;
}

static enum tpx_code spec(struct nl *l, struct ext_nodescan_node *n)
{
    struct scan *s = &l->s;
    bool first = true, kesc;
    size_t kraw, klen;
    int r;

    if (peek(s) != '{')
        return skip_value(s);
    while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
        /* the last one wins; a null leaves it as it was (Go) */
        if (key_matches(s->b + kraw, klen, kesc, "unschedulable") &&
            (peek(s) == 't' || peek(s) == 'f'))
            n->unschedulable = peek(s) == 't';
        if (skip_value(s) != TPX_OK)
            return s->err->code;
    }
    return r == 0 ? TPX_OK : s->err->code;
}

/* status.conditions: find type "Ready" and its status. */
static enum tpx_code conditions(struct nl *l, struct ext_nodescan_node *n)
{
    struct scan *s = &l->s;
    bool afirst = true;
    int r;

    if (peek(s) != '[')
        return skip_value(s);
    while ((r = arr_next(s, &afirst)) == 1) {
        bool first = true, kesc, vesc, is_ready = false, is_true = false, have_status = false;
        size_t kraw, klen, vraw, vlen;
        int q;

        if (peek(s) != '{') {
            if (skip_value(s) != TPX_OK)
                return s->err->code;
            continue;
        }
        while ((q = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
            bool t = key_matches(s->b + kraw, klen, kesc, "type");
            bool st = key_matches(s->b + kraw, klen, kesc, "status");
            if ((t || st) && peek(s) == '"') {
                if (string_tok(s, &vraw, &vlen, &vesc) != TPX_OK)
                    return s->err->code;
                if (t)
                    is_ready = key_is(s->b + vraw, vlen, "Ready");
                if (st) {
                    have_status = true;
                    is_true = key_is(s->b + vraw, vlen, "True");
                }
            } else if (skip_value(s) != TPX_OK) {
                return s->err->code;
            }
        }
        if (q < 0)
            return s->err->code;
        if (is_ready && have_status)
            n->ready = is_true;
    }
    return r == 0 ? TPX_OK : s->err->code;
}

static enum tpx_code status(struct nl *l, struct ext_nodescan_node *n)
{
    struct scan *s = &l->s;
    bool first = true, kesc;
    size_t kraw, klen;
    int r;

    if (peek(s) != '{')
        return skip_value(s);
    while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
        enum tpx_code rc;

        if (key_matches(s->b + kraw, klen, kesc, "allocatable") &&
            (peek(s) == '{' || peek(s) == 'n'))
            rc = string_map(l, &n->alloc, &n->nalloc);
        else if (key_matches(s->b + kraw, klen, kesc, "conditions"))
            rc = conditions(l, n);
        else
            rc = skip_value(s);
        if (rc != TPX_OK)
            return rc;
    }
    return r == 0 ? TPX_OK : s->err->code;
}

static enum tpx_code node_item(struct nl *l)
{
    struct scan *s = &l->s;
    struct ext_nodescan_nodes *o = l->out;
    struct ext_nodescan_node *n;
    bool first = true, kesc;
    size_t kraw, klen;
    int r;

    if (peek(s) != '{')
        return fail(s, "a NodeList item is not an object");
    if (o->n == l->items_alloc) {
        size_t want = l->items_alloc ? l->items_alloc * 2 : 256;
        struct ext_nodescan_node *p = realloc(o->items, want * sizeof(*p));
        if (!p)
            return tpx_err_set(s->err, TPX_ENOMEM, "out of memory scanning nodes");
        o->items = p;
        l->items_alloc = want;
    }
    n = &o->items[o->n];
    memset(n, 0, sizeof(*n));
    n->ready = true;
    n->off = s->pos;
    if (++s->depth > EXT_SCAN_MAX_DEPTH)
        return tpx_err_set(s->err, TPX_ETOOBIG, "JSON nested too deep");
    while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
        enum tpx_code rc;

        if (key_matches(s->b + kraw, klen, kesc, "metadata"))
            rc = metadata(l, n);
        else if (key_matches(s->b + kraw, klen, kesc, "spec"))
            rc = spec(l, n);
        else if (key_matches(s->b + kraw, klen, kesc, "status"))
            rc = status(l, n);
        else
            rc = skip_value(s);
        if (rc != TPX_OK)
            return rc;
    }
    if (r < 0)
        return s->err->code;
    s->depth--;
    n->len = s->pos - n->off;
    o->n++;
    return TPX_OK;
}

static enum tpx_code items_array(struct nl *l)
{
    bool first = true;
    int r;

    if (peek(&l->s) == 'n')
        return literal(&l->s, "null");
    while ((r = arr_next(&l->s, &first)) == 1) {
        if (node_item(l) != TPX_OK)
            return l->s.err->code;
    }
    return r == 0 ? TPX_OK : l->s.err->code;
}

/* One NodeList value at the start of [p, p + len) (after whitespace); *used: the bytes up to its
 * end. With whole, nothing but whitespace may follow. */
static enum tpx_code nodelist(const char *p, size_t len, bool whole, struct ext_nodescan_nodes *out,
                              size_t *used, struct tpx_err *err)
{
    struct nl l;
    int c;

    memset(out, 0, sizeof(*out));
    memset(&l, 0, sizeof(l));
    l.s = (struct scan){p, len, 0, 1, err};
    l.out = out;
    /* every decoded string is no longer than its quoted form, so len + 1 bytes hold them all
     * (pages never written are never resident) */
    out->arena = malloc(len + 1);
    if (!out->arena)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory scanning %zu bytes of nodes", len);
    l.arena_pos = out->arena;
    c = peek(&l.s);
    if (c == 'n') {
        if (literal(&l.s, "null") != TPX_OK)
            goto fail;
    } else if (c == '[') {
        if (items_array(&l) != TPX_OK)
            goto fail;
    } else {
        bool first = true, kesc;
        size_t kraw, klen;
        int r;

        while ((r = obj_next(&l.s, &first, &kraw, &klen, &kesc)) == 1) {
            enum tpx_code rc;
            if (key_matches(p + kraw, klen, kesc, "items")) {
                out->n = 0; /* a later "items" replaces an earlier one, as in Go */
                rc = items_array(&l);
            } else {
                rc = skip_value(&l.s);
            }
            if (rc != TPX_OK)
                goto fail;
        }
        if (r < 0)
            goto fail;
    }
    if (used)
        *used = l.s.pos;
    if (whole && at_end(&l.s) != TPX_OK)
        goto fail;
    return TPX_OK;
fail:
    ext_nodescan_nodes_release(out);
    return err->code;
}

enum tpx_code ext_nodescan_nodelist(const char *p, size_t len, struct ext_nodescan_nodes *out,
                                    struct tpx_err *err)
{
    return nodelist(p, len, true, out, NULL, err);
}

enum tpx_code ext_nodescan_nodelist_prefix(const char *p, size_t len,
                                           struct ext_nodescan_nodes *out, size_t *used,
                                           struct tpx_err *err)
{
    return nodelist(p, len, false, out, used, err);
}

enum tpx_code ext_nodescan_span_len(const char *p, size_t len, size_t *used, struct tpx_err *err)
{
    struct scan s = {p, len, 0, 1, err};

    if (span_skip(&s) != TPX_OK)
        return err->code;
    *used = s.pos;
    return TPX_OK;
}

enum tpx_code ext_nodescan_value_len(const char *p, size_t len, size_t *used, struct tpx_err *err)
{
    struct scan s = {p, len, 0, 1, err};

    if (skip_value(&s) != TPX_OK)
        return err->code;
    *used = s.pos;
    return TPX_OK;
}

void ext_nodescan_nodes_release(struct ext_nodescan_nodes *s)
{
    if (!s)
        return;
    free(s->items);
    free(s->kv);
    free(s->arena);
    memset(s, 0, sizeof(*s));
}

/* ---- the victims of a preemption request (issue 21, item 1) ---- */

struct vs {
    struct scan s;
    struct ext_nodescan_victims *out;
    bool meta;
    size_t nodes_alloc, empty_alloc, uids_alloc;
    size_t max_nodes, max_victims, seen;
};

static bool vs_grow(void **arr, size_t *alloc, size_t n, size_t size)
{
    size_t want;
    void *q;

    if (n < *alloc)
        return true;
    want = *alloc ? *alloc * 2 : 64;
    q = realloc(*arr, want * size);
    if (!q)
        return false;
    *arr = q;
    *alloc = want;
    return true;
}

/* One level into an array or object, within EXT_SCAN_MAX_DEPTH. */
static enum tpx_code deeper(struct scan *s)
{
    if (++s->depth > EXT_SCAN_MAX_DEPTH)
        return tpx_err_set(s->err, TPX_ETOOBIG, "JSON nested deeper than %d at byte %zu",
                           EXT_SCAN_MAX_DEPTH, s->pos);
    return TPX_OK;
}

static struct ext_nodescan_raw raw_of(size_t raw, size_t rawlen, bool esc)
{
    return (struct ext_nodescan_raw){(uint32_t)raw,
                                     (uint32_t)rawlen | (esc ? EXT_SCAN_RAW_ESC : 0)};
}

size_t ext_nodescan_raw_decode(const char *p, struct ext_nodescan_raw r, char *dst)
{
    size_t n = r.len & ~EXT_SCAN_RAW_ESC;

    if (r.len & EXT_SCAN_RAW_ESC)
        return decode(p + r.off, n, dst);
    memcpy(dst, p + r.off, n);
    dst[n] = '\0';
    return n;
}

/* Whether a map key can be a node name: 1..EXT_SCAN_NAME_MAX bytes decoded, no control byte. A
 * \u escape decodes to at least one byte per 6, so a longer raw key is too long. */
static bool vs_name_ok(const char *p, size_t raw, size_t rawlen, bool esc)
{
    char buf[6 * EXT_SCAN_NAME_MAX + 1];
    size_t n;

    if (!esc)
        return rawlen >= 1 && rawlen <= EXT_SCAN_NAME_MAX;
    if (rawlen > 6 * EXT_SCAN_NAME_MAX)
        return false;
    n = decode(p + raw, rawlen, buf);
    return n >= 1 && n <= EXT_SCAN_NAME_MAX && !has_control(buf, n);
}

/* At an object: the last non-null string at path[0].path[1]... (npath keys, each matching as
 * key_matches() says). Go: a null leaves a string field, or a struct field, as it was, and a
 * struct field given twice is merged, so the last string seen at the path wins. */
static enum tpx_code vs_string_path(struct scan *s, const char *const *path, size_t npath,
                                    bool *have, size_t *raw, size_t *rawlen, bool *esc)
{
    bool first = true, kesc;
    size_t kraw, klen;
    int r;

    if (deeper(s) != TPX_OK)
        return s->err->code;
    while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
        enum tpx_code rc;
        int c = peek(s);

        if (!key_matches(s->b + kraw, klen, kesc, path[0]))
            rc = skip_value(s);
        else if (c == 'n')
            rc = literal(s, "null");
        else if (npath > 1)
            rc = c == '{' ? vs_string_path(s, path + 1, npath - 1, have, raw, rawlen, esc)
                          : tpx_err_set(s->err, TPX_EPARSE, "%s at byte %zu is not an object",
                                        path[0], s->pos);
        else if (c != '"')
            rc = tpx_err_set(s->err, TPX_EPARSE, "%s at byte %zu is not a string", path[0], s->pos);
        else if ((rc = string_tok(s, raw, rawlen, esc)) == TPX_OK)
            *have = true;
        if (rc != TPX_OK)
            return s->err->code;
    }
    s->depth--;
    return r == 0 ? TPX_OK : s->err->code;
}

/* One victim: a MetaPod ({"UID":...}) or a Pod ({"metadata":{"uid":...}}). */
static enum tpx_code vs_pod(struct vs *v)
{
    static const char *const meta[] = {"UID"}, *const full[] = {"metadata", "uid"};
    struct scan *s = &v->s;
    bool have = false, esc = false;
    size_t raw = 0, rawlen = 0;

    if (peek(s) == 'n') /* a nil pointer in the list: no UID */
        return literal(s, "null");
    if (peek(s) != '{')
        return fail(s, "a victim is not an object");
    if (vs_string_path(s, v->meta ? meta : full, v->meta ? 1 : 2, &have, &raw, &rawlen, &esc) !=
        TPX_OK)
        return s->err->code;
    if (!have || rawlen == 0) /* no UID: nothing to name in the answer */
        return TPX_OK;
    if (v->out->nuids >= v->max_victims)
        return tpx_err_set(s->err, TPX_ETOOBIG, "more than %zu victims", v->max_victims);
    if (!vs_grow((void **)&v->out->uids, &v->uids_alloc, v->out->nuids, sizeof(*v->out->uids)))
        return tpx_err_set(s->err, TPX_ENOMEM, "out of memory reading the victims");
    v->out->uids[v->out->nuids++] = raw_of(raw, rawlen, esc);
    return TPX_OK;
}

/* NumPDBViolations: an int64 as Go reads one (no fraction, no exponent, no overflow). */
static enum tpx_code vs_int(struct scan *s, long long *out)
{
    size_t start = s->pos, i;
    bool neg;
    unsigned long long v = 0;

    if (number_tok(s) != TPX_OK)
        return s->err->code;
    i = start;
    neg = s->b[i] == '-';
    if (neg)
        i++;
    for (; i < s->pos; i++) {
        unsigned d = (unsigned)(s->b[i] - '0');

        if (d > 9 || v > (9223372036854775808ULL - d) / 10)
            return tpx_err_set(s->err, TPX_EPARSE,
                               "NumPDBViolations at byte %zu is not a 64-bit integer", start);
        v = v * 10 + d;
    }
    if (!neg && v > 9223372036854775807ULL)
        return tpx_err_set(s->err, TPX_EPARSE,
                           "NumPDBViolations at byte %zu is not a 64-bit integer", start);
    *out = neg ? (long long)(0 - v) : (long long)v;
    return TPX_OK;
}

/* One node's value: null, or {"Pods":[...],"NumPDBViolations":N}. */
static enum tpx_code vs_node(struct vs *v, struct ext_nodescan_raw name, bool keep)
{
    struct scan *s = &v->s;
    struct ext_nodescan_victims *o = v->out;
    size_t start = o->nuids;
    long long pdb = 0;

    if (peek(s) == 'n') {
        if (literal(s, "null") != TPX_OK)
            return s->err->code;
    } else {
        bool first = true, kesc;
        size_t kraw, klen;
        int r;

        if (peek(s) != '{')
            return fail(s, "a node's victims are not an object");
        if (deeper(s) != TPX_OK)
            return s->err->code;
        while ((r = obj_next(s, &first, &kraw, &klen, &kesc)) == 1) {
            enum tpx_code rc = TPX_OK;

            if (key_matches(s->b + kraw, klen, kesc, "Pods")) {
                bool afirst = true;
                int ar;

                o->nuids = start; /* the last Pods wins */
                if (peek(s) == 'n') {
                    rc = literal(s, "null");
                } else if (deeper(s) != TPX_OK) {
                    rc = s->err->code;
                } else {
                    while ((ar = arr_next(s, &afirst)) == 1) {
                        if (vs_pod(v) != TPX_OK)
                            return s->err->code;
                    }
                    if (ar < 0)
                        return s->err->code;
                    s->depth--;
                }
            } else if (key_matches(s->b + kraw, klen, kesc, "NumPDBViolations")) {
                rc = peek(s) == 'n' ? literal(s, "null") : vs_int(s, &pdb);
            } else {
                rc = skip_value(s);
            }
            if (rc != TPX_OK)
                return s->err->code;
        }
        if (r < 0)
            return s->err->code;
        s->depth--;
    }
    if (!keep) { /* not a node name: its victims are not answered */
        o->nuids = start;
        return TPX_OK;
    }
    if (o->nuids == start) {
        if (!vs_grow((void **)&o->empty, &v->empty_alloc, o->nempty, sizeof(*o->empty)))
            return tpx_err_set(s->err, TPX_ENOMEM, "out of memory reading the victims");
        o->empty[o->nempty++] = name;
        return TPX_OK;
    }
    if (!vs_grow((void **)&o->nodes, &v->nodes_alloc, o->n, sizeof(*o->nodes)))
        return tpx_err_set(s->err, TPX_ENOMEM, "out of memory reading the victims");
    o->nodes[o->n++] =
        (struct ext_nodescan_vnode){name, (uint32_t)start, (uint32_t)(o->nuids - start), pdb};
    return TPX_OK;
}

enum tpx_code ext_nodescan_victims(const char *p, size_t len, bool meta, size_t max_nodes,
                                   size_t max_victims, struct ext_nodescan_victims *out,
                                   struct tpx_err *err)
{
    struct vs v;
    bool first = true, kesc;
    size_t kraw, klen;
    int r;

    memset(out, 0, sizeof(*out));
    memset(&v, 0, sizeof(v));
    v.s = (struct scan){p, len, 0, 1, err};
    v.out = out;
    v.meta = meta;
    v.max_nodes = max_nodes;
    v.max_victims = max_victims;
    if (len >= EXT_SCAN_RAW_ESC) {
        tpx_err_set(err, TPX_ETOOBIG, "victims map of %zu bytes is over 2 GiB", len);
        goto fail;
    }
    while ((r = obj_next(&v.s, &first, &kraw, &klen, &kesc)) == 1) {
        if (++v.seen > max_nodes) {
            tpx_err_set(err, TPX_ETOOBIG, "more than %zu nodes", max_nodes);
            goto fail;
        }
        if (vs_node(&v, raw_of(kraw, klen, kesc), vs_name_ok(p, kraw, klen, kesc)) != TPX_OK)
            goto fail;
    }
    if (r < 0 || at_end(&v.s) != TPX_OK)
        goto fail;
    return TPX_OK;
fail:
    ext_nodescan_victims_release(out);
    return err->code;
}

void ext_nodescan_victims_release(struct ext_nodescan_victims *v)
{
    free(v->nodes);
    free(v->empty);
    free(v->uids);
    memset(v, 0, sizeof(*v));
}
