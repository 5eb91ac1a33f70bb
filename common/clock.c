/* SPDX-License-Identifier: Apache-2.0 */
/* common/clock.c - deadlines for condition waits and a monotonic clock. */
#include "common/clock.h"

struct timespec tpx_deadline_ms(unsigned long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

bool tpx_cond_wait_stop(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *deadline,
                        atomic_bool *stop)
{
    while (!atomic_load(stop)) {
        if (pthread_cond_timedwait(cv, mu, deadline) != 0)
            break;
    }
    return atomic_load(stop);
}

double tpx_mono_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
