/* SPDX-License-Identifier: Apache-2.0 */
/* common/envexpand.h - values from a container's environment, as they reach the engine: the
 * kubelet's $(VAR) expansion of command, args and env values, then the shell's $VAR, ${VAR},
 * ${VAR:-d}, ${VAR-d} and $((expr)) in a `sh -c` script. A pure resolver: nothing is read from
 * the process environment; what cannot be known is UNKNOWN, never 0 and never a guess. libc only;
 * reentrant. */
#ifndef TPX_COMMON_ENVEXPAND_H
#define TPX_COMMON_ENVEXPAND_H

#include <stdbool.h>
#include <stddef.h>

/* Longest value the resolver produces or reads (a variable, a word, a $(( )) expression); longer
 * is UNKNOWN. Real parallel sizes are a few bytes. */
#define TPX_ENV_MAX_LEN 4096u
#define TPX_ENV_MAX_DEPTH 8u /* nested ${A:-${B:-...}} and $(( ( ... ) )) deeper are UNKNOWN */

/* One variable of a container's env, in the order of the pod spec. value NULL: not known here
 * (valueFrom: a fieldRef, secretKeyRef, configMapKeyRef, resourceFieldRef). Borrowed. */
struct tpx_env_var {
    const char *name;
    const char *value;
};

enum tpx_env_rc {
    TPX_ENV_OK = 0,   /* resolved: out holds the text */
    TPX_ENV_UNKNOWN,  /* an unset or valueFrom variable, $(cmd), `cmd`, bad arithmetic, ... */
    TPX_ENV_TOO_LONG, /* the result or an input is over TPX_ENV_MAX_LEN (also unknown) */
};

/*
 * The kubelet's expansion of one command/args element or env value: $(NAME) becomes NAME's value
 * when env[0, n) defines it (the last definition wins), $$ becomes $, and every other $ is kept.
 * A $(NAME) that env does not define stays as written, as the kubelet leaves it; one whose value
 * is NULL (valueFrom) makes the whole text UNKNOWN. out (cap bytes, cap > 0) is always
 * NUL-terminated; on TPX_ENV_TOO_LONG it holds a truncated copy.
 */
enum tpx_env_rc tpx_env_kube_expand(const char *in, const struct tpx_env_var *env, size_t n,
                                    char *out, size_t cap);

/*
 * A container's env as the process sees it: each value kube-expanded with the variables defined
 * before it (so A=$(A) and forward references stay as written), values that are UNKNOWN or too
 * long become NULL. vars (n entries) are rewritten in place; values point into store (cap
 * bytes); when store runs out, the rest become NULL. Returns n.
 */
size_t tpx_env_resolve_list(struct tpx_env_var *vars, size_t n, char *store, size_t cap);

/*
 * The shell's expansion of one word (quotes already removed) of a `sh -c` script, with env as
 * the shell's variables: $NAME, ${NAME}, ${NAME:-word}, ${NAME-word}, ${NAME:=word} and
 * ${NAME=word} (as :- and -), $((expr)) with integers, + - * / % unary - + and parentheses, names
 * inside it with or without $. Unset or NULL variables are UNKNOWN (the shell would give "" or 0:
 * a guess), as are $(cmd), `cmd`, $1, $@, other ${...} forms, division by zero and overflow of a
 * 64-bit signed value. Text outside expansions is copied.
 */
enum tpx_env_rc tpx_env_shell_expand(const char *word, const struct tpx_env_var *env, size_t n,
                                     char *out, size_t cap);

/* Does text hold a shell or kubelet expansion ($ followed by a name, {, ( or a digit)? */
bool tpx_env_has_expansion(const char *text);

#endif
