/* SPDX-License-Identifier: Apache-2.0 */
/* extender/codec_int.h - what codec.c shares with codec_filter.c and codec_preempt.c; private to
 * the codec. */
#ifndef TPX_EXTENDER_CODEC_INT_H
#define TPX_EXTENDER_CODEC_INT_H

#include "extender/codec.h"

/* The Pod at sp's span of body (TPX_EPARSE when absent or null), read with o. */
enum tpx_code ext_codec_decode_pod_span(const char *body, const struct ext_nodescan_span *sp,
                                        const struct ext_codec_opts *o, struct ext_codec_pod *out,
                                        struct tpx_err *err);

/* o->max_candidates, or the default (100 000). */
size_t ext_codec_max_candidates(const struct ext_codec_opts *o);

#endif
