/* SPDX-License-Identifier: Apache-2.0 */
/* extender/config.c - serve configuration: defaults, YAML file, flag overrides, printing. */
#include "extender/config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "objects/yamljson.h"

#define CONFIG_MAX_BYTES (1024 * 1024)

static const char *const level_keys[TOPO_LEVEL_COUNT] = {"domain", "rack", "block", "zone"};

static enum tpx_code set_str(char **dst, const char *v, struct tpx_err *err)
{
    char *d = v ? strdup(v) : NULL;

    if (v && !d)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    free(*dst);
    *dst = d;
    return TPX_OK;
}

enum tpx_code ext_serve_config_init(struct ext_serve_config *c, struct tpx_err *err)
{
    memset(c, 0, sizeof(*c));
    c->pipeline_scope = POL_SCOPE_RACK;
    c->reservation_ttl_s = 600;
    c->max_body = (size_t)256 * 1024 * 1024;
    c->bind_mode = EXT_BIND_RECORD;
    c->conn_timeout_s = 120;
    c->drain_s = 10;
    c->cluster_source = EXT_SOURCE_AUTO;
    c->bind_timeout_s = 4;
    c->api_backoff_max_s = 30;
    c->events = true;
    return set_str(&c->listen, "127.0.0.1:8888", err);
}

static void free_list(char **v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free(v[i]);
    *n = 0;
}

void ext_serve_config_release(struct ext_serve_config *c)
{
    free(c->listen);
    free(c->tls_cert);
    free(c->tls_key);
    free(c->client_ca);
    free(c->nodes_file);
    free(c->cluster_spec);
    free(c->kubeconfig);
    free_list(c->resources, &c->nresources);
    for (int l = 0; l < TOPO_LEVEL_COUNT; l++)
        free_list(c->label_keys[l], &c->nlabel_keys[l]);
    memset(c, 0, sizeof(*c));
}

bool ext_parse_duration(const char *s, unsigned *out)
{
    unsigned long long total = 0;
    const char *p = s;

    if (!s || !*s)
        return false;
    while (*p) {
        unsigned long long v = 0;
        const char *d = p;

        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (unsigned)(*p - '0');
            if (v > 100000000ULL)
                return false;
            p++;
        }
        if (p == d)
            return false;
        if (*p == 'h')
            v *= 3600;
        else if (*p == 'm')
            v *= 60;
        else if (*p == 's' || *p == '\0')
            ;
        else
            return false;
        if (*p)
            p++;
        total += v;
    }
    if (total > 100000000ULL)
        return false;
    *out = (unsigned)total;
    return true;
}

bool ext_parse_size(const char *s, size_t *out)
{
    static const struct {
        const char *suffix;
        unsigned long long mult;
    } units[] = {{"", 1},        {"k", 1000},        {"K", 1000},       {"Ki", 1ULL << 10},
                 {"M", 1000000}, {"Mi", 1ULL << 20}, {"G", 1000000000}, {"Gi", 1ULL << 30}};
    unsigned long long v = 0;
    const char *p = s;

    if (!s || !*s)
        return false;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned)(*p - '0');
        if (v > (1ULL << 40))
            return false;
        p++;
    }
    if (p == s)
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(p, units[i].suffix) == 0) {
            if (v > (1ULL << 40) / units[i].mult)
                return false; /* v * mult would pass the limit (or wrap around) */
            v *= units[i].mult;
            if (v == 0 || v > (1ULL << 40))
                return false;
            *out = (size_t)v;
            return true;
        }
    }
    return false;
}

/* "a,b,c" -> list (replacing it). */
static enum tpx_code set_list(char **v, size_t *n, const char *key, const char *csv,
                              struct tpx_err *err)
{
    const char *p = csv;

    free_list(v, n);
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);

        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        if (len) {
            if (*n >= EXT_MAX_LIST)
                return tpx_err_set(err, TPX_EINVAL, "%s: more than %d entries", key, EXT_MAX_LIST);
            v[*n] = strndup(p, len);
            if (!v[*n])
                return tpx_err_set(err, TPX_ENOMEM, "out of memory");
            (*n)++;
        }
        if (!e)
            break;
        p = e + 1;
    }
    return TPX_OK;
}

static bool parse_scope(const char *s, enum pol_scope *out)
{
    if (strcmp(s, "rack") == 0)
        *out = POL_SCOPE_RACK;
    else if (strcmp(s, "block") == 0)
        *out = POL_SCOPE_BLOCK;
    else if (strcmp(s, "zone") == 0)
        *out = POL_SCOPE_ZONE;
    else
        return false;
    return true;
}

static const char *scope_name(enum pol_scope s)
{
    return s == POL_SCOPE_BLOCK ? "block" : s == POL_SCOPE_ZONE ? "zone" : "rack";
}

static bool parse_uint(const char *s, unsigned max, unsigned *out)
{
    char *end;
    unsigned long v;

    if (!s || !*s || *s == '-')
        return false;
    v = strtoul(s, &end, 10);
    if (*end || v > max)
        return false;
    *out = (unsigned)v;
    return true;
}

enum tpx_code ext_serve_config_set(struct ext_serve_config *c, const char *key, const char *value,
                                   struct tpx_err *err)
{
    if (strcmp(key, "listen") == 0)
        return set_str(&c->listen, value, err);
    if (strcmp(key, "tlsCert") == 0)
        return set_str(&c->tls_cert, value, err);
    if (strcmp(key, "tlsKey") == 0)
        return set_str(&c->tls_key, value, err);
    if (strcmp(key, "clientCA") == 0)
        return set_str(&c->client_ca, value, err);
    if (strcmp(key, "nodes") == 0)
        return set_str(&c->nodes_file, value, err);
    if (strcmp(key, "cluster") == 0)
        return set_str(&c->cluster_spec, value, err);
    if (strcmp(key, "resources") == 0)
        return set_list(c->resources, &c->nresources, key, value, err);
    for (int l = 0; l < TOPO_LEVEL_COUNT; l++) {
        if (strncmp(key, "labels.", 7) == 0 && strcmp(key + 7, level_keys[l]) == 0)
            return set_list(c->label_keys[l], &c->nlabel_keys[l], key, value, err);
    }
    if (strcmp(key, "pipelineScope") == 0) {
        if (!parse_scope(value, &c->pipeline_scope))
            return tpx_err_set(err, TPX_EINVAL, "pipelineScope: '%s' is not rack, block or zone",
                               value);
        return TPX_OK;
    }
    if (strcmp(key, "reservationTTL") == 0) {
        if (!ext_parse_duration(value, &c->reservation_ttl_s) || c->reservation_ttl_s == 0)
            return tpx_err_set(err, TPX_EINVAL,
                               "reservationTTL: '%s' is not a positive duration like 10m or 90s",
                               value);
        return TPX_OK;
    }
    if (strcmp(key, "maxBody") == 0) {
        if (!ext_parse_size(value, &c->max_body))
            return tpx_err_set(err, TPX_EINVAL, "maxBody: '%s' is not a size like 256Mi or 1000000",
                               value);
        return TPX_OK;
    }
    if (strcmp(key, "bindMode") == 0) {
        if (strcmp(value, "record") == 0)
            c->bind_mode = EXT_BIND_RECORD;
        else if (strcmp(value, "api") == 0)
            c->bind_mode = EXT_BIND_API;
        else
            return tpx_err_set(err, TPX_EINVAL, "bindMode: '%s' is not record or api", value);
        return TPX_OK;
    }
    if (strcmp(key, "threads") == 0) {
        if (!parse_uint(value, 1024, &c->threads))
            return tpx_err_set(err, TPX_EINVAL, "threads: '%s' is not 0..1024", value);
        return TPX_OK;
    }
    if (strcmp(key, "connectionTimeout") == 0) {
        if (!ext_parse_duration(value, &c->conn_timeout_s))
            return tpx_err_set(err, TPX_EINVAL, "connectionTimeout: '%s' is not a duration", value);
        return TPX_OK;
    }
    if (strcmp(key, "kubeconfig") == 0)
        return set_str(&c->kubeconfig, value, err);
    if (strcmp(key, "clusterSource") == 0) {
        if (strcmp(value, "auto") == 0)
            c->cluster_source = EXT_SOURCE_AUTO;
        else if (strcmp(value, "api") == 0)
            c->cluster_source = EXT_SOURCE_API;
        else if (strcmp(value, "file") == 0)
            c->cluster_source = EXT_SOURCE_FILE;
        else
            return tpx_err_set(err, TPX_EINVAL, "clusterSource: '%s' is not auto, api or file",
                               value);
        return TPX_OK;
    }
    if (strcmp(key, "bindTimeout") == 0) {
        if (!ext_parse_duration(value, &c->bind_timeout_s) || c->bind_timeout_s == 0 ||
            c->bind_timeout_s > 600)
            return tpx_err_set(err, TPX_EINVAL,
                               "bindTimeout: '%s' is not a duration between 1s and 10m", value);
        return TPX_OK;
    }
    if (strcmp(key, "apiBackoffMax") == 0) {
        if (!ext_parse_duration(value, &c->api_backoff_max_s) || c->api_backoff_max_s == 0 ||
            c->api_backoff_max_s > 3600)
            return tpx_err_set(err, TPX_EINVAL,
                               "apiBackoffMax: '%s' is not a duration between 1s and 1h", value);
        return TPX_OK;
    }
    if (strcmp(key, "events") == 0) {
        if (strcmp(value, "true") == 0 || strcmp(value, "on") == 0)
            c->events = true;
        else if (strcmp(value, "false") == 0 || strcmp(value, "off") == 0)
            c->events = false;
        else
            return tpx_err_set(err, TPX_EINVAL, "events: '%s' is not true or false", value);
        return TPX_OK;
    }
    if (strcmp(key, "drainTimeout") == 0) {
        /* at most an hour: the drain loop counts milliseconds in an unsigned */
        if (!ext_parse_duration(value, &c->drain_s) || c->drain_s > 3600)
            return tpx_err_set(err, TPX_EINVAL,
                               "drainTimeout: '%s' is not a duration between 0s and 1h", value);
        return TPX_OK;
    }
    return tpx_err_set(err, TPX_EINVAL, "unknown key '%s'", key);
}

/* A scalar or a list of scalars as text ("a,b"). */
static enum tpx_code scalar_text(const json_t *v, char *buf, size_t cap, struct tpx_err *err)
{
    size_t len = 0;

    if (json_is_array(v)) {
        size_t i;
        json_t *e;

        buf[0] = '\0';
        json_array_foreach(v, i, e)
        {
            char one[512];
            size_t n;
            if (scalar_text(e, one, sizeof(one), err) != TPX_OK)
                return err->code;
            n = strlen(one);
            if (len + n + 2 > cap)
                return tpx_err_set(err, TPX_EINVAL, "list too long");
            if (i)
                buf[len++] = ',';
            memcpy(buf + len, one, n + 1);
            len += n;
        }
        return TPX_OK;
    }
    if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_true(v) || json_is_false(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
    else
        return tpx_err_set(err, TPX_EINVAL, "expected a string, a number or a list of them");
    return TPX_OK;
}

enum tpx_code ext_serve_config_load(struct ext_serve_config *c, const char *path,
                                    struct tpx_err *err)
{
    struct ext_yaml_docs docs;
    const char *key;
    json_t *v, *root;
    char text[4096];
    enum tpx_code rc = TPX_OK;

    if (ext_yaml_load_file(path, CONFIG_MAX_BYTES, &docs, err) != TPX_OK)
        return err->code;
    if (docs.n != 1 || !json_is_object(docs.docs[0])) {
        ext_yaml_docs_release(&docs);
        return tpx_err_set(err, TPX_EINVAL, "%s: want one YAML mapping", path);
    }
    root = docs.docs[0];
    json_object_foreach(root, key, v)
    {
        if (json_is_null(v))
            continue; /* "key: null" keeps the default, so printed configs load back */
        if (strcmp(key, "tls") == 0 && json_is_object(v)) {
            static const char *const sub[][2] = {
                {"cert", "tlsCert"}, {"key", "tlsKey"}, {"clientCA", "clientCA"}};
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2)
            {
                size_t i;
                for (i = 0; i < 3 && strcmp(k2, sub[i][0]) != 0; i++)
                    ;
                if (json_is_null(v2))
                    continue;
                if (i == 3) {
                    rc = tpx_err_set(err, TPX_EINVAL, "unknown key 'tls.%s'", k2);
                } else if (scalar_text(v2, text, sizeof(text), err) == TPX_OK) {
                    rc = ext_serve_config_set(c, sub[i][1], text, err);
                } else {
                    rc = err->code;
                }
                if (rc != TPX_OK)
                    break;
            }
        } else if (strcmp(key, "labels") == 0 && json_is_object(v)) {
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2)
            {
                char full[64];
                snprintf(full, sizeof(full), "labels.%.50s", k2);
                if (scalar_text(v2, text, sizeof(text), err) == TPX_OK)
                    rc = ext_serve_config_set(c, full, text, err);
                else
                    rc = err->code;
                if (rc != TPX_OK)
                    break;
            }
        } else if (scalar_text(v, text, sizeof(text), err) == TPX_OK) {
            rc = ext_serve_config_set(c, key, text, err);
        } else {
            rc = err->code;
            tpx_err_prefix(err, "%s", key);
        }
        if (rc != TPX_OK)
            break;
    }
    ext_yaml_docs_release(&docs);
    if (rc != TPX_OK)
        tpx_err_prefix(err, "%s", path);
    return rc;
}

const struct topo_label_config *ext_serve_config_labels(struct ext_serve_config *c)
{
    const struct topo_label_config *def = topo_label_config_default();

    c->label_cfg = *def;
    for (int l = 0; l < TOPO_LEVEL_COUNT; l++) {
        if (!c->nlabel_keys[l])
            continue;
        for (size_t i = 0; i < c->nlabel_keys[l]; i++)
            c->key_ptrs[l][i] = c->label_keys[l][i];
        c->label_cfg.keys[l] = c->key_ptrs[l];
        c->label_cfg.nkeys[l] = c->nlabel_keys[l];
    }
    if (c->nresources) {
        for (size_t i = 0; i < c->nresources; i++)
            c->res_ptrs[i] = c->resources[i];
        c->label_cfg.resources = c->res_ptrs;
        c->label_cfg.nresources = c->nresources;
    }
    return &c->label_cfg;
}

static void print_str(FILE *f, const char *key, const char *v)
{
    if (!v) {
        fprintf(f, "%s: null\n", key);
        return;
    }
    fprintf(f, "%s: \"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        fputc(*p, f);
    }
    fputs("\"\n", f);
}

static void print_list(FILE *f, const char *indent, const char *key, const char *const *v, size_t n)
{
    fprintf(f, "%s%s:", indent, key);
    if (!n) {
        fputs(" []\n", f);
        return;
    }
    fputc('\n', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s  - \"%s\"\n", indent, v[i]);
}

void ext_serve_config_print(const struct ext_serve_config *c, FILE *f)
{
    const struct topo_label_config *def = topo_label_config_default();

    fputs("# topox serve: effective configuration (accepted by --config)\n", f);
    print_str(f, "listen", c->listen);
    fputs("tls:\n", f);
    print_str(f, "  cert", c->tls_cert);
    print_str(f, "  key", c->tls_key);
    print_str(f, "  clientCA", c->client_ca);
    if (c->nresources)
        print_list(f, "", "resources", (const char *const *)c->resources, c->nresources);
    else
        print_list(f, "", "resources", def->resources, def->nresources);
    fputs("labels:\n", f);
    for (int l = 0; l < TOPO_LEVEL_COUNT; l++) {
        if (c->nlabel_keys[l])
            print_list(f, "  ", level_keys[l], (const char *const *)c->label_keys[l],
                       c->nlabel_keys[l]);
        else
            print_list(f, "  ", level_keys[l], def->keys[l], def->nkeys[l]);
    }
    fprintf(f, "pipelineScope: %s\n", scope_name(c->pipeline_scope));
    fprintf(f, "reservationTTL: %us\n", c->reservation_ttl_s);
    fprintf(f, "maxBody: %zu\n", c->max_body);
    fprintf(f, "bindMode: %s\n", c->bind_mode == EXT_BIND_API ? "api" : "record");
    print_str(f, "nodes", c->nodes_file);
    print_str(f, "cluster", c->cluster_spec);
    fprintf(f, "threads: %u\n", c->threads);
    fprintf(f, "connectionTimeout: %us\n", c->conn_timeout_s);
    fprintf(f, "drainTimeout: %us\n", c->drain_s);
    print_str(f, "kubeconfig", c->kubeconfig);
    fprintf(f, "clusterSource: %s\n",
            c->cluster_source == EXT_SOURCE_API    ? "api"
            : c->cluster_source == EXT_SOURCE_FILE ? "file"
                                                   : "auto");
    fprintf(f, "bindTimeout: %us\n", c->bind_timeout_s);
    fprintf(f, "apiBackoffMax: %us\n", c->api_backoff_max_s);
    fprintf(f, "events: %s\n", c->events ? "true" : "false");
}
