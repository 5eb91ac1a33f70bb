/* SPDX-License-Identifier: Apache-2.0 */
/* common/cmdline.h - engine command lines: a pod's argv (each container's command, then its args)
 * as one flat list of tokens, with `sh -c` scripts split by shell quoting rules, and the flag
 * lookup that vLLM's and SGLang's argparse would do on it. The one tokenizer behind workload/'s
 * TP/PP/DP inference and the engine info of `topox plan`. libc only; reentrant. */
#ifndef TPX_COMMON_CMDLINE_H
#define TPX_COMMON_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

/* Caps: Kubernetes keeps a whole object under ~1.5 MiB, so a real command line is far below
 * these; they only bound what a hostile manifest file can make us allocate. */
#define TPX_CMDLINE_MAX_BYTES ((size_t)16 << 20) /* token text in all */
#define TPX_CMDLINE_MAX_TOKENS ((size_t)1 << 20)
#define TPX_CMDLINE_MAX_DEPTH 8 /* sh -c scripts nested deeper stay one token each */

/* tpx_cmdline_tok.flags */
enum {
    /* holds $VAR, ${...}, $(...), $((...)) or `...` text, kept verbatim for a later resolver
     * (also $(VAR) inside single quotes: Kubernetes expands that before any shell runs) */
    TPX_CMDLINE_EXPANDS = 1u << 0,
    TPX_CMDLINE_QUOTED = 1u << 1,       /* some of it was quoted or backslash-escaped */
    TPX_CMDLINE_UNTERMINATED = 1u << 2, /* a quote, $( ${ or ` was still open at the end */
    TPX_CMDLINE_SCRIPT = 1u << 3,       /* read from a shell's -c script (any depth) */
};

/* One word as the program would receive it. */
struct tpx_cmdline_tok {
    const char *text; /* quotes and escapes removed, expansions verbatim; NUL-terminated */
    size_t len;       /* strlen(text) */
    size_t argi;      /* the argv element it was read from (for FILE:LINE messages) */
    size_t off;       /* byte offset in argv[argi] where it starts; inside a nested script, where
                         that script's word starts */
    size_t cmd;       /* simple-command number: it changes at ; && || | & ( ) and newlines, and
                         around each -c script, so a flag never takes a value across them */
    unsigned flags;   /* TPX_CMDLINE_* */
};

/*
 * How argv is read. Kubernetes runs no shell on command/args, but engines are often started by
 * one, or by a wrapper that hands an element to one, so every element is read as shell words:
 * an element without blanks, quotes, `$`, backslashes or ; & | ( ) < > # is one token as it
 * stands. A shell's -c script (sh, bash, dash, ... after exec/env/nohup wrappers, -c in any
 * option cluster such as -ec or -lc) is split again, also when it is a quoted word inside another
 * script, up to TPX_CMDLINE_MAX_DEPTH. An MPI launcher (mpirun, mpiexec, orterun, srun) is a
 * wrapper too: after its options (and the values of those it knows take one) comes the command.
 * Redirections (>f, 2>&1, <in) and # comments are dropped; separators only change tok.cmd. An empty
 * element is one empty token, as is '' or "". Unterminated quotes are not an error (a plain element
 * may hold an apostrophe; a shell would refuse the script): the quoted text runs to the end of its
 * element, and the token has TPX_CMDLINE_UNTERMINATED.
 *
 * Caller-allocated: tpx_cmdline_init(), then tpx_cmdline_split(), then tpx_cmdline_release().
 * tok[0, ntok) and their text are owned by the struct until release. Not thread-safe: one owner.
 */
struct tpx_cmdline {
    const struct tpx_cmdline_tok *tok;
    size_t ntok;
    size_t nunterminated; /* tokens with TPX_CMDLINE_UNTERMINATED */
    struct tpx_buf text_; /* private: every token's text, NUL after each */
    struct tpx_buf toks_; /* private: the token array */
};

/* Empty list. Cannot fail (allocates nothing). */
void tpx_cmdline_init(struct tpx_cmdline *cl);

/* Split argv[0, n) (NULL elements are skipped) into cl, which must be empty (just initialised or
 * released). TPX_ETOOBIG past the caps above, TPX_ENOMEM; on failure cl is left empty. */
enum tpx_code tpx_cmdline_split(struct tpx_cmdline *cl, const char *const *argv, size_t n,
                                struct tpx_err *err);

/* Free the tokens and empty cl. Safe to call twice. */
void tpx_cmdline_release(struct tpx_cmdline *cl);

/* Would argparse read text as an option? It starts with '-' and is neither "-" nor a negative
 * number ("-1", "-.5"). */
bool tpx_cmdline_is_option(const char *text);

/* A flag's value, borrowed from the tokens until tpx_cmdline_release(). */
struct tpx_cmdline_value {
    const char *text;                  /* NULL: the flag is given without a value */
    const struct tpx_cmdline_tok *tok; /* the token holding text (the flag's own for --f=v) */
};

/*
 * Is token i the flag name ("--tensor-parallel-size", "-tp": long names written with dashes)?
 * It matches "name" and "name=value"; in a long option '_' stands for '-' as vLLM accepts
 * ("--tensor_parallel_size=8"). On a match *out is the value: the text after '=', else the next
 * token when it is in the same command and is not an option, else none. Cannot fail.
 */
bool tpx_cmdline_flag(const struct tpx_cmdline *cl, size_t i, const char *name,
                      struct tpx_cmdline_value *out);

#endif
