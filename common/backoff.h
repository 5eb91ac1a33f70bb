/* SPDX-License-Identifier: Apache-2.0 */
/* common/backoff.h - retry delays: exponential, capped, with optional jitter. */
#ifndef TPX_COMMON_BACKOFF_H
#define TPX_COMMON_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

/* Caller-allocated value; nothing to release. One owner at a time (the jitter state changes). */
struct tpx_backoff {
    unsigned long base_ms;
    unsigned long max_ms;
    bool jitter;
    uint64_t rng; /* xorshift state, seeded from the process hash key */
};

/* Delays base_ms * 2^attempt, capped at max_ms; with jitter, each is then drawn from [d/2, 3d/2)
 * so many clients do not retry in step. Cannot fail. */
void tpx_backoff_init(struct tpx_backoff *b, unsigned long base_ms, unsigned long max_ms,
                      bool jitter);

/* The delay before retry `attempt` (0-based), in milliseconds. */
unsigned long tpx_backoff_ms(struct tpx_backoff *b, unsigned attempt);

#endif
