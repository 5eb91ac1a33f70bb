/* SPDX-License-Identifier: Apache-2.0 */
/* extender/codec_preempt.c - ExtenderPreemptionArgs in, ExtenderPreemptionResult out (issue 21,
 * item 1): the victims map is read by ext_nodescan_victims() as byte ranges of the body, never as
 * a jansson tree, and the answer is written from those ranges. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonstr.h"
#include "extender/codec.h"
#include "extender/codec_int.h"

/* ---- preempt ---- */

/* A node name of the victims map (at most EXT_SCAN_NAME_MAX bytes, checked by the scan), for
 * comparing: the raw bytes when they hold no escape, else decoded into buf. */
static const char *vname(const char *map, struct ext_nodescan_raw r, char *buf, size_t *n)
{
    if (!(r.len & EXT_SCAN_RAW_ESC)) {
        *n = r.len;
        return map + r.off;
    }
    *n = ext_nodescan_raw_decode(map, r, buf);
    return buf;
}

static int vname_cmp(const char *map, struct ext_nodescan_raw a, struct ext_nodescan_raw b)
{
    char ba[6 * EXT_SCAN_NAME_MAX + 1], bb[6 * EXT_SCAN_NAME_MAX + 1];
    size_t na, nb;
    const char *pa = vname(map, a, ba, &na), *pb = vname(map, b, bb, &nb);
    int c = memcmp(pa, pb, na < nb ? na : nb);

    return c ? c : (na > nb) - (na < nb);
}

/* qsort_r: by name, then by position in the map */
static int vnode_cmp(const void *x, const void *y, void *ctx)
{
    const struct ext_codec_preempt_args *p = ctx;
    const struct ext_nodescan_vnode *a = &p->sv.nodes[*(const uint32_t *)x];
    const struct ext_nodescan_vnode *b = &p->sv.nodes[*(const uint32_t *)y];
    int c = vname_cmp(p->map, a->name, b->name);

    return c ? c : (a->name.off > b->name.off) - (a->name.off < b->name.off);
}

/* Go decodes a map entry by entry, so a node listed twice keeps its last value, even when that
 * value is null or has no victims (p->sv.empty). Leaves p->idx the surviving nodes in map order
 * and p->n their count. */
static enum tpx_code preempt_last_wins(struct ext_codec_preempt_args *p, struct tpx_err *err)
{
    size_t n = p->sv.n, k = 0;
    uint32_t *sorted;
    bool *drop;

    p->idx = malloc((n ? n : 1) * sizeof(*p->idx));
    sorted = malloc((n ? n : 1) * sizeof(*sorted));
    drop = calloc(n ? n : 1, sizeof(*drop));
    if (!p->idx || !sorted || !drop) {
        free(sorted);
        free(drop);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory reading the victims");
    }
    for (size_t i = 0; i < n; i++)
        sorted[i] = (uint32_t)i;
    qsort_r(sorted, n, sizeof(*sorted), vnode_cmp, p);
    for (size_t i = 0; i + 1 < n; i++) {
        if (vname_cmp(p->map, p->sv.nodes[sorted[i]].name, p->sv.nodes[sorted[i + 1]].name) == 0)
            drop[sorted[i]] = true;
    }
    for (size_t e = 0; e < p->sv.nempty; e++) { /* an empty entry after a node's last */
        size_t lo = 0, hi = n;
        struct ext_nodescan_raw er = p->sv.empty[e];

        while (lo < hi) { /* the last of the names equal to er's, if any */
            size_t mid = lo + (hi - lo) / 2;
            if (vname_cmp(p->map, p->sv.nodes[sorted[mid]].name, er) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && vname_cmp(p->map, p->sv.nodes[sorted[lo - 1]].name, er) == 0 &&
            p->sv.nodes[sorted[lo - 1]].name.off < er.off)
            drop[sorted[lo - 1]] = true;
    }
    for (size_t i = 0; i < n; i++) {
        if (!drop[i])
            p->idx[k++] = (uint32_t)i;
    }
    p->n = k;
    free(sorted);
    free(drop);
    return TPX_OK;
}

/* p->names: the surviving nodes' names, decoded, in one block. */
static enum tpx_code preempt_names(struct ext_codec_preempt_args *p, struct tpx_err *err)
{
    size_t chars = 0;
    char *d;

    for (size_t i = 0; i < p->n; i++)
        chars += (p->sv.nodes[p->idx[i]].name.len & ~EXT_SCAN_RAW_ESC) + 1;
    p->names = malloc((p->n ? p->n : 1) * sizeof(char *) + chars);
    if (!p->names)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory reading the victims");
    d = (char *)(p->names + p->n);
    for (size_t i = 0; i < p->n; i++) {
        p->names[i] = d;
        d += ext_nodescan_raw_decode(p->map, p->sv.nodes[p->idx[i]].name, d) + 1;
    }
    return TPX_OK;
}

enum tpx_code ext_codec_decode_preempt(const char *body, size_t len, const struct ext_codec_opts *o,
                                       struct ext_codec_preempt_args *p, struct tpx_err *err)
{
    static const char *const keys[] = {"Pod", "NodeNameToVictims", "NodeNameToMetaVictims"};
    struct ext_nodescan_span sp[3];
    const struct ext_nodescan_span *map;

    memset(p, 0, sizeof(*p));
    if (ext_nodescan_object_keys(body, len, keys, 3, 0, sp, err) != TPX_OK) {
        tpx_err_prefix(err, "ExtenderPreemptionArgs");
        return err->code;
    }
    if (ext_codec_decode_pod_span(body, &sp[0], o, &p->pod, err) != TPX_OK)
        return err->code;
    /* kube-scheduler sends one of the two (MetaVictims when nodeCacheCapable) */
    map = !sp[2].null ? &sp[2] : &sp[1];
    if (!map->null) {
        p->map = body + map->off;
        size_t max_nodes = ext_codec_max_candidates(o) < EXT_CODEC_MAX_PREEMPT_NODES
                               ? ext_codec_max_candidates(o)
                               : EXT_CODEC_MAX_PREEMPT_NODES;

        if (ext_nodescan_victims(p->map, map->len, map == &sp[2], max_nodes, EXT_CODEC_MAX_VICTIMS,
                                 &p->sv, err) != TPX_OK) {
            tpx_err_prefix(err, map == &sp[2] ? "NodeNameToMetaVictims" : "NodeNameToVictims");
            goto fail;
        }
    }
    if (preempt_last_wins(p, err) != TPX_OK || preempt_names(p, err) != TPX_OK)
        goto fail;
    return TPX_OK;
fail:
    ext_codec_preempt_args_release(p);
    return err->code;
}

void ext_codec_preempt_args_release(struct ext_codec_preempt_args *p)
{
    ext_codec_pod_release(&p->pod);
    ext_nodescan_victims_release(&p->sv);
    free(p->idx);
    free(p->names);
    memset(p, 0, sizeof(*p));
}

/* A victim's UID from its raw bytes, escaped again by tpx_json_escape (invalid UTF-8 becomes
 * U+FFFD, as everywhere else). */
static enum tpx_code put_uid(struct tpx_buf *out, const char *map, struct ext_nodescan_raw r,
                             struct tpx_err *err)
{
    size_t n = r.len & ~EXT_SCAN_RAW_ESC;
    char small[256], *buf = small;
    enum tpx_code rc;

    if (tpx_buf_adds(out, "{\"UID\":\"", err) != TPX_OK)
        return err->code;
    if (!(r.len & EXT_SCAN_RAW_ESC)) {
        rc = tpx_json_escape(out, map + r.off, n, err);
    } else {
        if (n + 1 > sizeof(small) && !(buf = malloc(n + 1)))
            return tpx_err_set(err, TPX_ENOMEM, "out of memory");
        rc = tpx_json_escape(out, buf, ext_nodescan_raw_decode(map, r, buf), err);
        if (buf != small)
            free(buf);
    }
    if (rc != TPX_OK)
        return rc;
    return tpx_buf_adds(out, "\"}", err);
}

enum tpx_code ext_codec_preempt_result(const struct ext_codec_preempt_args *p, const bool *keep,
                                       struct tpx_buf *out, struct tpx_err *err)
{
    bool first = true;

    if (tpx_buf_adds(out, "{\"NodeNameToMetaVictims\":{", err) != TPX_OK)
        return err->code;
    for (size_t i = 0; i < p->n; i++) {
        const struct ext_nodescan_vnode *v = &p->sv.nodes[p->idx[i]];

        if (keep && !keep[i])
            continue;
        if ((!first && tpx_buf_add(out, ",", 1, err) != TPX_OK) ||
            tpx_json_str(out, p->names[i], err) != TPX_OK ||
            tpx_buf_adds(out, ":{\"Pods\":[", err) != TPX_OK)
            return err->code;
        first = false;
        for (uint32_t k = 0; k < v->n; k++) {
            if ((k && tpx_buf_add(out, ",", 1, err) != TPX_OK) ||
                put_uid(out, p->map, p->sv.uids[v->first + k], err) != TPX_OK)
                return err->code;
        }
        if (tpx_buf_addf(out, err, "],\"NumPDBViolations\":%lld}", v->pdb) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "}}", err);
}
