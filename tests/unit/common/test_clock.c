/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_clock.c - deadlines normalise nanoseconds, a stop flag ends a timed wait,
 * and an unset flag lets the deadline end it. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "common/clock.h"

Test(tpx_clock, deadline_is_in_the_future_and_normalised)
{
    struct timespec now;
    struct timespec d;

    clock_gettime(CLOCK_REALTIME, &now);
    d = tpx_deadline_ms(1999);
    cr_expect(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L, "tv_nsec %ld", d.tv_nsec);
    cr_expect(d.tv_sec > now.tv_sec || (d.tv_sec == now.tv_sec && d.tv_nsec > now.tv_nsec));
    cr_expect(d.tv_sec <= now.tv_sec + 3);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_bool stop;

static void *stopper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    atomic_store(&stop, true);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

Test(tpx_clock, stop_flag_ends_the_wait)
{
    struct timespec d = tpx_deadline_ms(60000);
    pthread_t t;
    bool stopped;

    atomic_store(&stop, false);
    pthread_mutex_lock(&mu);
    pthread_create(&t, NULL, stopper, NULL);
    stopped = tpx_cond_wait_stop(&cv, &mu, &d, &stop);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    cr_expect(stopped, "returns true once stop is set, long before the 60 s deadline");
}

Test(tpx_clock, deadline_ends_the_wait_without_stop)
{
    struct timespec d = tpx_deadline_ms(10);
    double t0 = tpx_mono_s();
    bool stopped;

    atomic_store(&stop, false);
    pthread_mutex_lock(&mu);
    stopped = tpx_cond_wait_stop(&cv, &mu, &d, &stop);
    pthread_mutex_unlock(&mu);
    cr_expect(!stopped);
    cr_expect(tpx_mono_s() >= t0, "the monotonic clock does not go back");
}
