/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/trace.h - `topox simulate` traces as JSON lines, in and out: one event a line,
 *   {"time": 0.0, "event": "arrive", "group": "g1", "pods": 2, "gpus": 8, "tp": 8, "pp": 2}
 *   {"time": 3600.0, "event": "leave", "group": "g1"}
 * ("scope": "block" on an arrival: the pipeline may span the racks of a block, for training gangs)
 * (docs/simulate.md). Reading checks every line and names the first bad one. */
#ifndef TPX_SIMULATE_TRACE_H
#define TPX_SIMULATE_TRACE_H

#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "simulate/sim.h"

/* Largest trace file read. */
#define SIM_TRACE_MAX_FILE ((size_t)256 << 20)

/*
 * Parse the JSON lines of data[0, len) (blank lines and lines starting with '#' are skipped) into
 * *ev (owned by the caller: free()) and *n, each event with its line number. name starts every
 * message: "NAME:LINE: ..." (TPX_EPARSE for a line that is not one JSON object, TPX_EINVAL for a
 * missing or bad field, time going back, an arrival of a group that is already there, a leave of
 * one that is not, tp x pp that does not divide pods x gpus). On failure *ev is NULL and *n 0.
 */
enum tpx_code sim_trace_parse(const char *data, size_t len, const char *name, struct sim_event **ev,
                              size_t *n, struct tpx_err *err);

/* Read and parse the file at path ("-": standard input); errors as sim_trace_parse, named by the
 * path, or the read error. */
enum tpx_code sim_trace_read(const char *path, struct sim_event **ev, size_t *n,
                             struct tpx_err *err);

/* Append ev[0, n) to out as JSON lines (what sim_trace_parse reads back to the same events). */
enum tpx_code sim_trace_write(struct tpx_buf *out, const struct sim_event *ev, size_t n,
                              struct tpx_err *err);

#endif
