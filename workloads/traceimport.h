/* traceimport: a chat log (CSV, one row a turn) into a kvsim JSONL trace (`kvsim trace import`). */
#ifndef KVSIM_TRACEIMPORT_H
#define KVSIM_TRACEIMPORT_H

#include <stddef.h>
#include <stdint.h>

/* What an import wrote, and the warnings it counted (each with the first
 * line, in file order, where it was met; 0 when none). */
struct timport_result {
	uint32_t block_tokens; /* as given, or the default */
	uint64_t sessions, requests, max_turns;
	uint64_t blocks;        /* block ids written (prompt + answer, all turns) */
	uint64_t fresh_blocks;  /* distinct ids: those a turn did not take from its previous */
	uint64_t prompt_blocks; /* full prompt blocks, summed over requests */
	uint64_t shared_blocks; /* of those, the ones taken from the previous turn */
	uint64_t gaps, gap_line;       /* turns whose number is not the previous + 1 */
	uint64_t shrunk, shrunk_line;  /* prompts shorter than the previous prompt + answer */
	char extra_columns[256];       /* the header's columns not read, comma-separated */
};

/* Reads the CSV at in (header naming timestamp_s, session_id, turn,
 * prompt_tokens, output_tokens, in any order; other columns ignored) and
 * writes out: sessions numbered 1.. by their first turn's time, turn k's
 * first blocks those of turn k-1's prompt + answer (as many whole blocks
 * as its prompt holds), every other block a fresh id, lines in time order.
 * block_tokens 0: cluster.engine.kv_block_tokens's default (CFG_KV_BLOCK_TOKENS).
 * out appears only when complete (a temporary renamed). Returns 0, or -1
 * with err ("FILE:LINE: what is wrong" for bad input; nothing written).
 * Memory: every row, and each session's last block ids. */
int timport_run(const char *in, const char *out, uint32_t block_tokens, struct timport_result *res,
		char *err, size_t errlen);

#endif
