/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/startup.c - the layout the engine really ran, from its startup log:
 *   vLLM: "Initializing a V1 LLM engine (v%s) with config: %s" (vllm/v1/engine/core.py), the
 *     config printed by VllmConfig.__str__ with "tensor_parallel_size=N,
 *     pipeline_parallel_size=N";
 *   SGLang: "server_args=ServerArgs(... tp_size=N, pp_size=N, ...)", the dataclass repr.
 * The stage count may have been rewritten to satisfy divisibility: this is what ran. */
#include "diagnose/input.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/str.h"
#include "common/banned.h"

/* The value of key=N on [p, eol) where key starts a field (after '(', ' ' or ','); 0 if none. */
static unsigned field(const char *p, const char *eol, const char *key)
{
    size_t kl = strlen(key);

    for (const char *q = p; q + kl < eol; q++) {
        if (memcmp(q, key, kl) != 0 || q[kl] != '=')
            continue;
        if (q > p && q[-1] != '(' && q[-1] != ' ' && q[-1] != ',')
            continue;
        if (isdigit((unsigned char)q[kl + 1])) {
            unsigned long v = strtoul(q + kl + 1, NULL, 10);
            return v > 0 && v <= 65536 ? (unsigned)v : 0;
        }
    }
    return 0;
}

static const char *find(const char *p, const char *eol, const char *needle)
{
    size_t n = strlen(needle);

    for (; p + n <= eol; p++) {
        if (memcmp(p, needle, n) == 0)
            return p;
    }
    return NULL;
}

enum tpx_code dg_startup_parse(struct dg_startup *out, const char *text, size_t len,
                               const char *name, struct tpx_err *err)
{
    static const char vllm[] = "Initializing a V1 LLM engine (v";
    static const char sgl[] = "server_args=ServerArgs(";
    const char *p = text, *end = text + len;
    size_t line = 0;

    memset(out, 0, sizeof(*out));
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p)), *at;
        eol = eol ? eol : end;
        line++;
        if ((at = find(p, eol, vllm)) != NULL) {
            const char *v = at + sizeof(vllm) - 1, *close = memchr(v, ')', (size_t)(eol - v));
            tpx_str_copy(out->engine, sizeof(out->engine), "vllm");
            if (close && (size_t)(close - v) < sizeof(out->version)) {
                memcpy(out->version, v, (size_t)(close - v));
                out->version[close - v] = '\0';
            }
            out->tp = field(at, eol, "tensor_parallel_size");
            out->pp = field(at, eol, "pipeline_parallel_size");
            out->line = line;
            return TPX_OK;
        }
        if ((at = find(p, eol, sgl)) != NULL) {
            tpx_str_copy(out->engine, sizeof(out->engine), "sglang");
            out->tp = field(at + sizeof(sgl) - 2, eol, "tp_size");
            out->pp = field(at + sizeof(sgl) - 2, eol, "pp_size");
            out->line = line;
            return TPX_OK;
        }
        p = eol + 1;
    }
    return tpx_err_set(err, TPX_EINVAL,
                       "%s: no vLLM 'Initializing a V1 LLM engine' or SGLang "
                       "'server_args=ServerArgs(' line",
                       name);
}

enum tpx_code dg_startup_load(struct dg_startup *out, const char *path, struct tpx_err *err)
{
    char *data;
    size_t len;
    enum tpx_code rc;

    if (tpx_read_file(path, DG_MAX_FILE, &data, &len, err) != TPX_OK)
        return err->code;
    rc = dg_startup_parse(out, data, len, path, err);
    free(data);
    return rc;
}
