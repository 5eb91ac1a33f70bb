/* SPDX-License-Identifier: Apache-2.0 */
/* objects/engine_config.c - the engine config files a pod template's containers can read: each key
 * of a ConfigMap of the same manifest file that a volumeMount puts in a container (mountPath/key,
 * the configMap volume's items[].path for its key, or a subPath's single file). Each file's
 * top-level keys with scalar values become a pol_config_file of the pod's facts; which file an
 * engine reads, and what its keys mean, is workload/'s to say (docs/workloads.md, "Engine
 * configuration"). objects/ only does the YAML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "objects/manifest_int.h"

/* Room for one more file and its pairs; the text of each is copied (the file's YAML documents
 * are released at once). */
static enum tpx_code keep_text(struct obj_pod_facts *s, const char *t, const char **out,
                               struct tpx_err *err)
{
    char *dup = strdup(t ? t : "");
    char **nt = dup ? realloc(s->config_text, (s->nconfig_text + 1) * sizeof(*nt)) : NULL;

    if (!nt) {
        free(dup);
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    }
    s->config_text = nt;
    s->config_text[s->nconfig_text++] = dup;
    *out = dup;
    return TPX_OK;
}

struct cfg_build {
    struct pol_config_file *files;
    size_t n, cap, fcap;
    struct topo_kv *kv; /* every file's pairs, in file order */
    size_t nkv, kvcap;
    size_t *first; /* n: each file's first pair */
};

static enum tpx_code add_file(struct obj_pod_facts *s, struct cfg_build *b, const char *path,
                              const char *text, struct tpx_err *err)
{
    struct obj_yaml_docs d = {0};
    struct tpx_err yerr = TPX_ERR_INIT;
    const char *key;
    json_t *v;
    bool mapping;

    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->files[i].path, path) == 0)
            return TPX_OK; /* mounted twice (two containers): the first is the file */
    }
    if (!TPX_GROW(b->files, b->cap, b->n + 1) || !TPX_GROW(b->first, b->fcap, b->n + 1))
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    mapping = text && obj_yaml_parse(text, strlen(text), path, &d, &yerr) == TPX_OK && d.n == 1 &&
              json_is_object(d.docs[0]);
    memset(&b->files[b->n], 0, sizeof(b->files[b->n]));
    if (keep_text(s, path, &b->files[b->n].path, err) != TPX_OK) {
        obj_yaml_docs_release(&d);
        return err->code;
    }
    b->files[b->n].mapping = mapping;
    b->first[b->n] = b->nkv;
    json_object_foreach(mapping ? d.docs[0] : NULL, key, v)
    {
        char buf[64];
        const char *sv = obj_json_scalar(v, buf, sizeof(buf));
        struct topo_kv *kv;

        if (!sv)
            continue; /* nested sections (kv_cache_config: ...) are not sizes */
        if (!TPX_GROW(b->kv, b->kvcap, b->nkv + 1)) {
            obj_yaml_docs_release(&d);
            return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
        }
        kv = &b->kv[b->nkv];
        if (keep_text(s, key, &kv->key, err) != TPX_OK ||
            keep_text(s, sv, &kv->value, err) != TPX_OK) {
            obj_yaml_docs_release(&d);
            return err->code;
        }
        b->nkv++;
    }
    b->files[b->n].nkv = b->nkv - b->first[b->n];
    b->n++;
    obj_yaml_docs_release(&d);
    return TPX_OK;
}

/* The files one volumeMount vm of a container gives, from pod spec ps's configMap volumes. */
static enum tpx_code mount_files(struct obj_manifest *m, const json_t *ps, const json_t *vm,
                                 struct obj_pod_facts *s, struct cfg_build *b, struct tpx_err *err)
{
    const char *mp = json_string_value(json_object_get(vm, "mountPath"));
    const char *vn = json_string_value(json_object_get(vm, "name"));
    const char *sub = json_string_value(json_object_get(vm, "subPath"));
    size_t k;
    const json_t *vol;

    if (!mp || !vn)
        return TPX_OK;
    json_array_foreach(json_object_get(ps, "volumes"), k, vol)
    {
        const json_t *cmv = json_object_get(vol, "configMap");
        const char *cm = json_string_value(json_object_get(cmv, "name"));
        const char *n = json_string_value(json_object_get(vol, "name"));
        const json_t *obj, *data, *items;
        const char *key;
        json_t *text;

        if (!cm || !n || strcmp(n, vn) != 0)
            continue;
        obj = obj_mf_same_file_object(m, "", "ConfigMap", cm);
        data = json_object_get(obj, "data");
        items = json_object_get(cmv, "items");
        json_object_foreach((json_t *)data, key, text)
        {
            /* a projected key's file name is its items[].path; unlisted keys are not there */
            const char *file = json_is_array(items) ? NULL : key;
            char path[POL_KEY_MAX + 64];
            size_t i;
            const json_t *it;

            json_array_foreach(items, i, it)
            {
                const char *ik = json_string_value(json_object_get(it, "key"));
                if (ik && strcmp(ik, key) == 0)
                    file = json_string_value(json_object_get(it, "path"));
            }
            if (!file || (sub && strcmp(sub, file) != 0))
                continue;
            if (sub)
                snprintf(path, sizeof(path), "%s", mp);
            else
                snprintf(path, sizeof(path), "%s%s%s", mp,
                         mp[0] && mp[strlen(mp) - 1] == '/' ? "" : "/", file);
            if (add_file(s, b, path, json_string_value(text), err) != TPX_OK)
                return err->code;
        }
        return TPX_OK;
    }
    return TPX_OK;
}

enum tpx_code obj_mf_engine_configs(struct obj_manifest *m, const json_t *tmpl,
                                    struct obj_pod_facts *s, struct tpx_err *err)
{
    const json_t *ps = json_object_get(tmpl, "spec");
    struct cfg_build b = {0};
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(ps, "containers"), i, c)
    {
        size_t k;
        const json_t *vm;
        json_array_foreach(json_object_get(c, "volumeMounts"), k, vm)
        {
            if (mount_files(m, ps, vm, s, &b, err) != TPX_OK) {
                free(b.files);
                free(b.kv);
                free(b.first);
                return err->code;
            }
        }
    }
    for (size_t f = 0; f < b.n; f++)
        b.files[f].kv = b.kv + b.first[f];
    free(b.first);
    s->configs = b.files;
    s->config_kv = b.kv;
    s->facts.configs = b.files;
    s->facts.nconfigs = b.n;
    return TPX_OK;
}
