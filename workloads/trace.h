/* trace: streaming readers of request traces (Mooncake, Azure, kvsim JSONL). */
#ifndef KVSIM_TRACE_H
#define KVSIM_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/hmap.h"

struct request;

enum trace_format { TRACE_MOONCAKE, TRACE_AZURE, TRACE_KVSIM };

/* One trace line. Block ids name blocks of block_tokens tokens of the
 * prompt (Mooncake: 512-token blocks, `hash_ids`; kvsim: the hashes of the
 * full blocks of prompt + output at its own block size; Azure: none). */
struct trace_rec {
	uint64_t line;
	int64_t arrival_ns; /* from the trace's first arrival; -1 for a kvsim follow-up */
	int64_t after_ns;   /* kvsim follow-up: time after the previous turn's answer */
	uint64_t session;   /* kvsim only; else 0 */
	uint32_t turn;      /* kvsim only; else 1 */
	int last_turn;
	uint32_t input, output;
	uint64_t *ids;
	uint32_t n_ids, ids_cap;
	uint32_t block_tokens;
	uint32_t shared_blocks; /* kvsim only */
	uint32_t pass;          /* the replay's pass that read it (not the parser's) */
};

struct trace_reader {
	FILE *f;
	char path[4096];
	enum trace_format format;
	int skip_bad;
	uint64_t line, skipped, records;
	char *buf;
	size_t cap;
	int64_t t0_ns, last_ns; /* first and last arrival seen (raw trace time) */
	int have_t0;
	char first_bad[512]; /* the first skipped line's error, for the report */
	/* kvsim: the sessions whose later turns are still to come -> the turn
	 * expected next (a session leaves at its last_turn) */
	struct hmap open_sessions;
};

/* Names: "mooncake", "azure", "kvsim"; -1 if unknown. */
int trace_format_parse(const char *name);
const char *trace_format_name(enum trace_format f);
/* Opens path. skip_bad: malformed lines are counted and skipped instead of
 * failing. Returns 0, or -1 with err ("FILE: why"). */
int trace_open(struct trace_reader *tr, const char *path, enum trace_format format, int skip_bad,
	       char *err, size_t errlen);
/* Reads the next record: 1, 0 at the end, -1 with err "FILE:LINE: what is
 * wrong" (malformed line, missing field, negative length, Mooncake hash_ids
 * that do not match input_length, arrivals that go backwards, a time past
 * the clock (CFG_TIME_MAX_NS from the trace's first arrival), a kvsim later
 * turn without its session's turn before it). */
int trace_next(struct trace_reader *tr, struct trace_rec *rec, char *err, size_t errlen);
/* At the end of the trace: 0 when it held a request, else -1 with err
 * ("FILE: no requests ...", saying how many lines were skipped). */
int trace_check_nonempty(const struct trace_reader *tr, char *err, size_t errlen);
void trace_close(struct trace_reader *tr);
void trace_rec_free(struct trace_rec *rec);

/* Writes r as one kvsim JSONL line (turn 1 with arrival_s, later turns with
 * after_s = after_ns). */
void trace_write_kvsim(FILE *f, const struct request *r, uint32_t block_tokens, int64_t after_ns);

#endif
