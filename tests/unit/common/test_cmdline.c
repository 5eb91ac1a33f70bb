/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/common/test_cmdline.c - the engine command-line tokenizer: quotes, escapes, nested
 * sh -c, separators, redirections, comments, expansions kept whole, empty strings, unterminated
 * quotes, very long and deeply nested input, and the flag lookup both callers use. */
#include "common/cmdline.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define ARGV_MAX 10

static size_t count_argv(const char *const *argv)
{
    size_t n = 0;

    while (n < ARGV_MAX && argv[n])
        n++;
    return n;
}

/* The tokens as "[a] [b] ; [c]": " ; " where the command number changes. */
static void render(const struct tpx_cmdline *cl, char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < cl->ntok && len < size; i++) {
        const char *sep = i == 0 ? "" : cl->tok[i].cmd != cl->tok[i - 1].cmd ? " ; " : " ";
        int n = snprintf(out + len, size - len, "%s[%s]", sep, cl->tok[i].text);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

static void split_ok(struct tpx_cmdline *cl, const char *const *argv, size_t n)
{
    struct tpx_err err = TPX_ERR_INIT;

    tpx_cmdline_init(cl);
    cr_assert_eq(tpx_cmdline_split(cl, argv, n, &err), TPX_OK, "%s", err.msg);
}

Test(tpx_cmdline, words_as_the_program_gets_them)
{
    static const struct {
        const char *argv[ARGV_MAX];
        const char *want;
    } cases[] = {
        /* plain argv: one token per element */
        {{"vllm", "serve", "m", "--tp", "8"}, "[vllm] [serve] [m] [--tp] [8]"},
        {{"sh", "-c", "vllm serve --tp 8"}, "[sh] [-c] ; [vllm] [serve] [--tp] [8]"},
        /* quotes */
        {{"sh", "-c", "echo 'a b' 'c\"d' \"e 'f'\" g'h'\"i\""},
         "[sh] [-c] ; [echo] [a b] [c\"d] [e 'f'] [ghi]"},
        /* escapes: in double quotes only $ ` \" \\ and newline are special */
        {{"sh", "-c", "echo \"a \\\"b\\\" \\$x \\\\ \\q\" a\\ b c\\'d \\#e"},
         "[sh] [-c] ; [echo] [a \"b\" $x \\ \\q] [a b] [c'd] [#e]"},
        /* separators end a command; blanks around them do not matter */
        {{"sh", "-c", "a;b&&c||d|e&f\ng ( h ) i"},
         "[sh] [-c] ; [a] ; [b] ; [c] ; [d] ; [e] ; [f] ; [g] ; [h] ; [i]"},
        /* a line continuation joins lines; comments and redirections are dropped */
        {{"sh", "-c", "vllm serve \\\n  --tp 8 > /log 2>&1 </dev/null # --tp 4\necho x#y"},
         "[sh] [-c] ; [vllm] [serve] [--tp] [8] ; [echo] [x#y]"},
        {{"sh", "-c", "echo 2 >f 3"}, "[sh] [-c] ; [echo] [2] [3]"},
        /* expansions stay whole, with their blanks, quotes and parentheses */
        {{"sh", "-c",
          "x --tp $(TP) ${X:-a b} $((2 * (1 + 3))) $HOME `nproc` \"$(echo 'x y')\" $1 $ "},
         "[sh] [-c] ; [x] [--tp] [$(TP)] [${X:-a b}] [$((2 * (1 + 3)))] [$HOME] [`nproc`] "
         "[$(echo 'x y')] [$1] [$]"},
        {{"--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000"},
         "[--dist-init-addr] [$(LWS_LEADER_ADDRESS):20000]"},
        /* nested scripts are split too; what follows a script is not part of it */
        {{"sh", "-c", "bash -lc 'vllm --tp \"8\"'; echo", "argv0", "x"},
         "[sh] [-c] ; [bash] [-lc] ; [vllm] [--tp] [8] ; [echo] ; [argv0] [x]"},
        {{"sh", "-c", "exec bash -c \"vllm --tp \\\"4\\\" --pp 2\""},
         "[sh] [-c] ; [exec] [bash] [-c] ; [vllm] [--tp] [4] [--pp] [2]"},
        /* wrappers, assignments and shell options before -c */
        {{"/usr/bin/env", "FOO=1", "/bin/bash", "-o", "pipefail", "-ec", "vllm --tp 2"},
         "[/usr/bin/env] [FOO=1] [/bin/bash] [-o] [pipefail] [-ec] ; [vllm] [--tp] [2]"},
        {{"sh", "-c", "--", "vllm --tp 2"}, "[sh] [-c] [--] ; [vllm] [--tp] [2]"},
        /* an MPI launcher runs the command after its options (Dynamo's TensorRT-LLM leader) */
        {{"sh", "-c",
          "mpirun $([ \"$(id -u)\" = \"0\" ] && echo --allow-run-as-root) --oversubscribe -n 8 "
          "-H a,b --mca pml ob1 -x HOME bash -c 'trtllm-llmapi-launch python3 --tp 8'"},
         "[sh] [-c] ; [mpirun] [$([ \"$(id -u)\" = \"0\" ] && echo --allow-run-as-root)] "
         "[--oversubscribe] [-n] [8] [-H] [a,b] [--mca] [pml] [ob1] [-x] [HOME] [bash] [-c] ; "
         "[trtllm-llmapi-launch] [python3] [--tp] [8]"},
        {{"srun", "-N", "2", "--mpi=pmix", "bash", "-c", "vllm --tp 2"},
         "[srun] [-N] [2] [--mpi=pmix] [bash] [-c] ; [vllm] [--tp] [2]"},
        /* an option it does not know to take a value: its value is taken for the command */
        {{"mpirun", "--cpus-per-proc", "2", "bash", "-c", "vllm"},
         "[mpirun] [--cpus-per-proc] [2] [bash] [-c] [vllm]"},
        /* a shell running a script file is just a command */
        {{"bash", "run.sh", "--tp", "8"}, "[bash] [run.sh] [--tp] [8]"},
        /* an element with blanks that no shell was named for is still read as words */
        {{"/entry.sh", "vllm serve --tp 8"}, "[/entry.sh] [vllm] [serve] [--tp] [8]"},
        /* empty strings are arguments; blanks alone are none */
        {{"", "a", "''", "\"\"", "  ", "b"}, "[] [a] [] [] [b]"},
        {{"sh", "-c", ""}, "[sh] [-c]"},
        {{"sh", "-c", "echo '' \"\" x''"}, "[sh] [-c] ; [echo] [] [] [x]"},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct tpx_cmdline cl;
        char got[512];

        split_ok(&cl, cases[i].argv, count_argv(cases[i].argv));
        render(&cl, got, sizeof(got));
        cr_expect_str_eq(got, cases[i].want, "case %zu", i);
        cr_expect_eq(cl.nunterminated, 0, "case %zu", i);
        tpx_cmdline_release(&cl);
    }
}

Test(tpx_cmdline, unterminated_quotes_run_to_the_end_of_the_element)
{
    static const struct {
        const char *argv[ARGV_MAX];
        const char *want;
        size_t unterminated;
    } cases[] = {
        {{"sh", "-c", "vllm --tp '8", "x"}, "[sh] [-c] ; [vllm] [--tp] [8] ; [x]", 1},
        {{"--system-prompt", "You're welcome"}, "[--system-prompt] [Youre welcome]", 1},
        {{"sh", "-c", "echo \"abc; d"}, "[sh] [-c] ; [echo] [abc; d]", 1},
        {{"sh", "-c", "echo $(foo 'x"}, "[sh] [-c] ; [echo] [$(foo 'x]", 1},
        {{"sh", "-c", "echo ${X `y"}, "[sh] [-c] ; [echo] [${X `y]", 1},
        {{"sh", "-c", "echo `y"}, "[sh] [-c] ; [echo] [`y]", 1},
        {{"a\\", "'", "\""}, "[a\\] [] []", 2},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct tpx_cmdline cl;
        char got[512];
        size_t flagged = 0;

        split_ok(&cl, cases[i].argv, count_argv(cases[i].argv));
        render(&cl, got, sizeof(got));
        cr_expect_str_eq(got, cases[i].want, "case %zu", i);
        cr_expect_eq(cl.nunterminated, cases[i].unterminated, "case %zu", i);
        for (size_t k = 0; k < cl.ntok; k++)
            flagged += (cl.tok[k].flags & TPX_CMDLINE_UNTERMINATED) != 0;
        cr_expect_eq(flagged, cases[i].unterminated, "case %zu", i);
        tpx_cmdline_release(&cl);
    }
}

Test(tpx_cmdline, flags_say_how_a_word_was_written)
{
    static const struct {
        const char *word; /* one argv element, split as shell words */
        unsigned flags;   /* of its only token */
    } cases[] = {
        {"plain", 0},
        {"'a'", TPX_CMDLINE_QUOTED},
        {"a\\b", TPX_CMDLINE_QUOTED},
        {"$X", TPX_CMDLINE_EXPANDS},
        {"8${X}", TPX_CMDLINE_EXPANDS},
        {"\"$(TP)\"", TPX_CMDLINE_EXPANDS | TPX_CMDLINE_QUOTED},
        /* Kubernetes expands $(VAR) before any shell sees the quotes */
        {"'$(TP)'", TPX_CMDLINE_EXPANDS | TPX_CMDLINE_QUOTED},
        {"'$TP'", TPX_CMDLINE_QUOTED},
        {"\\$TP", TPX_CMDLINE_QUOTED},
        {"$", 0},
        {"'x", TPX_CMDLINE_QUOTED | TPX_CMDLINE_UNTERMINATED},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct tpx_cmdline cl;
        const char *argv[] = {cases[i].word};

        split_ok(&cl, argv, 1);
        cr_assert_eq(cl.ntok, 1, "case %zu", i);
        cr_expect_eq(cl.tok[0].flags, cases[i].flags, "case %zu (%s): %#x", i, cases[i].word,
                     cl.tok[0].flags);
        tpx_cmdline_release(&cl);
    }
}

Test(tpx_cmdline, tokens_remember_their_element)
{
    static const char *const argv[] = {"bash", "-c", "  vllm --tp 8", "argv0"};
    static const char *const nested[] = {"sh", "-c", "echo; sh -c 'vllm  --pp 2'"};
    struct tpx_cmdline cl;

    split_ok(&cl, argv, NELEM(argv));
    cr_assert_eq(cl.ntok, 6);
    cr_expect_str_eq(cl.tok[3].text, "--tp");
    cr_expect_eq(cl.tok[3].argi, 2);
    cr_expect_eq(cl.tok[3].off, 7);
    cr_expect(cl.tok[3].flags & TPX_CMDLINE_SCRIPT);
    cr_expect_eq(cl.tok[5].argi, 3);
    cr_expect_not(cl.tok[5].flags & TPX_CMDLINE_SCRIPT);
    cr_expect_not(cl.tok[0].flags & TPX_CMDLINE_SCRIPT);
    tpx_cmdline_release(&cl);

    /* a nested script's tokens point at the word that held it */
    split_ok(&cl, nested, NELEM(nested));
    cr_assert_eq(cl.ntok, 8);
    cr_expect_str_eq(cl.tok[6].text, "--pp");
    cr_expect_eq(cl.tok[6].argi, 2);
    cr_expect_eq(cl.tok[6].off, 12);
    cr_expect_eq(cl.tok[6].len, 4);
    tpx_cmdline_release(&cl);
    tpx_cmdline_release(&cl); /* twice is a no-op */
}

/* The value of the first token that is flag name in argv, "(none)" for a flag without a value,
 * "(absent)" when no token is that flag. */
static const char *flag_value(const char *const *argv, size_t n, const char *name, char *buf,
                              size_t size)
{
    struct tpx_cmdline cl;
    const char *r = "(absent)";

    split_ok(&cl, argv, n);
    for (size_t i = 0; i < cl.ntok; i++) {
        struct tpx_cmdline_value v;
        if (tpx_cmdline_flag(&cl, i, name, &v)) {
            r = v.text ? v.text : "(none)";
            break;
        }
    }
    snprintf(buf, size, "%s", r);
    tpx_cmdline_release(&cl);
    return buf;
}

Test(tpx_cmdline, flag_lookup_as_argparse_reads_it)
{
    static const struct {
        const char *argv[ARGV_MAX];
        const char *name;
        const char *want;
    } cases[] = {
        {{"--tp", "8"}, "--tp", "8"},
        {{"--tp=8"}, "--tp", "8"},
        {{"-tp", "2"}, "-tp", "2"},
        {{"-tp=2"}, "-tp", "2"},
        {{"--tensor_parallel_size=8"}, "--tensor-parallel-size", "8"},
        {{"--tensor_parallel-size", "8"}, "--tensor-parallel-size", "8"},
        /* only the name is folded, and only in long options */
        {{"--max_model_len=8_192"}, "--max-model-len", "8_192"},
        {{"-t_p", "2"}, "-t-p", "(absent)"},
        /* prefixes and longer names are other flags */
        {{"--tp-size", "8"}, "--tp", "(absent)"},
        {{"--tp", "8"}, "--tp-size", "(absent)"},
        {{"tp", "8"}, "tp", "(absent)"},
        /* the value must not be an option, but may be a negative number or empty */
        {{"--trust-remote-code", "--dtype", "half"}, "--trust-remote-code", "(none)"},
        {{"--trust-remote-code", "--dtype", "half"}, "--dtype", "half"},
        {{"--x", "-1"}, "--x", "-1"},
        {{"--x", "-"}, "--x", "-"},
        {{"--x", "--"}, "--x", "(none)"},
        {{"--x", ""}, "--x", ""},
        {{"--x="}, "--x", ""},
        {{"--x"}, "--x", "(none)"},
        /* never across a command or a script's end */
        {{"sh", "-c", "vllm --tp", "8"}, "--tp", "(none)"},
        {{"sh", "-c", "vllm --tp; 8"}, "--tp", "(none)"},
        {{"sh", "-c", "vllm --tp '8'"}, "--tp", "8"},
        {{"sh", "-c", "vllm '--tp 8'"}, "--tp", "(absent)"},
        {{"-q", "fp8"}, "-q", "fp8"},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        char buf[64];
        flag_value(cases[i].argv, count_argv(cases[i].argv), cases[i].name, buf, sizeof(buf));
        cr_expect_str_eq(buf, cases[i].want, "case %zu (%s)", i, cases[i].name);
    }
}

Test(tpx_cmdline, option_or_value)
{
    cr_expect(tpx_cmdline_is_option("--tp"));
    cr_expect(tpx_cmdline_is_option("-q"));
    cr_expect(tpx_cmdline_is_option("--"));
    cr_expect_not(tpx_cmdline_is_option("-"));
    cr_expect_not(tpx_cmdline_is_option("-3"));
    cr_expect_not(tpx_cmdline_is_option("-.5"));
    cr_expect_not(tpx_cmdline_is_option("8"));
    cr_expect_not(tpx_cmdline_is_option(""));
}

Test(tpx_cmdline, very_long_input)
{
    const size_t nwords = 200000;
    const size_t wordlen = (size_t)1 << 20;
    char *script = malloc(nwords * 2 + 16);
    char *word = malloc(wordlen + 1);
    const char *argv[4];
    struct tpx_cmdline cl;
    size_t len = 0;

    cr_assert(script && word);
    for (size_t i = 0; i < nwords; i++) {
        script[len++] = i % 2 ? '8' : 'x';
        script[len++] = ' ';
    }
    memcpy(script + len, "--tp 4", 7);
    memset(word, 'w', wordlen);
    word[wordlen] = '\0';
    argv[0] = "sh";
    argv[1] = "-c";
    argv[2] = script;
    argv[3] = word;
    split_ok(&cl, argv, 4);
    cr_assert_eq(cl.ntok, 2 + nwords + 2 + 1);
    cr_expect_str_eq(cl.tok[cl.ntok - 2].text, "4");
    cr_expect_eq(cl.tok[cl.ntok - 1].len, wordlen);
    cr_expect_eq(strlen(cl.tok[cl.ntok - 1].text), wordlen);
    tpx_cmdline_release(&cl);
    free(script);
    free(word);
}

Test(tpx_cmdline, past_the_caps_is_a_clear_error)
{
    size_t n = TPX_CMDLINE_MAX_TOKENS + 1;
    char *many = malloc(n * 2 + 1);
    char *big = malloc(TPX_CMDLINE_MAX_BYTES + 2);
    const char *argv[1];
    struct tpx_cmdline cl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert(many && big);
    for (size_t i = 0; i < n; i++) {
        many[2 * i] = 'a';
        many[2 * i + 1] = ' ';
    }
    many[2 * n] = '\0';
    argv[0] = many;
    tpx_cmdline_init(&cl);
    cr_expect_eq(tpx_cmdline_split(&cl, argv, 1, &err), TPX_ETOOBIG);
    cr_expect_str_eq(err.msg, "command line: more than 1048576 words");
    cr_expect_eq(cl.ntok, 0);
    cr_expect_null(cl.tok);

    memset(big, 'b', TPX_CMDLINE_MAX_BYTES + 1);
    big[TPX_CMDLINE_MAX_BYTES + 1] = '\0';
    argv[0] = big;
    tpx_err_clear(&err);
    cr_expect_eq(tpx_cmdline_split(&cl, argv, 1, &err), TPX_ETOOBIG);
    cr_expect_str_eq(err.msg, "command line: more than 16777216 bytes of words");
    cr_expect_eq(cl.ntok, 0);
    tpx_cmdline_release(&cl);
    free(many);
    free(big);
}

/* "sh -c X" around X, quoted for the next shell with backslashes. */
static char *wrap(const char *inner)
{
    size_t n = strlen(inner);
    char *out = malloc(2 * n + 8);
    size_t len = 6;

    cr_assert(out);
    memcpy(out, "sh -c ", 6);
    for (size_t i = 0; i < n; i++) {
        if (inner[i] == ' ' || inner[i] == '\\')
            out[len++] = '\\';
        out[len++] = inner[i];
    }
    out[len] = '\0';
    return out;
}

Test(tpx_cmdline, deep_nesting_stops_splitting_without_crashing)
{
    char *s = strdup("vllm --tp 8");
    struct tpx_cmdline cl;
    const char *argv[1];
    size_t scripts = 0;
    bool kept = false;

    for (int level = 0; level < 14; level++) {
        char *w = wrap(s);
        free(s);
        s = w;
    }
    argv[0] = s;
    split_ok(&cl, argv, 1);
    for (size_t i = 0; i < cl.ntok; i++) {
        if (strcmp(cl.tok[i].text, "-c") == 0)
            scripts++;
        if (strncmp(cl.tok[i].text, "sh -c ", 6) == 0)
            kept = true;
    }
    /* the element itself is depth 0, so MAX_DEPTH - 1 scripts are split, the last kept whole */
    cr_expect_eq(scripts, TPX_CMDLINE_MAX_DEPTH);
    cr_expect(kept);
    tpx_cmdline_release(&cl);
    free(s);
}
