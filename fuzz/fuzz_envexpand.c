/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_envexpand.c - libFuzzer target for common/envexpand.h. The input is an env list and a
 * word: lines "NAME=VALUE" (a line "NAME" alone is a valueFrom variable), then a line "--", then
 * the word. The env goes through tpx_env_resolve_list(), the word through tpx_env_kube_expand()
 * and tpx_env_shell_expand() into a small buffer. Any crash, overrun or sanitizer report is a bug;
 * an answer of OK must come with a NUL-terminated result that fits. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/envexpand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_VARS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tpx_env_var vars[MAX_VARS];
    size_t nvars = 0;
    char *text = malloc(size + 1);
    char *word;
    char *line;
    char store[512];
    char kube[256];
    char out[64];

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    word = strstr(text, "\n--\n");
    if (word) {
        *word = '\0';
        word += 4;
    } else {
        word = text; /* no env */
    }
    line = word == text ? NULL : text;
    while (line && *line && nvars < MAX_VARS) {
        char *nl = strchr(line, '\n');
        char *eq;
        if (nl)
            *nl = '\0';
        eq = strchr(line, '=');
        if (eq)
            *eq = '\0';
        vars[nvars].name = line;
        vars[nvars].value = eq ? eq + 1 : NULL;
        nvars++;
        line = nl ? nl + 1 : NULL;
    }
    tpx_env_resolve_list(vars, nvars, store, sizeof(store));
    if (tpx_env_kube_expand(word, vars, nvars, kube, sizeof(kube)) == TPX_ENV_OK &&
        strlen(kube) >= sizeof(kube))
        abort();
    if (tpx_env_shell_expand(kube, vars, nvars, out, sizeof(out)) == TPX_ENV_OK &&
        strlen(out) >= sizeof(out))
        abort();
    if (tpx_env_shell_expand(word, vars, nvars, out, sizeof(out)) == TPX_ENV_OK &&
        strlen(out) >= sizeof(out))
        abort();
    free(text);
    return 0;
}
