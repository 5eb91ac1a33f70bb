/* SPDX-License-Identifier: Apache-2.0 */
/* common/hash.c - SipHash-1-3 (Aumasson and Bernstein; the variant Rust's and Python's hash tables
 * use) and the process key. */
#include "common/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* "topox fixed hash" in ASCII: any constant works, but it must never change, since names made
 * with it are kept in the cluster. */
const struct tpx_hash_key tpx_hash_fixed_key = {0x746f706f78206669ULL, 0x7865642068617368ULL};

static struct tpx_hash_key process_key;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

/* read(2) and getrandom(2) alike: bytes, or -1 with errno. */
typedef ssize_t source_fn(void *ctx, unsigned char *p, size_t n);

static ssize_t from_fd(void *ctx, unsigned char *p, size_t n)
{
    return read(*(const int *)ctx, p, n);
}

static ssize_t from_kernel(void *ctx, unsigned char *p, size_t n)
{
    (void)ctx;
    return getrandom(p, n, 0);
}

/* Fill p[0..n) from get, again after EINTR and after short reads. 0, or -1 when get fails or has
 * nothing more. */
static int fill(source_fn *get, void *ctx, unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t got = get(ctx, p, n);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static int from_urandom(unsigned char *p, size_t n)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    int rc;

    if (fd < 0)
        return -1;
    rc = fill(from_fd, &fd, p, n);
    close(fd);
    return rc;
}

static void init_process_key(void)
{
    unsigned char raw[16];

    if (fill(from_kernel, NULL, raw, sizeof(raw)) != 0 && from_urandom(raw, sizeof(raw)) != 0) {
        /* No randomness at all (a seccomp jail without /dev): weak, but differs per process. */
        struct timespec ts;
        uint64_t a, b;

        clock_gettime(CLOCK_REALTIME, &ts);
        a = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
        b = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)&ts;
        memcpy(raw, &a, 8);
        memcpy(raw + 8, &b, 8);
    }
    memcpy(&process_key.k0, raw, 8);
    memcpy(&process_key.k1, raw + 8, 8);
}

const struct tpx_hash_key *tpx_hash_process_key(void)
{
    pthread_once(&process_once, init_process_key);
    return &process_key;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

/* Little-endian load, whatever the host order, so the fixed-key hash is the same everywhere. */
static uint64_t load64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

uint64_t tpx_hash_keyed(const struct tpx_hash_key *k, const void *data, size_t n)
{
    const unsigned char *p = data;
    const unsigned char *end = p + (n & ~(size_t)7);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k->k0;
    uint64_t v1 = 0x646f72616e646f6dULL ^ k->k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k->k0;
    uint64_t v3 = 0x7465646279746573ULL ^ k->k1;
    uint64_t b = (uint64_t)n << 56;
    uint64_t m;

    for (; p != end; p += 8) {
        m = load64(p);
        v3 ^= m;
        SIPROUND; /* c = 1 */
        v0 ^= m;
    }
    switch (n & 7) {
    case 7:
        b |= (uint64_t)p[6] << 48;
        /* fall through */
    case 6:
        b |= (uint64_t)p[5] << 40;
        /* fall through */
    case 5:
        b |= (uint64_t)p[4] << 32;
        /* fall through */
    case 4:
        b |= (uint64_t)p[3] << 24;
        /* fall through */
    case 3:
        b |= (uint64_t)p[2] << 16;
        /* fall through */
    case 2:
        b |= (uint64_t)p[1] << 8;
        /* fall through */
    case 1:
        b |= (uint64_t)p[0];
        break;
    default:
        break;
    }
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND; /* d = 3 */
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t tpx_hash_step(const struct tpx_hash_key *k, uint64_t h, const char *s)
{
    struct tpx_hash_key kh = {k->k0 ^ h, k->k1};

    if (!s)
        s = "";
    return tpx_hash_keyed(&kh, s, strlen(s));
}

uint64_t tpx_hash(const void *p, size_t n)
{
    return tpx_hash_keyed(tpx_hash_process_key(), p, n);
}

uint64_t tpx_hash_str(const char *s)
{
    return tpx_hash_keyed(tpx_hash_process_key(), s, strlen(s));
}

uint64_t tpx_hash_stable_str(const char *s)
{
    return tpx_hash_keyed(&tpx_hash_fixed_key, s, strlen(s));
}
