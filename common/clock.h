/* SPDX-License-Identifier: Apache-2.0 */
/* common/clock.h - time helpers for timed waits and durations. Cannot fail; thread-safe. */
#ifndef TPX_COMMON_CLOCK_H
#define TPX_COMMON_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

/* Now on CLOCK_REALTIME plus ms: the absolute deadline pthread_cond_timedwait() wants. */
struct timespec tpx_deadline_ms(unsigned long ms);

/* Wait on cv (mu held by the caller, and held again on return) until *stop is set or the deadline
 * passes. Returns the final value of *stop. */
bool tpx_cond_wait_stop(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *deadline,
                        atomic_bool *stop);

/* Seconds on CLOCK_MONOTONIC, for durations. */
double tpx_mono_s(void);

#endif
