/* SPDX-License-Identifier: Apache-2.0 */
/* extender/held.c - a held member's filter answer is its one held node (held.h). */
#include "extender/held.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "extender/codec.h"
#include "topology/model.h"

#define SEEN 4096   /* pods remembered; a power of two (an older one is overwritten) */
#define HOLDS 64    /* held slots read per group */
#define RETRY_S 2.0 /* a filter this long after the pod's one-node answer is a new cycle */

struct seen {
    uint64_t key; /* the UID's hash; 0: free */
    double at;    /* its first one-node answer */
};

struct ext_held {
    pthread_mutex_t mu;
    struct seen seen[SEEN];
};

struct ext_held *ext_held_new(struct tpx_err *err)
{
    struct ext_held *h = calloc(1, sizeof(*h));

    if (!h) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the held-node table");
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

void ext_held_free(struct ext_held *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* Whether uid may be given one node now: never given one, or given one less than RETRY_S ago
 * (the same cycle: in-tree TAS filters a gang once per placement). Remembers the first time. */
static bool may_narrow(struct ext_held *h, const char *uid, double now)
{
    uint64_t key = tpx_hash_keyed(tpx_hash_process_key(), uid, strlen(uid)) | 1;
    struct seen *s = &h->seen[key & (SEEN - 1)];
    bool ok = true;

    pthread_mutex_lock(&h->mu);
    if (s->key == key)
        ok = now - s->at < RETRY_S;
    else
        *s = (struct seen){key, now};
    pthread_mutex_unlock(&h->mu);
    return ok;
}

struct pick {
    const struct pol_workload *wl;
    const char *const *names;
    size_t n;
    const enum pol_verdict *verdict;
    size_t found; /* the candidate to keep; SIZE_MAX: none */
};

/* The candidate that passes on node name, SIZE_MAX when none. */
static size_t passing(const struct pick *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->verdict[i] == POL_FIT && strcmp(p->names[i], name) == 0)
            return i;
    }
    return SIZE_MAX;
}

/* ext_state_read() callback: the held slot to keep, under the state's lock. */
static void pick_held(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct pick *p = ctx;
    const struct topo_cluster *c = pol_ledger_cluster(l);
    struct pol_hold holds[HOLDS];
    size_t nh = pol_group_holds(l, p->wl->group, holds, HOLDS);

    (void)pods_seen;
    if (nh > HOLDS)
        nh = HOLDS;
    for (size_t k = nh; k-- > 0;) {
        if (p->wl->pod_index >= 0 && holds[k].slot != (unsigned)p->wl->pod_index)
            continue; /* a member with an index takes its own slot only */
        if ((p->found = passing(p, topo_cluster_node(c, holds[k].node)->name)) != SIZE_MAX)
            return;
    }
}

bool ext_held_narrow(struct ext_held *h, struct ext_state *st, const char *uid,
                     const struct pol_workload *wl, const char *const *names, size_t n,
                     struct ext_state_verdicts *v, double now)
{
    struct pick p = {wl, names, n, v->verdict, SIZE_MAX};

    if (!h || !uid || !*uid || !wl->group[0] || wl->group_size < 2 || v->nfit < 2 || !v->verdict)
        return false;
    if (!ext_state_read(st, pick_held, &p) || p.found == SIZE_MAX || !may_narrow(h, uid, now))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (i != p.found && v->verdict[i] == POL_FIT)
            v->verdict[i] = EXT_VERDICT_OMIT;
    }
    v->nfit = 1;
    return true;
}
