/* SPDX-License-Identifier: Apache-2.0 */
/* tests/oracle/decode.c - topox's side of the Go oracle (issue 21, item 5): decodes one request
 * body with the extender's own decoders (ext_codec_decode_args, _bind, _preempt) and prints the
 * fields topox reads in the canonical text form tests/oracle/main.go prints for encoding/json;
 * tests/oracle/run.sh compares the two.
 *   oracle_c filter|bind|preempt FILE */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender/codec.h"

static void print_pod(const struct ext_codec_pod *p)
{
    printf("pod uid=%s name=%s namespace=%s\n", p->uid ? p->uid : "", p->name ? p->name : "",
           p->ns ? p->ns : "");
    /* the two sizes as the annotations gave them (no containers in the corpus: no engine flags) */
    if (p->wl.tp_source && strcmp(p->wl.tp_source, "annotation") == 0)
        printf("pod tp=%u", p->wl.tp);
    else
        printf("pod tp=-");
    if (p->wl.pp_explicit)
        printf(" pp=%u\n", p->wl.pp);
    else
        printf(" pp=-\n");
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The victims topox keeps, one line a node sorted by name, read back from its own answer. */
static int print_victims(const struct ext_codec_preempt_args *p)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct tpx_buf out;
    json_t *root, *m;
    const char *node;
    json_t *v;

    tpx_buf_init(&out, 1 << 26);
    if (ext_codec_preempt_result(p, NULL, &out, &err) != TPX_OK) {
        fprintf(stderr, "oracle_c: %s\n", err.msg);
        tpx_buf_release(&out);
        return 1;
    }
    root = json_loadb(out.data, out.len, 0, NULL);
    tpx_buf_release(&out);
    m = json_object_get(root, "NodeNameToMetaVictims");
    if (!json_is_object(m)) {
        fprintf(stderr, "oracle_c: the answer has no NodeNameToMetaVictims\n");
        json_decref(root);
        return 1;
    }
    /* one line a node, sorted as main.go sorts them (Go's map has no order) */
    size_t n = 0, cap = json_object_size(m);
    char **lines = calloc(cap ? cap : 1, sizeof(*lines));

    json_object_foreach(m, node, v)
    {
        json_t *pods = json_object_get(v, "Pods"), *pod;
        size_t i;
        char *l = NULL;
        size_t ll = 0;
        FILE *s = open_memstream(&l, &ll);

        if (!s || !lines)
            abort();
        fprintf(s, "victims node=%s uids=", node);
        json_array_foreach(pods, i, pod)
            fprintf(s, "%s%s", i ? "," : "", json_string_value(json_object_get(pod, "UID")));
        fprintf(s, " pdb=%lld",
                (long long)json_integer_value(json_object_get(v, "NumPDBViolations")));
        fclose(s);
        lines[n++] = l;
    }
    qsort(lines, n, sizeof(*lines), line_cmp);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    json_decref(root);
    return 0;
}

int main(int argc, char **argv)
{
    struct tpx_err err = TPX_ERR_INIT;
    char *body;
    long len;
    FILE *f;
    int rc = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: oracle_c filter|bind|preempt FILE\n");
        return 2;
    }
    f = fopen(argv[2], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "oracle_c: cannot read %s\n", argv[2]);
        return 2;
    }
    body = malloc((size_t)len + 1);
    if (!body || fread(body, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "oracle_c: cannot read %s\n", argv[2]);
        return 2;
    }
    body[len] = '\0';
    fclose(f);
    if (strcmp(argv[1], "filter") == 0) {
        struct ext_codec_args a;

        if (ext_codec_decode_args(body, (size_t)len, NULL, &a, &err) != TPX_OK) {
            printf("error\n");
        } else {
            print_pod(&a.pod);
            for (size_t i = 0; i < a.nnames; i++)
                printf("node %s\n", a.names[i]);
            ext_codec_args_release(&a);
        }
    } else if (strcmp(argv[1], "bind") == 0) {
        struct ext_codec_bind_args b;

        if (ext_codec_decode_bind(body, (size_t)len, &b, &err) != TPX_OK) {
            printf("error\n");
        } else {
            printf("bind name=%s namespace=%s uid=%s node=%s\n", b.pod_name ? b.pod_name : "",
                   b.pod_ns ? b.pod_ns : "", b.pod_uid ? b.pod_uid : "", b.node ? b.node : "");
            ext_codec_bind_args_release(&b);
        }
    } else if (strcmp(argv[1], "preempt") == 0) {
        struct ext_codec_preempt_args p;

        if (ext_codec_decode_preempt(body, (size_t)len, NULL, &p, &err) != TPX_OK) {
            printf("error\n");
        } else {
            print_pod(&p.pod);
            rc = print_victims(&p);
            ext_codec_preempt_args_release(&p);
        }
    } else {
        fprintf(stderr, "oracle_c: the verb is filter, bind or preempt\n");
        rc = 2;
    }
    free(body);
    return rc;
}
