/* SPDX-License-Identifier: Apache-2.0 */
/* common/hash.h - the one hash function: keyed SipHash-1-3 (64-bit output). Libc only.
 *
 * Two keys. The process key is random, taken once from getrandom(2) (else /dev/urandom, else
 * time ^ pid), so a tenant cannot pick strings that collide in our tables (hash flooding). The
 * fixed key gives the same hash in every process and build: use it only where a hash is shown or
 * kept (names made from a hash), never for a table fed from outside. */
#ifndef TPX_COMMON_HASH_H
#define TPX_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 128-bit SipHash key. Value type. */
struct tpx_hash_key {
    uint64_t k0;
    uint64_t k1;
};

/* The same in every process: for hashes that are shown or kept. */
extern const struct tpx_hash_key tpx_hash_fixed_key;

/* The process-wide random key, read once on first use. Cannot fail (a weak fallback is used when
 * the system has no randomness to give). Thread-safe. Borrowed for the life of the process. */
const struct tpx_hash_key *tpx_hash_process_key(void);

/* SipHash-1-3 of n bytes under key k. Cannot fail; thread-safe. */
uint64_t tpx_hash_keyed(const struct tpx_hash_key *k, const void *p, size_t n);

/* Fold the string s into a running hash h (start from 0): a hash of a sequence of strings. Each
 * step keys SipHash with h, and SipHash counts the length, so "ab","c" and "a","bc" differ. s NULL
 * counts as "". */
uint64_t tpx_hash_step(const struct tpx_hash_key *k, uint64_t h, const char *s);

/* n bytes, or the string s, under the process key: for in-memory tables. */
uint64_t tpx_hash(const void *p, size_t n);
uint64_t tpx_hash_str(const char *s);

/* The string s under the fixed key: stable across processes. */
uint64_t tpx_hash_stable_str(const char *s);

#endif
