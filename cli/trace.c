/* trace: `kvsim trace stats`, `kvsim trace gen` and `kvsim trace import`. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "sim/sim.h"
#include "workloads/traceimport.h"
#include "workloads/tracestats.h"
#include "workloads/workload.h"

enum { O_FORMAT = CLI_OPT_OWN, O_CACHE_BLOCKS, O_JSON, O_SKIP_BAD, O_BLOCK_TOKENS };

static const struct cli_opt stats_opts[] = {
    {O_FORMAT, "format", 0, "mooncake|azure|kvsim",
     "the trace's format (default: guessed from its first line)", "mooncake azure kvsim", 0},
    {O_CACHE_BLOCKS, "cache-blocks", 0, "N,...",
     "the hit ratio of an LRU cache of N blocks, for each N", NULL, 0},
    {O_JSON, "json", 0, NULL, "print JSON", NULL, 0},
    {O_SKIP_BAD, "skip-bad", 0, NULL,
     "count and skip malformed lines instead of failing (exit 2, FILE:LINE: what is wrong)",
     NULL, 0},
    {0},
};
CLI_TABLE_FITS(stats_opts);

static const struct cli_opt gen_opts[] = {
    {OPT_OUT, "out", 'o', "FILE", "the trace file to write", "@file", CLI_REQUIRED},
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_CATALOG,
    CLI_ROW_QUIET("print nothing"),
    {0},
};
CLI_TABLE_FITS(gen_opts);

static const struct cli_opt import_opts[] = {
    {OPT_OUT, "out", 'o', "FILE", "the kvsim trace to write (default: FILE.jsonl beside FILE.csv)",
     "@file", 0},
    {O_BLOCK_TOKENS, "block-tokens", 0, "N",
     "tokens per block, the replaying cluster's cluster.engine.kv_block_tokens (default 16, "
     "its default: vLLM's block size)",
     NULL, 0},
    CLI_ROW_QUIET("print nothing but warnings"),
    {0},
};
CLI_TABLE_FITS(import_opts);

/* --cache-blocks into sizes; their count, or -1 after reporting. */
static int cache_sizes(const struct cli_cmd *cmd, const char *arg, uint64_t *sizes)
{
	char list[1024];
	const char *items[TSTATS_MAX_CACHES];
	int n = cli_list(cmd, "--cache-blocks", "block counts", arg, list, sizeof list, items,
			 TSTATS_MAX_CACHES);
	for (int i = 0; i < n; i++) {
		long long v;
		if (cli_parse_int(items[i], 0, LLONG_MAX, &v)) {
			cli_bad_value(cmd, "--cache-blocks", "block counts, e.g. 1000,10000", items[i]);
			return -1;
		}
		sizes[i] = (uint64_t)v;
	}
	return n;
}

static void print_stats_json(const char *file, const struct trace_stats *st)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "file", file);
	cJSON_AddStringToObject(o, "format", trace_format_name(st->format));
	cJSON_AddNumberToObject(o, "requests", (double)st->requests);
	cJSON_AddNumberToObject(o, "skipped_lines", (double)st->skipped);
	cJSON_AddNumberToObject(o, "duration_s", st->duration_s);
	cJSON_AddNumberToObject(o, "arrival_rate_per_s", st->arrival_rate_per_s);
	const struct tstats_dist *d[2] = {&st->input, &st->output};
	const char *names[2] = {"input_tokens", "output_tokens"};
	for (int i = 0; i < 2; i++) {
		cJSON *x = cJSON_AddObjectToObject(o, names[i]);
		cJSON_AddNumberToObject(x, "mean", d[i]->mean);
		cJSON_AddNumberToObject(x, "p50", d[i]->p50);
		cJSON_AddNumberToObject(x, "p99", d[i]->p99);
		cJSON_AddNumberToObject(x, "max", d[i]->max);
	}
	cJSON_AddNumberToObject(o, "block_tokens", st->block_tokens);
	cJSON_AddNumberToObject(o, "distinct_blocks", (double)st->distinct_blocks);
	cJSON *ih = cJSON_AddObjectToObject(o, "ideal_hit_ratio");
	cJSON_AddNumberToObject(ih, "blocks", st->ideal_blocks);
	cJSON_AddNumberToObject(ih, "tokens", st->ideal_tokens);
	cJSON_AddNumberToObject(ih, "per_request_tokens", st->ideal_per_request);
	cJSON *lh = cJSON_AddObjectToObject(o, "lru_hit_ratio");
	for (size_t i = 0; i < st->n_caches; i++) {
		char k[32];
		snprintf(k, sizeof k, "%llu", (unsigned long long)st->cache_blocks[i]);
		cJSON_AddNumberToObject(lh, k, st->lru_hit[i]);
	}
	char *text = cJSON_Print(o);
	puts(text);
	free(text);
	cJSON_Delete(o);
}

static void print_stats_text(const char *file, const struct trace_stats *st)
{
	printf("%s (%s)\n", file, trace_format_name(st->format));
	printf("  requests              %12llu\n", (unsigned long long)st->requests);
	printf("  duration              %12.1f s\n", st->duration_s);
	printf("  arrival rate          %12.3f req/s\n", st->arrival_rate_per_s);
	printf("  %-20s %10s %10s %10s %10s\n", "", "mean", "p50", "p99", "max");
	printf("  %-20s %10.1f %10.0f %10.0f %10.0f\n", "input tokens", st->input.mean,
	       st->input.p50, st->input.p99, st->input.max);
	printf("  %-20s %10.1f %10.0f %10.0f %10.0f\n", "output tokens", st->output.mean,
	       st->output.p50, st->output.p99, st->output.max);
	printf("  distinct blocks       %12llu (of %u tokens)\n",
	       (unsigned long long)st->distinct_blocks, st->block_tokens);
	printf("  ideal prefix reuse    %11.1f%% of blocks, %.1f%% of prompt tokens, "
	       "%.1f%% per request (mean)\n",
	       100 * st->ideal_blocks, 100 * st->ideal_tokens, 100 * st->ideal_per_request);
	for (size_t i = 0; i < st->n_caches; i++)
		printf("  LRU %10llu blocks  %11.1f%% of blocks hit\n",
		       (unsigned long long)st->cache_blocks[i], 100 * st->lru_hit[i]);
}

static int cmd_trace_stats(const struct cli_ctx *cx, int argc, char **argv)
{
	const char *format = NULL, *v;
	int json = 0, skip = 0, id, n = 0;
	uint64_t sizes[TSTATS_MAX_CACHES];
	struct cli_args a;
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case O_FORMAT: format = v; break;
		case O_CACHE_BLOCKS:
			if ((n = cache_sizes(cx->cmd, v, sizes)) < 0)
				return CLI_USAGE;
			break;
		case O_JSON: json = 1; break;
		case O_SKIP_BAD: skip = 1; break;
		}
	}
	if (id != CLI_END)
		return cli_end_code(id);
	if (a.n_pos > 1)
		return cli_misuse(cx->cmd, "unexpected argument %s", a.pos[1]);
	if (a.n_pos == 0)
		return cli_misuse(cx->cmd, "give a trace file");
	const char *file = a.pos[0];
	int fmt = format ? trace_format_parse(format) : tstats_detect_format(file);
	if (fmt < 0) {
		if (format)
			fprintf(stderr, "kvsim trace stats: --format %s: expected mooncake, azure or "
					"kvsim\n", format);
		else
			fprintf(stderr, "kvsim: %s: cannot tell the trace format from its first line; "
					"give --format mooncake|azure|kvsim\n", file);
		return CLI_USAGE;
	}
	struct trace_stats st;
	char err[1024] = "";
	if (tstats_run(file, (enum trace_format)fmt, skip, sizes, (size_t)n, &st, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_USAGE;
	}
	if (st.skipped)
		fprintf(stderr, "kvsim: skipped %llu malformed lines; the first: %s\n",
			(unsigned long long)st.skipped, err);
	if (json)
		print_stats_json(file, &st);
	else
		print_stats_text(file, &st);
	return CLI_OK;
}

static int cmd_trace_gen(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_common o;
	int end = cli_parse_common(cx, argc, argv, &o);
	if (end != CLI_END)
		return cli_end_code(end);
	if (!o.out)
		return cli_misuse(cx->cmd, "give the output file as --out FILE");
	struct scenario s;
	if (cli_load_from_opts(&o, &s))
		return CLI_USAGE;
	uint64_t n = 0;
	char err[1024];
	/* The whole scenario is checked as a run would (policy parameters
	 * included); then its workload is built on its own. */
	int rc = sim_validate(&s, err, sizeof err);
	if (!rc)
		rc = wl_trace_gen(&s, o.out, &n, err, sizeof err);
	cfg_scenario_free(&s);
	if (rc > CLI_INTERNAL) /* interrupted: main says so */
		return rc;
	if (rc) {
		fprintf(stderr, "kvsim: %s\n", err);
		return rc == 2 ? CLI_USAGE : CLI_INTERNAL;
	}
	if (!o.quiet)
		printf("wrote %llu requests to %s\n", (unsigned long long)n, o.out);
	return CLI_OK;
}

/* The default output: in.csv -> in.jsonl (in -> in.jsonl). */
static void default_out(const char *in, char *out, size_t len)
{
	size_t n = strlen(in);
	if (n > 4 && !strcmp(in + n - 4, ".csv"))
		n -= 4;
	snprintf(out, len, "%.*s.jsonl", (int)n, in);
}

/* The trace's figures as `trace stats` reads them back (st), with the
 * sessions' from the import (r). */
static void print_import(const char *in, const char *out, uint32_t B,
			 const struct timport_result *r, const struct trace_stats *st)
{
	printf("%s -> %s\n", in, out);
	printf("  sessions              %12llu\n", (unsigned long long)r->sessions);
	printf("  requests              %12llu\n", (unsigned long long)st->requests);
	printf("  turns per session     %12.2f mean, %llu max\n",
	       (double)r->requests / (double)r->sessions, (unsigned long long)r->max_turns);
	printf("  distinct blocks       %12llu (of %u tokens)\n",
	       (unsigned long long)st->distinct_blocks, B);
	printf("  shared prefix         %11.1f%% of prompt blocks (%llu of %llu) are the previous "
	       "turn's\n",
	       100 * st->ideal_blocks, (unsigned long long)r->shared_blocks,
	       (unsigned long long)r->prompt_blocks);
}

static int cmd_trace_import(const struct cli_ctx *cx, int argc, char **argv)
{
	const char *out = NULL, *v;
	int quiet = 0, id;
	long long B = 0; /* the import's default */
	struct cli_args a;
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case OPT_OUT: out = v; break;
		case OPT_QUIET: quiet = 1; break;
		case O_BLOCK_TOKENS:
			if (cli_parse_int(v, 1, 4096, &B))
				return cli_bad_value(cx->cmd, "--block-tokens",
						     "tokens per block, 1 to 4096", v);
			break;
		}
	}
	if (id != CLI_END)
		return cli_end_code(id);
	if (a.n_pos > 1)
		return cli_misuse(cx->cmd, "unexpected argument %s", a.pos[1]);
	if (a.n_pos == 0)
		return cli_misuse(cx->cmd, "give a CSV file");
	char dflt[4200];
	if (!out) {
		default_out(a.pos[0], dflt, sizeof dflt);
		out = dflt;
	}
	struct timport_result r;
	char err[1024] = "";
	if (timport_run(a.pos[0], out, (uint32_t)B, &r, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_USAGE;
	}
	if (r.extra_columns[0])
		fprintf(stderr, "kvsim: %s: columns not read: %s\n", a.pos[0], r.extra_columns);
	if (r.gaps)
		fprintf(stderr, "kvsim: %s:%llu: %llu turns whose number is not the previous turn's "
				"+ 1 (missing turns); numbered 1, 2, ... per session\n",
			a.pos[0], (unsigned long long)r.gap_line, (unsigned long long)r.gaps);
	if (r.shrunk)
		fprintf(stderr, "kvsim: %s:%llu: %llu turns whose prompt_tokens is less than the "
				"previous turn's prompt + output (truncated history?); they share "
				"only the whole blocks their prompt holds\n",
			a.pos[0], (unsigned long long)r.shrunk_line, (unsigned long long)r.shrunk);
	struct trace_stats st;
	if (tstats_run(out, TRACE_KVSIM, 0, NULL, 0, &st, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s (reading back what was written)\n", err);
		return CLI_INTERNAL;
	}
	if (!quiet)
		print_import(a.pos[0], out, r.block_tokens, &r, &st);
	return CLI_OK;
}

static const struct cli_cmd trace_stats_cmd = {
    .name = "trace stats",
    .args = "FILE",
    .summary = "what a trace holds and how much a cache reuses",
    .run = cmd_trace_stats,
    .opts = stats_opts,
    .about = "Prints requests, duration, arrival rate, prompt and output lengths (mean, p50,\n"
	     "p99, max), distinct blocks, the prefix reuse an unbounded cache would see (as\n"
	     "a share of blocks, of prompt tokens, and the mean per-request token share),\n"
	     "and for each N in --cache-blocks the hit ratio of an LRU cache of N blocks. A\n"
	     "request's hit is its run of leading prompt blocks already cached; then all its\n"
	     "blocks are inserted or touched (a kvsim trace's answer blocks too, which the\n"
	     "session's next turn finds). Blocks are the trace's own (Mooncake: 512\n"
	     "tokens).\n",
    .pos_complete = "@file",
};

static const struct cli_cmd trace_gen_cmd = {
    .name = "trace gen",
    .args = "[SCENARIO.json]",
    .summary = "write a scenario's requests as a kvsim trace",
    .run = cmd_trace_gen,
    .opts = gen_opts,
    .about = "Writes the scenario's workload as kvsim JSONL (docs/workloads.md); replaying it\n"
	     "(workload {\"kind\": \"trace\", \"format\": \"kvsim\", \"path\": FILE}) gives the\n"
	     "same run as the generator with the same seed and cluster.\n",
    .pos_complete = "@file",
};

static const struct cli_cmd trace_import_cmd = {
    .name = "trace import",
    .args = "FILE.csv",
    .summary = "a chat log (CSV, one row a turn) as a kvsim trace",
    .run = cmd_trace_import,
    .opts = import_opts,
    .about = "Reads a CSV whose header names timestamp_s, session_id, turn, prompt_tokens and\n"
	     "output_tokens (any order; other columns are not read), one row a turn, where\n"
	     "prompt_tokens holds the conversation so far, and writes kvsim JSONL: sessions\n"
	     "numbered 1, 2, ... by their first turn's time, turns 1, 2, ... in order, a turn's\n"
	     "first blocks those of its previous turn's prompt + answer (as many whole blocks\n"
	     "as its prompt holds), new blocks fresh ids, lines in time order. A later turn's\n"
	     "after_s is its time less its previous turn's. Bad input (a missing column, a\n"
	     "value that is not a number, tokens below 1, a (session, turn) twice, a turn\n"
	     "before its previous turn in time): FILE:LINE, exit 2, nothing written. Missing\n"
	     "turn numbers and prompts shorter than the previous prompt + answer are counted\n"
	     "and warned about. docs/workloads.md, \"Trace formats\".\n",
    .pos_complete = "@file",
};

static const struct cli_cmd *const trace_subs[] = {&trace_stats_cmd, &trace_gen_cmd,
						   &trace_import_cmd, NULL};

const struct cli_cmd cli_trace_cmd = {
    .name = "trace",
    .args = "stats|gen|import",
    .summary = "trace statistics; a scenario's requests or a chat log as a trace",
    .run = cli_run_sub,
    .subs = trace_subs,
};
