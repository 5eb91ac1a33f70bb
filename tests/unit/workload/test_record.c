/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/workload/test_record.c - wl_engine_info: what `plan --record` keeps is read from the
 * rows of each engine's own table (workload/engines.c), with the same tokenizer and env as the
 * layout: vLLM, SGLang and trtllm-serve spellings, `sh -c`, values through the env, "8k". */
#include <criterion/criterion.h>
#include <string.h>

#include "workload/engines.h"

static struct wl_engine_info read_argv(const char *const *argv, size_t n,
                                       const struct tpx_env_var *env, size_t nenv)
{
    struct pol_pod_facts f;
    struct wl_engine_info ei;

    memset(&f, 0, sizeof(f));
    f.argv = argv;
    f.nargv = n;
    f.env = env;
    f.nenv = nenv;
    f.accel = 8;
    wl_engine_info(&f, &ei);
    return ei;
}

Test(wl_record, vllm_rows_in_a_shell_script_with_env_values)
{
    const char *argv[] = {"sh", "-c",
                          "vllm serve m --dtype bfloat16 -q fp8 --max-model-len $LEN "
                          "--max_num_seqs=64"};
    const struct tpx_env_var env[] = {{"LEN", "8k"}};
    struct wl_engine_info ei = read_argv(argv, 3, env, 1);

    cr_expect_str_eq(ei.dtype, "bfloat16");
    cr_expect_str_eq(ei.quantization, "fp8");
    cr_expect_eq(ei.max_model_len, 8192);
    cr_expect_eq(ei.max_num_seqs, 64);
}

Test(wl_record, sglang_spells_them_its_own_way)
{
    const char *argv[] = {"python3",
                          "-m",
                          "sglang.launch_server",
                          "--context-length",
                          "32768",
                          "--max-running-requests",
                          "128",
                          "--max-model-len",
                          "5"};
    struct wl_engine_info ei = read_argv(argv, 9, NULL, 0);

    cr_expect_eq(ei.max_model_len, 32768); /* vLLM's spelling is not SGLang's flag */
    cr_expect_eq(ei.max_num_seqs, 128);
}

/* trtllm-serve's --max_seq_len and --max_batch_size (tensorrt_llm/commands/serve.py): a row in
 * its table, nothing else */
Test(wl_record, trtllm_serve_rows)
{
    const char *argv[] = {"trtllm-serve",  "m",    "--tp_size",        "8",
                          "--max_seq_len", "4096", "--max_batch_size", "32"};
    struct wl_engine_info ei = read_argv(argv, 8, NULL, 0);

    cr_expect_eq(ei.max_model_len, 4096);
    cr_expect_eq(ei.max_num_seqs, 32);
    cr_expect_str_eq(ei.dtype, "");
}

Test(wl_record, annotations_and_a_bad_size_literal_leave_the_rest)
{
    const char *argv[] = {"vllm", "serve", "m", "--tensor-parallel-size", "x", "--dtype", "half"};
    const struct topo_kv ann[] = {{"topox.io/input-len", "1000"}, {"topox.io/output-len", "256"}};
    struct pol_pod_facts f;
    struct wl_engine_info ei;

    memset(&f, 0, sizeof(f));
    f.argv = argv;
    f.nargv = 7;
    f.annotations = ann;
    f.nannotations = 2;
    wl_engine_info(&f, &ei);
    cr_expect_eq(ei.input_len, 1000);
    cr_expect_eq(ei.output_len, 256);
    cr_expect_str_eq(ei.dtype, ""); /* the flags could not be read: none are kept */
}
