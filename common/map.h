/* SPDX-License-Identifier: Apache-2.0 */
/* common/map.h - string-keyed hash map: open addressing, linear probing, tombstones, seeded
 * SipHash (common/hash.h), so keys sent by a tenant cannot be made to collide. */
#ifndef TPX_COMMON_MAP_H
#define TPX_COMMON_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/hash.h"

/* A value: a pointer or a count, whichever the map's user stores. */
union tpx_map_val {
    void *ptr;
    size_t num;
};

/* Private: one slot. key NULL is empty; a tombstone has a key of its own (map.c). */
struct tpx_map_slot {
    const char *key;
    uint64_t hash;
    union tpx_map_val val;
};

/*
 * Caller-allocated; a zeroed struct is an empty map (so it can live in calloc'd records), as is
 * one after tpx_map_init(). Keys are borrowed: each stays valid, unchanged, until its entry is
 * deleted or the map released (point them into the value's own record). Each slot keeps the full
 * hash, so a probe compares strings only on a 64-bit match and growing rehashes no string. At most
 * half the slots are used (live + tombstones); the table doubles when it would pass that, or is
 * rebuilt at the same size when tombstones are most of it. The seed is the process key, taken
 * when the table is first allocated. Not thread-safe: one writer, or many readers, at a time.
 */
struct tpx_map {
    struct tpx_map_slot *slots;
    size_t cap;  /* power of two or 0 */
    size_t len;  /* live entries */
    size_t used; /* live entries + tombstones */
    struct tpx_hash_key seed;
};

/* Empty map. Allocates nothing, cannot fail. */
void tpx_map_init(struct tpx_map *m);

/* Free the table (not the keys or values). The map is empty and usable again. Safe to call twice.
 */
void tpx_map_release(struct tpx_map *m);

/* Forget every entry but keep the table, for a map that is about to be refilled. Cannot fail. */
void tpx_map_clear(struct tpx_map *m);

/* Number of live entries. */
static inline size_t tpx_map_len(const struct tpx_map *m)
{
    return m->len;
}

/* The value slot of key (borrowed until the next put, del or release), or NULL when absent or
 * key is NULL. */
union tpx_map_val *tpx_map_find(const struct tpx_map *m, const char *key);

/* The pointer stored under key, or NULL when absent (store no NULL pointers if that matters). */
void *tpx_map_get(const struct tpx_map *m, const char *key);

/* The count stored under key into *out; false when absent (*out untouched). */
bool tpx_map_get_num(const struct tpx_map *m, const char *key, size_t *out);

/* Store val under key, replacing any value (and the borrowed key pointer) already there.
 * TPX_ENOMEM when the table cannot grow; the map is then unchanged. */
enum tpx_code tpx_map_put(struct tpx_map *m, const char *key, void *val, struct tpx_err *err);
enum tpx_code tpx_map_put_num(struct tpx_map *m, const char *key, size_t val, struct tpx_err *err);

/* For a map of indexes into an array: the count stored under key, or none when absent or key is
 * NULL (topology's TOPO_NONE, say). */
static inline size_t tpx_map_index(const struct tpx_map *m, const char *key, size_t none)
{
    size_t v;

    return tpx_map_get_num(m, key, &v) ? v : none;
}

/* tpx_map_put_num for a caller that words the failure itself: false on ENOMEM, the map then
 * unchanged. */
static inline bool tpx_map_put_index(struct tpx_map *m, const char *key, size_t val)
{
    struct tpx_err err = TPX_ERR_INIT;

    return tpx_map_put_num(m, key, val, &err) == TPX_OK;
}

/* Remove key. true when it was there, with its value in *old (old may be NULL). Never shrinks or
 * moves other entries, so it is safe while iterating with tpx_map_next(). */
bool tpx_map_del(struct tpx_map *m, const char *key, union tpx_map_val *old);

/* Iterate: start with *pos = 0; each call gives the next live entry (key and val may be NULL) and
 * false at the end. Order is the table's (unspecified, differs between processes). Deleting the
 * entry just given is allowed; a put during iteration is not. */
bool tpx_map_next(const struct tpx_map *m, size_t *pos, const char **key, union tpx_map_val *val);

#endif
