/* SPDX-License-Identifier: Apache-2.0 */
/* common/map.c - open addressing with linear probing; the slot keeps the hash (see map.h). */
#include "common/map.h"

#include <stdlib.h>
#include <string.h>

#define MIN_CAP 16

static const char tomb[] = "";

void tpx_map_init(struct tpx_map *m)
{
    memset(m, 0, sizeof(*m));
}

void tpx_map_release(struct tpx_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

void tpx_map_clear(struct tpx_map *m)
{
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof(*m->slots));
    m->len = 0;
    m->used = 0;
}

static uint64_t hash_of(const struct tpx_map *m, const char *key)
{
    return tpx_hash_keyed(&m->seed, key, strlen(key));
}

static bool is_live(const struct tpx_map_slot *s)
{
    return s->key && s->key != tomb;
}

/* The slot holding key (hash h), or NULL. */
static struct tpx_map_slot *lookup(const struct tpx_map *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;

    for (size_t j = (size_t)h & mask;; j = (j + 1) & mask) {
        struct tpx_map_slot *s = &m->slots[j];

        if (!s->key)
            return NULL;
        if (s->hash == h && s->key != tomb && strcmp(s->key, key) == 0)
            return s;
    }
}

static bool rebuild(struct tpx_map *m, size_t ncap)
{
    struct tpx_map_slot *slots = calloc(ncap, sizeof(*slots));

    if (!slots)
        return false;
    if (!m->slots)
        m->seed = *tpx_hash_process_key();
    for (size_t i = 0; i < m->cap; i++) {
        const struct tpx_map_slot *s = &m->slots[i];
        size_t j;

        if (!is_live(s))
            continue;
        for (j = (size_t)s->hash & (ncap - 1); slots[j].key; j = (j + 1) & (ncap - 1))
            ;
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = ncap;
    m->used = m->len;
    return true;
}

static enum tpx_code put(struct tpx_map *m, const char *key, union tpx_map_val val,
                         struct tpx_err *err)
{
    struct tpx_map_slot *grave = NULL;
    uint64_t h;
    size_t mask;
    size_t j;

    if ((m->used + 1) * 2 > m->cap) {
        /* double, unless tombstones are most of what is used: then rebuild at the same size */
        size_t ncap = !m->cap ? MIN_CAP : (m->len + 1) * 4 > m->cap ? m->cap * 2 : m->cap;

        if (ncap < m->cap || ncap > SIZE_MAX / sizeof(struct tpx_map_slot) || !rebuild(m, ncap))
            return tpx_err_set(err, TPX_ENOMEM, "out of memory growing a table of %zu entries",
                               m->len);
    }
    h = hash_of(m, key);
    mask = m->cap - 1;
    for (j = (size_t)h & mask; m->slots[j].key; j = (j + 1) & mask) {
        struct tpx_map_slot *s = &m->slots[j];

        if (s->key == tomb) {
            if (!grave)
                grave = s;
        } else if (s->hash == h && strcmp(s->key, key) == 0) {
            s->key = key;
            s->val = val;
            return TPX_OK;
        }
    }
    if (!grave) {
        grave = &m->slots[j];
        m->used++;
    }
    grave->key = key;
    grave->hash = h;
    grave->val = val;
    m->len++;
    return TPX_OK;
}

union tpx_map_val *tpx_map_find(const struct tpx_map *m, const char *key)
{
    struct tpx_map_slot *s;

    if (!m->len || !key)
        return NULL;
    s = lookup(m, key, hash_of(m, key));
    return s ? &s->val : NULL;
}

void *tpx_map_get(const struct tpx_map *m, const char *key)
{
    union tpx_map_val *v = tpx_map_find(m, key);

    return v ? v->ptr : NULL;
}

bool tpx_map_get_num(const struct tpx_map *m, const char *key, size_t *out)
{
    union tpx_map_val *v = tpx_map_find(m, key);

    if (!v)
        return false;
    *out = v->num;
    return true;
}

enum tpx_code tpx_map_put(struct tpx_map *m, const char *key, void *val, struct tpx_err *err)
{
    union tpx_map_val v = {.ptr = val};

    return put(m, key, v, err);
}

enum tpx_code tpx_map_put_num(struct tpx_map *m, const char *key, size_t val, struct tpx_err *err)
{
    union tpx_map_val v = {.num = val};

    return put(m, key, v, err);
}

bool tpx_map_del(struct tpx_map *m, const char *key, union tpx_map_val *old)
{
    struct tpx_map_slot *s;

    if (!m->len || !key)
        return false;
    s = lookup(m, key, hash_of(m, key));
    if (!s)
        return false;
    if (old)
        *old = s->val;
    s->key = tomb;
    m->len--;
    return true;
}

bool tpx_map_next(const struct tpx_map *m, size_t *pos, const char **key, union tpx_map_val *val)
{
    for (; *pos < m->cap; (*pos)++) {
        const struct tpx_map_slot *s = &m->slots[*pos];

        if (!is_live(s))
            continue;
        if (key)
            *key = s->key;
        if (val)
            *val = s->val;
        (*pos)++;
        return true;
    }
    return false;
}
