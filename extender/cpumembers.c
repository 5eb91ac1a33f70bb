/* SPDX-License-Identifier: Apache-2.0 */
/* extender/cpumembers.c - the members of groups that ask for no accelerator (cpumembers.h). */
#include "extender/cpumembers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/map.h"
#include "common/str.h"

/* One member without accelerators: its uid (the key of the uid map) and its group. */
struct member {
    char uid[64];
    int idx;      /* its pod index in its group, -1: unknown */
    bool watched; /* the watch has seen it: it goes when the watch drops it */
    double seen;  /* when a filter last saw it (monotonic s), for one the watch has not seen */
    struct group *g;
};

/* One group's members without accelerators. */
struct group {
    char key[POL_KEY_MAX];
    unsigned n;
    struct member *m[EXT_CPU_MEMBERS_MAX];
};

struct ext_cpu_members {
    pthread_mutex_t lock;
    double ttl_s; /* a member only filters have seen is forgotten this long after the last */
    struct tpx_map groups; /* group key (borrowed from the entry) -> struct group (owned) */
    struct tpx_map uids;   /* member uid (borrowed from the member) -> struct member (owned) */
};

struct ext_cpu_members *ext_cpu_members_new(double ttl_s)
{
    struct ext_cpu_members *c = calloc(1, sizeof(*c));

    if (c) {
        pthread_mutex_init(&c->lock, NULL);
        c->ttl_s = ttl_s;
    }
    return c;
}

/* Lock held: member m goes (from its group, and the group when it was the last). */
static void drop(struct ext_cpu_members *c, struct member *m)
{
    struct group *g = m->g;

    tpx_map_del(&c->uids, m->uid, NULL);
    for (unsigned i = 0; i < g->n; i++) {
        if (g->m[i] == m) {
            g->m[i] = g->m[--g->n];
            break;
        }
    }
    free(m);
    if (g->n == 0) {
        tpx_map_del(&c->groups, g->key, NULL);
        free(g);
    }
}

void ext_cpu_members_free(struct ext_cpu_members *c)
{
    union tpx_map_val v;

    if (!c)
        return;
    for (size_t pos = 0; tpx_map_next(&c->uids, &pos, NULL, &v);)
        free(v.ptr);
    for (size_t pos = 0; tpx_map_next(&c->groups, &pos, NULL, &v);)
        free(v.ptr);
    tpx_map_release(&c->uids);
    tpx_map_release(&c->groups);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Lock held: group key's entry, made when missing and there is room; NULL otherwise. */
static struct group *group_of(struct ext_cpu_members *c, const char *key)
{
    struct group *g = tpx_map_get(&c->groups, key);
    struct tpx_err err = TPX_ERR_INIT;

    if (g || tpx_map_len(&c->groups) >= EXT_CPU_GROUPS_MAX || !(g = calloc(1, sizeof(*g))))
        return g;
    tpx_str_copy(g->key, sizeof(g->key), key);
    if (tpx_map_put(&c->groups, g->key, g, &err) != TPX_OK) {
        free(g);
        return NULL;
    }
    return g;
}

void ext_cpu_members_note(struct ext_cpu_members *c, const struct pol_workload *wl, const char *uid,
                          double now, bool watched)
{
    struct group *g;
    struct member *m;
    struct tpx_err err = TPX_ERR_INIT;

    if (!c || !wl->group[0] || wl->accel_per_pod > 0 || !wl->size_explicit || !uid || !uid[0] ||
        strlen(uid) >= sizeof(m->uid))
        return;
    pthread_mutex_lock(&c->lock);
    if ((m = tpx_map_get(&c->uids, uid)) != NULL) {
        /* seen before (a retried filter, the watch after it): when, and by whom */
        m->seen = now;
        m->watched = m->watched || watched;
    } else if ((g = group_of(c, wl->group)) != NULL && g->n < EXT_CPU_MEMBERS_MAX &&
               (m = calloc(1, sizeof(*m))) != NULL) {
        tpx_str_copy(m->uid, sizeof(m->uid), uid);
        m->idx = wl->pod_index;
        m->watched = watched;
        m->seen = now;
        m->g = g;
        if (tpx_map_put(&c->uids, m->uid, m, &err) == TPX_OK)
            g->m[g->n++] = m;
        else
            free(m);
    }
    pthread_mutex_unlock(&c->lock);
}

void ext_cpu_members_skip(struct ext_cpu_members *c, struct pol_workload *wl, double now)
{
    struct group *g;
    unsigned total = 0, below = 0;

    if (!c || !wl->has_intent || !wl->group[0] || wl->accel_per_pod == 0)
        return;
    pthread_mutex_lock(&c->lock);
    g = tpx_map_get(&c->groups, wl->group);
    for (unsigned i = 0; g && i < g->n;) {
        struct member *m = g->m[i];
        if (!m->watched && now - m->seen > c->ttl_s) {
            /* no watch says it is still there: a group made again under the same key would
             * count its old leader too */
            bool last = g->n == 1;
            drop(c, m);
            if (last)
                break;
            continue; /* g->m[i] is another member now */
        }
        total++;
        below += m->idx >= 0 && m->idx < wl->pod_index;
        i++;
    }
    pthread_mutex_unlock(&c->lock);
    pol_workload_skip_members(wl, total, below);
}

void ext_cpu_members_forget(struct ext_cpu_members *c, const char *uid)
{
    struct member *m;

    if (!c || !uid)
        return;
    pthread_mutex_lock(&c->lock);
    if ((m = tpx_map_get(&c->uids, uid)) != NULL)
        drop(c, m);
    pthread_mutex_unlock(&c->lock);
}
