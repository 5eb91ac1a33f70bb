/* SPDX-License-Identifier: Apache-2.0 */
/* common/cmdline.c - a small POSIX-shell word reader for engine command lines: quotes, escapes,
 * expansions kept whole, separators, redirections, comments, and nested `sh -c` scripts. It
 * never runs or expands anything. libc only. */
#include "common/cmdline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

/* Where the words of the current simple command stand, to find a shell's -c script. */
enum sh_at {
    SH_START,  /* no command word yet (assignments and wrappers such as exec do not count) */
    SH_OPTS,   /* the command is a shell: reading its options */
    SH_OPTARG, /* the next word is the argument of a shell option (-o pipefail) */
    SH_LAUNCH, /* the command is an MPI launcher (mpirun, srun): its options, then a command */
    SH_NONE,   /* anything else, or a shell past its script */
};

struct shell {
    enum sh_at at;
    bool dash_c;   /* one of its option clusters had 'c' */
    bool endopts;  /* "--" seen */
    unsigned skip; /* SH_LAUNCH: words left of the option being read (-n 8, --mca a b) */
};

/* One script being read: argv[argi] itself, or a copy of a word inside another script. */
struct src {
    const char *s;
    bool copy;     /* s is a word's copy: token offsets are base */
    size_t base;   /* offset in argv[argi] of that word */
    int depth;     /* 0: an argv element; 1: a -c script element; more: nested scripts */
    unsigned tags; /* flags every token of this script gets */
};

struct lexer {
    struct tpx_cmdline *cl;
    size_t argi;
    size_t cmd;
    enum tpx_code rc; /* first failure: later appends are skipped */
    struct tpx_err *err;
};

static enum tpx_code lex(struct lexer *lx, const struct src *src, struct shell *sh);

void tpx_cmdline_init(struct tpx_cmdline *cl)
{
    memset(cl, 0, sizeof(*cl));
    /* the caps are checked first in put() and push_token(), with clearer messages */
    tpx_buf_init(&cl->text_, TPX_CMDLINE_MAX_BYTES + 1);
    tpx_buf_init(&cl->toks_, (TPX_CMDLINE_MAX_TOKENS + 1) * sizeof(struct tpx_cmdline_tok));
}

void tpx_cmdline_release(struct tpx_cmdline *cl)
{
    tpx_buf_release(&cl->text_);
    tpx_buf_release(&cl->toks_);
    tpx_cmdline_init(cl);
}

/* ---- the words -------------------------------------------------------------------------------
 */

/* Character classes, one table lookup per byte: the scanner's hot loop. */
enum { C_END = 1, C_BLANK = 2, C_OP = 4, C_QUOTE = 8 };

static const unsigned char cclass[256] = {
    [0] = C_END,      [' '] = C_BLANK, ['\t'] = C_BLANK, ['\r'] = C_BLANK, ['\v'] = C_BLANK,
    ['\f'] = C_BLANK, ['\n'] = C_OP,   [';'] = C_OP,     ['&'] = C_OP,     ['|'] = C_OP,
    ['('] = C_OP,     [')'] = C_OP,    ['<'] = C_OP,     ['>'] = C_OP,     ['\\'] = C_QUOTE,
    ['\''] = C_QUOTE, ['"'] = C_QUOTE, ['$'] = C_QUOTE,  ['`'] = C_QUOTE,
};

static bool is_class(char c, unsigned classes)
{
    return (cclass[(unsigned char)c] & classes) != 0;
}

static bool is_blank(char c)
{
    return is_class(c, C_BLANK);
}

static bool is_op(char c)
{
    return is_class(c, C_OP);
}

static bool is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

/* Append to b unless that would pass max bytes (then false). Usually one compare and a memcpy:
 * tpx_cmdline_split() reserves room up front. */
static bool append(struct lexer *lx, struct tpx_buf *b, const void *p, size_t n, size_t max)
{
    if (lx->rc != TPX_OK)
        return true;
    if (n > max - b->len)
        return false;
    if (n < b->alloc - b->len)
        tpx_buf_put(b, p, n);
    else
        lx->rc = tpx_buf_add(b, p, n, lx->err);
    return true;
}

static void put(struct lexer *lx, const char *p, size_t n)
{
    if (!append(lx, &lx->cl->text_, p, n, TPX_CMDLINE_MAX_BYTES))
        lx->rc = tpx_err_set(lx->err, TPX_ETOOBIG, "command line: more than %zu bytes of words",
                             TPX_CMDLINE_MAX_BYTES);
}

/* Copy s[i] (an opening '(' or '{') through its matching close; quotes inside are skipped over.
 * Returns the index after it. */
static size_t copy_balanced(struct lexer *lx, const char *s, size_t i, unsigned *flags)
{
    char open = s[i];
    char close = open == '(' ? ')' : '}';
    size_t depth = 0;
    size_t from = i;

    for (; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1]) {
            i++;
        } else if (s[i] == '\'' || s[i] == '"') {
            char q = s[i];
            while (s[i + 1] && s[i + 1] != q)
                i += s[i + 1] == '\\' && q == '"' && s[i + 2] ? 2 : 1;
            if (!s[i + 1])
                break;
            i++;
        } else if (s[i] == open) {
            depth++;
        } else if (s[i] == close && --depth == 0) {
            i++;
            put(lx, s + from, i - from);
            return i;
        }
    }
    *flags |= TPX_CMDLINE_UNTERMINATED;
    put(lx, s + from, strlen(s + from));
    return from + strlen(s + from);
}

/* s[i] is '$' or '`': copy the expansion verbatim. Returns the index after it. */
static size_t copy_expansion(struct lexer *lx, const char *s, size_t i, unsigned *flags)
{
    size_t from = i;

    if (s[i] == '`') {
        for (i++; s[i] && s[i] != '`'; i++) {
            if (s[i] == '\\' && s[i + 1])
                i++;
        }
        if (s[i])
            i++;
        else
            *flags |= TPX_CMDLINE_UNTERMINATED;
        put(lx, s + from, i - from);
        *flags |= TPX_CMDLINE_EXPANDS;
        return i;
    }
    if (s[i + 1] == '(' || s[i + 1] == '{') {
        put(lx, "$", 1);
        *flags |= TPX_CMDLINE_EXPANDS;
        return copy_balanced(lx, s, i + 1, flags);
    }
    if (is_name_start(s[i + 1])) {
        for (i++; is_name_char(s[i]); i++)
            ;
    } else if (s[i + 1] && strchr("@*#?-$!0123456789", s[i + 1])) {
        i += 2;
    } else {
        put(lx, "$", 1); /* a lone '$' is itself */
        return i + 1;
    }
    put(lx, s + from, i - from);
    *flags |= TPX_CMDLINE_EXPANDS;
    return i;
}

/* Read one word from s[*pos] (not a blank or an operator) into the text store, quotes and
 * escapes removed. Returns its flags. */
static unsigned read_word(struct lexer *lx, const char *s, size_t *pos)
{
    size_t i = *pos;
    unsigned flags = 0;

    while (!is_class(s[i], C_END | C_BLANK | C_OP)) {
        char c = s[i];

        if (c == '\\') {
            if (s[i + 1] == '\n') { /* a line continuation joins the two lines */
                i += 2;
                continue;
            }
            flags |= TPX_CMDLINE_QUOTED;
            if (s[i + 1])
                i++;
            put(lx, s + i, 1); /* a trailing backslash stays as itself */
            i++;
        } else if (c == '\'') {
            size_t from = ++i;
            flags |= TPX_CMDLINE_QUOTED;
            while (s[i] && s[i] != '\'') {
                if (s[i] == '$' && s[i + 1] == '(')
                    flags |= TPX_CMDLINE_EXPANDS;
                i++;
            }
            put(lx, s + from, i - from);
            if (s[i])
                i++;
            else
                flags |= TPX_CMDLINE_UNTERMINATED;
        } else if (c == '"') {
            flags |= TPX_CMDLINE_QUOTED;
            for (i++; s[i] && s[i] != '"';) {
                if (s[i] == '\\' && s[i + 1] && strchr("$`\"\\\n", s[i + 1])) {
                    if (s[i + 1] != '\n')
                        put(lx, s + i + 1, 1);
                    i += 2;
                } else if (s[i] == '$' || s[i] == '`') {
                    i = copy_expansion(lx, s, i, &flags);
                } else {
                    put(lx, s + i, 1);
                    i++;
                }
            }
            if (s[i])
                i++;
            else
                flags |= TPX_CMDLINE_UNTERMINATED;
        } else if (c == '$' || c == '`') {
            i = copy_expansion(lx, s, i, &flags);
        } else {
            size_t from = i;
            while (!is_class(s[i], C_END | C_BLANK | C_OP | C_QUOTE))
                i++;
            put(lx, s + from, i - from);
        }
    }
    *pos = i;
    return flags;
}

/* ---- which word is a shell's script ---------------------------------------------------------
 */

static bool word_is(const char *w, const char *const *set)
{
    for (; *set; set++) {
        if (strcmp(w, *set) == 0)
            return true;
    }
    return false;
}

/* Feed the next word of the current command; true when it is the shell's -c script. */
static bool shell_word(struct shell *sh, const char *w)
{
    static const char *const shells[] = {"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", NULL};
    static const char *const wrappers[] = {"exec", "env",  "nohup", "command",   "busybox",
                                           "time", "nice", "tini",  "dumb-init", NULL};
    /* MPI launchers run the command after their options (Open MPI mpirun(1), Slurm srun(1)) */
    static const char *const launchers[] = {"mpirun", "mpiexec", "orterun", "srun", NULL};
    /* their options that take a value in the next word (--mca and -gmca take two); any other
     * option is taken to have none, and an unknown one with a value only ends the search for a
     * command early, as if no launcher had been named */
    static const char *const launch_arg[] = {"-n",
                                             "-np",
                                             "--np",
                                             "-c",
                                             "-N",
                                             "-H",
                                             "--host",
                                             "-host",
                                             "-hostfile",
                                             "--hostfile",
                                             "-machinefile",
                                             "--machinefile",
                                             "-x",
                                             "--map-by",
                                             "-map-by",
                                             "--bind-to",
                                             "-bind-to",
                                             "--rank-by",
                                             "-npernode",
                                             "--npernode",
                                             "-wdir",
                                             "--wdir",
                                             "--prefix",
                                             "-output-filename",
                                             "--output-filename",
                                             "--ntasks",
                                             "--nodes",
                                             "--cpus-per-task",
                                             "--mpi",
                                             NULL};
    static const char *const launch_arg2[] = {"--mca", "-mca", "--gmca", "-gmca", NULL};
    const char *base = strrchr(w, '/');

    switch (sh->at) {
    case SH_LAUNCH:
        if (sh->skip > 0) {
            sh->skip--;
            return false;
        }
        /* an option, or a $(...) that prints some (Dynamo: $([ ... ] && echo --allow-run-...)) */
        if (w[0] == '-' || strncmp(w, "$(", 2) == 0) {
            sh->skip = word_is(w, launch_arg2) ? 2 : word_is(w, launch_arg) ? 1 : 0;
            return false;
        }
        sh->at = SH_START; /* the command it launches */
        return shell_word(sh, w);
    case SH_START:
        base = base ? base + 1 : w;
        if (word_is(base, launchers)) {
            *sh = (struct shell){SH_LAUNCH, false, false, 0};
            return false;
        }
        if (w[0] == '-' || word_is(base, wrappers))
            return false; /* a wrapper or its option */
        if (is_name_start(w[0])) {
            const char *p = w;
            while (is_name_char(*p))
                p++;
            if (*p == '=')
                return false; /* VAR=value before the command */
        }
        *sh = (struct shell){word_is(base, shells) ? SH_OPTS : SH_NONE, false, false, 0};
        return false;
    case SH_OPTARG:
        sh->at = SH_OPTS;
        return false;
    case SH_OPTS:
        if (!sh->endopts && strcmp(w, "--") == 0) {
            sh->endopts = true;
            return false;
        }
        /* an option has no blanks: "-x\n..." after -c is taken for the script it must be */
        if (!sh->endopts && (w[0] == '-' || w[0] == '+') && w[1] &&
            !(sh->dash_c && strpbrk(w, " \t\n"))) {
            if (w[0] == '-' && w[1] == '-') {
                if (strcmp(w, "--rcfile") == 0 || strcmp(w, "--init-file") == 0)
                    sh->at = SH_OPTARG;
                return false;
            }
            if (w[0] == '-' && strchr(w + 1, 'c'))
                sh->dash_c = true;
            if (strchr(w + 1, 'o') || strchr(w + 1, 'O'))
                sh->at = SH_OPTARG;
            return false;
        }
        sh->at = SH_NONE; /* the script, or a script file to run */
        return sh->dash_c;
    case SH_NONE:
        break;
    }
    return false;
}

/* ---- tokens ----------------------------------------------------------------------------------
 */

static void push_token(struct lexer *lx, size_t len, size_t off, unsigned flags)
{
    struct tpx_cmdline_tok t = {NULL, len, lx->argi, off, lx->cmd, flags};

    put(lx, "", 1); /* the token's NUL */
    if (!append(lx, &lx->cl->toks_, &t, sizeof(t), TPX_CMDLINE_MAX_TOKENS * sizeof(t)))
        lx->rc = tpx_err_set(lx->err, TPX_ETOOBIG, "command line: more than %zu words",
                             TPX_CMDLINE_MAX_TOKENS);
    if (lx->rc == TPX_OK && (flags & TPX_CMDLINE_UNTERMINATED))
        lx->cl->nunterminated++;
}

static void end_command(struct lexer *lx, struct shell *sh)
{
    lx->cmd++;
    *sh = (struct shell){SH_START, false, false, 0};
}

/* A script is its own commands, and what follows it ($0, $1, ...) is none of them. */
static void read_script(struct lexer *lx, const struct src *src)
{
    struct shell inner = {SH_START, false, false, 0};

    lx->cmd++;
    if (lx->rc == TPX_OK)
        lx->rc = lex(lx, src, &inner);
    lx->cmd++;
}

/* The word text[start, len) of the text store is complete: a token, or a script to split. */
static void end_word(struct lexer *lx, const struct src *src, struct shell *sh, size_t start,
                     size_t off, unsigned flags)
{
    struct tpx_buf *text = &lx->cl->text_;
    struct src inner;
    char *copy;

    put(lx, "", 0); /* a word with nothing in it ('') has no NUL yet */
    if (lx->rc != TPX_OK)
        return;
    if (!shell_word(sh, text->data + start) || src->depth + 1 >= TPX_CMDLINE_MAX_DEPTH) {
        push_token(lx, text->len - start, src->copy ? src->base : off, flags | src->tags);
        return;
    }
    copy = malloc(text->len - start + 1);
    if (!copy) {
        lx->rc = tpx_err_set(lx->err, TPX_ENOMEM, "command line: out of memory");
        return;
    }
    memcpy(copy, text->data + start, text->len - start + 1);
    text->len = start; /* the script's words replace it */
    text->data[start] = '\0';
    inner = (struct src){copy, true, src->copy ? src->base : off, src->depth + 1,
                         src->tags | TPX_CMDLINE_SCRIPT};
    read_script(lx, &inner);
    free(copy);
}

/* Skip a redirection operator at s[i] and its target word. Returns the index after them. */
static size_t skip_redirect(struct lexer *lx, const char *s, size_t i)
{
    size_t mark = lx->cl->text_.len;

    while (s[i] == '<' || s[i] == '>' || s[i] == '&' || s[i] == '|' || s[i] == '-')
        i++;
    while (is_blank(s[i]))
        i++;
    if (s[i] && !is_op(s[i]))
        read_word(lx, s, &i);
    if (lx->rc == TPX_OK) {
        lx->cl->text_.len = mark;
        lx->cl->text_.data[mark] = '\0';
    }
    return i;
}

static bool all_digits(const char *p, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (p[k] < '0' || p[k] > '9')
            return false;
    }
    return n > 0;
}

static enum tpx_code lex(struct lexer *lx, const struct src *src, struct shell *sh)
{
    const char *s = src->s;
    size_t i = 0;

    while (s[i] && lx->rc == TPX_OK) {
        size_t start;
        size_t at;
        unsigned flags;

        if (is_blank(s[i])) {
            i++;
        } else if (s[i] == '\\' && s[i + 1] == '\n') {
            i += 2;
        } else if (s[i] == '#') {
            while (s[i] && s[i] != '\n')
                i++;
        } else if (s[i] == '<' || s[i] == '>' || (s[i] == '&' && s[i + 1] == '>')) {
            i = skip_redirect(lx, s, i);
        } else if (is_op(s[i])) {
            end_command(lx, sh);
            i++;
        } else {
            start = lx->cl->text_.len;
            at = i;
            flags = read_word(lx, s, &i);
            if (lx->rc != TPX_OK)
                break;
            if ((s[i] == '<' || s[i] == '>') && !flags &&
                all_digits(lx->cl->text_.data + start, lx->cl->text_.len - start)) {
                lx->cl->text_.len = start; /* the 2 of 2>&1 */
                lx->cl->text_.data[start] = '\0';
                i = skip_redirect(lx, s, i);
                continue;
            }
            end_word(lx, src, sh, start, at, flags);
        }
    }
    return lx->rc;
}

/* ---- the list --------------------------------------------------------------------------------
 */

/* An argv element that a shell reads as its own options or script is one word as it stands. */
static void read_element(struct lexer *lx, const char *s, struct shell *sh)
{
    struct src top = {s, false, 0, 0, 0};

    if (sh->at == SH_OPTS || sh->at == SH_OPTARG || !s[0]) {
        if (shell_word(sh, s)) {
            top.depth = 1;
            top.tags = TPX_CMDLINE_SCRIPT;
            read_script(lx, &top);
            return;
        }
        put(lx, s, strlen(s));
        push_token(lx, strlen(s), 0, 0);
        return;
    }
    lx->rc = lex(lx, &top, sh);
}

enum tpx_code tpx_cmdline_split(struct tpx_cmdline *cl, const char *const *argv, size_t n,
                                struct tpx_err *err)
{
    struct lexer lx = {cl, 0, 0, TPX_OK, err};
    struct shell sh = {SH_START, false, false, 0};
    struct tpx_cmdline_tok *tok;
    const char *p;
    size_t total = 0;

    for (size_t a = 0; a < n; a++)
        total += argv[a] ? strlen(argv[a]) + 1 : 0;
    /* usually one allocation each: words are no longer than their elements, and few */
    if (tpx_buf_reserve(&cl->text_, total < TPX_CMDLINE_MAX_BYTES ? total : 0, err) != TPX_OK ||
        tpx_buf_reserve(&cl->toks_, (total < 512 * 3 ? total / 3 + 4 : 512) * sizeof(*tok), err) !=
            TPX_OK)
        goto fail;
    for (size_t a = 0; a < n && lx.rc == TPX_OK; a++) {
        if (!argv[a])
            continue;
        lx.argi = a;
        read_element(&lx, argv[a], &sh);
    }
    if (lx.rc != TPX_OK)
        goto fail;
    /* the texts lie one after another in token order, each with its NUL */
    tok = (struct tpx_cmdline_tok *)(void *)cl->toks_.data;
    cl->ntok = cl->toks_.len / sizeof(*tok);
    p = cl->text_.data;
    for (size_t k = 0; k < cl->ntok; k++) {
        tok[k].text = p;
        p += tok[k].len + 1;
    }
    cl->tok = tok;
    return TPX_OK;
fail:
    tpx_cmdline_release(cl);
    return err->code;
}

/* ---- flags -----------------------------------------------------------------------------------
 */

bool tpx_cmdline_is_option(const char *text)
{
    if (text[0] != '-' || text[1] == '\0')
        return false;
    return !((text[1] >= '0' && text[1] <= '9') || text[1] == '.');
}

bool tpx_cmdline_flag(const struct tpx_cmdline *cl, size_t i, const char *name,
                      struct tpx_cmdline_value *out)
{
    const struct tpx_cmdline_tok *t = &cl->tok[i];
    const char *s = t->text;
    bool fold = s[0] == '-' && s[1] == '-';
    size_t k;

    if (s[0] != '-')
        return false;
    for (k = 0; name[k]; k++) {
        if (s[k] != name[k] && !(fold && s[k] == '_' && name[k] == '-'))
            return false;
    }
    if (s[k] == '=') {
        *out = (struct tpx_cmdline_value){s + k + 1, t};
        return true;
    }
    if (s[k] != '\0')
        return false;
    *out = (struct tpx_cmdline_value){NULL, NULL};
    if (i + 1 < cl->ntok && cl->tok[i + 1].cmd == t->cmd &&
        !tpx_cmdline_is_option(cl->tok[i + 1].text))
        *out = (struct tpx_cmdline_value){cl->tok[i + 1].text, &cl->tok[i + 1]};
    return true;
}
