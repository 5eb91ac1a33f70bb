/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_request.c - libFuzzer target for the extender's request decoders: ExtenderArgs
 * (tokenizer + Pod through jansson + node infos), then encode an answer from what was decoded;
 * ExtenderBindingArgs and ExtenderPreemptionArgs. Seeds: the .json files in
 * tests/fixtures/extender.
 *   build/fuzz/fuzz/fuzz_request -max_len=262144 tests/fixtures/extender */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "extender/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_codec_args a;
    struct ext_codec_bind_args b;
    struct ext_codec_preempt_args p;

    if (ext_codec_decode_args(body, size, NULL, &a, &err) == TPX_OK) {
        struct topo_node_info *infos = NULL;
        size_t n = 0;
        struct tpx_buf out;
        enum pol_verdict *v = calloc(a.nnames + 1, sizeof(*v));

        tpx_err_clear(&err);
        if (ext_codec_node_infos(&a, NULL, &infos, &n, &err) == TPX_OK)
            free(infos);
        for (size_t i = 0; v && i < a.nnames; i++)
            v[i] = (enum pol_verdict)(i % 3);
        tpx_buf_init(&out, 1 << 26);
        tpx_err_clear(&err);
        ext_codec_filter_result(&a, v, NULL, &out, &err);
        tpx_buf_release(&out);
        free(v);
        ext_codec_args_release(&a);
    }
    tpx_err_clear(&err);
    if (ext_codec_decode_bind(body, size, &b, &err) == TPX_OK)
        ext_codec_bind_args_release(&b);
    tpx_err_clear(&err);
    if (ext_codec_decode_preempt(body, size, NULL, &p, &err) == TPX_OK)
        ext_codec_preempt_args_release(&p);
    return 0;
}
