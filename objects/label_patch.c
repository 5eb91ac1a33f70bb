/* SPDX-License-Identifier: Apache-2.0 */
/* objects/label_patch.c - merge-patch bodies for node labels. jansson builds the text so every
 * string is escaped correctly; no json_t leaves this file. */
#include "objects/label_patch.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static const char *const inventory_keys[] = {"topox.io/rack", "topox.io/block",
                                             "topox.io/nvlink-domain"};

static const struct obj_label_scope discovery_scope = {
    "topox.io/", NULL, 0, inventory_keys, sizeof(inventory_keys) / sizeof(inventory_keys[0])};
static const struct obj_label_scope inventory_scope = {
    "topox.io/", inventory_keys, sizeof(inventory_keys) / sizeof(inventory_keys[0]), NULL, 0};

const struct obj_label_scope *obj_label_scope_discovery(void)
{
    return &discovery_scope;
}

const struct obj_label_scope *obj_label_scope_inventory(void)
{
    return &inventory_scope;
}

static bool in_list(const char *key, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(key, list[i]) == 0)
            return true;
    }
    return false;
}

static bool owned(const struct obj_label_scope *s, const char *key)
{
    if (s->prefix && strncmp(key, s->prefix, strlen(s->prefix)) != 0)
        return false;
    if (s->n_only > 0 && !in_list(key, s->only, s->n_only))
        return false;
    return !in_list(key, s->except, s->n_except);
}

static const char *find(const struct obj_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value ? kv[i].value : "";
    }
    return NULL;
}

enum tpx_code obj_label_patch_build(const struct obj_label_scope *scope, const struct obj_kv *cur,
                                    size_t n_cur, const struct obj_kv *want, size_t n_want,
                                    const char *annotation_key, const char *cur_annotation,
                                    const char *annotation, char **body,
                                    struct obj_label_diff *diff, struct tpx_err *err)
{
    struct obj_label_diff local;
    json_t *labels = json_object();
    json_t *annotations = json_object();
    json_t *meta = json_object();
    json_t *root = json_object();
    enum tpx_code rc = TPX_OK;

    *body = NULL;
    if (!diff)
        diff = &local;
    memset(diff, 0, sizeof(*diff));
    if (!labels || !annotations || !meta || !root) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory building a label patch");
        goto out;
    }
    for (size_t i = 0; i < n_want; i++) {
        const char *now = find(cur, n_cur, want[i].key);

        if (find(want, i, want[i].key)) {
            rc = tpx_err_set(err, TPX_EINVAL, "label '%s' is wanted twice", want[i].key);
            goto out;
        }
        if (now && strcmp(now, want[i].value) == 0) {
            diff->unchanged++;
            continue;
        }
        if (json_object_set_new(labels, want[i].key, json_string(want[i].value)) != 0) {
            rc = tpx_err_set(err, TPX_EINVAL, "label '%s': value is not UTF-8", want[i].key);
            goto out;
        }
        diff->set++;
    }
    for (size_t i = 0; i < n_cur; i++) {
        if (owned(scope, cur[i].key) && !find(want, n_want, cur[i].key) &&
            !json_object_get(labels, cur[i].key)) {
            json_object_set_new(labels, cur[i].key, json_null());
            diff->removed++;
        }
    }
    if (annotation && annotation_key &&
        (!cur_annotation || strcmp(cur_annotation, annotation) != 0)) {
        if (json_object_set_new(annotations, annotation_key, json_string(annotation)) != 0) {
            rc = tpx_err_set(err, TPX_EINVAL, "annotation '%s' is not UTF-8", annotation_key);
            goto out;
        }
        diff->annotation = true;
    }
    if (diff->set == 0 && diff->removed == 0 && !diff->annotation)
        goto out; /* nothing changed: no patch at all */
    if (json_object_size(labels) > 0)
        json_object_set(meta, "labels", labels);
    if (json_object_size(annotations) > 0)
        json_object_set(meta, "annotations", annotations);
    json_object_set(root, "metadata", meta);
    *body = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    if (!*body)
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory writing a label patch");
out:
    json_decref(root);
    json_decref(meta);
    json_decref(annotations);
    json_decref(labels);
    return rc;
}
