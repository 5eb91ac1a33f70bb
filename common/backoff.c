/* SPDX-License-Identifier: Apache-2.0 */
/* common/backoff.c - doubling without overflow; xorshift64* for the jitter (not for secrets). */
#include "common/backoff.h"

#include <stdint.h>
#include <time.h>

#include "common/hash.h"

void tpx_backoff_init(struct tpx_backoff *b, unsigned long base_ms, unsigned long max_ms,
                      bool jitter)
{
    struct timespec ts;
    uint64_t seed[3];

    b->base_ms = base_ms;
    b->max_ms = max_ms;
    b->jitter = jitter;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed[0] = (uint64_t)(uintptr_t)b;
    seed[1] = (uint64_t)ts.tv_sec;
    seed[2] = (uint64_t)ts.tv_nsec;
    b->rng = tpx_hash(seed, sizeof(seed)) | 1; /* xorshift needs a state other than 0 */
}

static uint64_t next_rand(struct tpx_backoff *b)
{
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * 0x2545f4914f6cdd1dULL;
}

unsigned long tpx_backoff_ms(struct tpx_backoff *b, unsigned attempt)
{
    unsigned long ms = b->base_ms;

    for (unsigned i = 0; i < attempt && ms < b->max_ms; i++)
        ms = ms > b->max_ms / 2 ? b->max_ms : ms * 2;
    if (ms > b->max_ms)
        ms = b->max_ms;
    if (b->jitter)
        ms = ms / 2 + (unsigned long)(next_rand(b) % (ms ? ms : 1));
    return ms;
}
