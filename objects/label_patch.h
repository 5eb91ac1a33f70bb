/* SPDX-License-Identifier: Apache-2.0 */
/* objects/label_patch.h - the JSON merge patch that moves a Node's topox.io/... labels (and the
 * topox.io/topology annotation) from what it has to what `topox label` wants: changed keys set,
 * stale owned keys set to null, nothing at all when nothing changed. Pure: no I/O, no logging. */
#ifndef TPX_OBJECTS_LABEL_PATCH_H
#define TPX_OBJECTS_LABEL_PATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* A borrowed key/value pair. */
struct obj_kv {
    const char *key;
    const char *value;
};

/*
 * Which label keys a run owns: a key is owned when it starts with prefix and, when n_only > 0, is
 * one of only[], and is none of except[]. Only owned keys are ever removed. The DaemonSet run owns
 * topox.io/... except the inventory keys; an inventory run owns exactly the inventory keys.
 * Borrowed.
 */
struct obj_label_scope {
    const char *prefix;
    const char *const *only;
    size_t n_only;
    const char *const *except;
    size_t n_except;
};

/* The discovery run's scope: topox.io/... except topox.io/rack, topox.io/block and
 * topox.io/nvlink-domain. Static; never NULL. */
const struct obj_label_scope *obj_label_scope_discovery(void);

/* The inventory run's scope: exactly those three keys. Static; never NULL. */
const struct obj_label_scope *obj_label_scope_inventory(void);

/* What a patch does, for the command's report. */
struct obj_label_diff {
    size_t set;     /* labels added or changed */
    size_t removed; /* owned labels set to null */
    size_t unchanged;
    bool annotation; /* the annotation is set */
};

/*
 * Build the merge patch {"metadata":{"labels":{...},"annotations":{...}}} (compact, keys sorted)
 * turning cur (the node's labels now) into want within scope. want keys outside the scope are
 * set anyway (the caller chose them). annotation: the wanted value of annotation_key, or NULL to
 * leave annotations alone; cur_annotation is the node's value now (NULL when absent).
 * *body is malloc'd (free it), or NULL when nothing changed. diff may be NULL.
 * TPX_EINVAL when want holds a key twice, TPX_ENOMEM.
 */
enum tpx_code obj_label_patch_build(const struct obj_label_scope *scope, const struct obj_kv *cur,
                                    size_t n_cur, const struct obj_kv *want, size_t n_want,
                                    const char *annotation_key, const char *cur_annotation,
                                    const char *annotation, char **body,
                                    struct obj_label_diff *diff, struct tpx_err *err);

#endif
