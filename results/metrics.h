/* metrics: per-request records -> run summary (docs/design.md, section 6). */
#ifndef KVSIM_METRICS_H
#define KVSIM_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "results/summary.h"

struct request;
struct res_metrics;
struct res_stat;

/* One figure per request. Kept exactly (GSL quantiles of the sorted
 * sample) up to MET_EXACT_MAX values; past that it becomes a histogram of
 * 0.1% relative bins, so that memory stays flat however long the run
 * (mean and max stay exact). */
#define MET_EXACT_MAX ((size_t)1 << 21)
struct met_sample {
	double *v;
	size_t n, cap;
	uint32_t *hist; /* non-NULL once past MET_EXACT_MAX */
	size_t count;
	double sum, max;
};

struct wl_stage_info;
/* A stage's running figures (met_set_stages). */
struct met_stage_acc {
	struct met_sample ttft, tpot, e2e, ttft_client, itl_client;
	uint64_t arrived, completed, shed, failed, input_tokens, output_tokens;
	int64_t last_finish_ns;
};

/* The collector a run fills as requests end. */
struct metrics {
	/* One sample per statistics group of the metric table, by slot
	 * (enum met_slot); the first four by name too. */
	union {
		struct met_sample sample[MET_STAT_MAX];
		struct {
			struct met_sample ttft, tpot, e2e, queue;
		};
	};
	/* The groups it records, in table order (requests.csv's columns). */
	const struct res_stat *stat[MET_STAT_MAX];
	size_t n_stat;
	struct met_tokens tokens;
	uint64_t arrived, completed, shed, failed, slo_met, preemptions;
	double recompute_gpu_s;
	double slo_ttft_s, slo_tpot_s;
	struct met_reasons shed_why, failed_why;
	FILE *csv; /* requests.csv rows, or NULL */
	const struct res_metrics *table; /* the groups' table (NULL: built-in) */
	struct met_client client;        /* the client's view; .on 0: none */
	/* A benchmark's stage windows (the workload's; read as requests end,
	 * when their stage's window is filled) and their figures; NULL, 0:
	 * none. */
	const struct wl_stage_info *stage_win;
	struct met_stage_acc *stage_acc;
	size_t n_stages;
	struct met_steady *steady; /* requests binned by time (allocated on first use) */
	/* Every inter-token gap, one per output token after a request's
	 * first (not a per-request figure: no requests.csv column): a
	 * log-linear histogram of 0.1% bins, the sum and the largest in whole
	 * ns, so
	 * that how the engine groups them (decode spans) cannot change a
	 * bit; its table group is the one whose span is RES_GAPS. */
	struct {
		uint64_t *hist;
		uint64_t count, sum_ns;
		int64_t max_ns;
	} gaps;
	const struct res_stat *gaps_stat; /* NULL: the table has no such group */
};

/* Adds one value (0, or -1 when memory runs out). */
int met_sample_add(struct met_sample *s, double x);
/* count output tokens came gap_ns after their request's previous token
 * (the engine's inter-token latency, summary.json itl_s). */
int met_gaps_add(struct metrics *m, int64_t gap_ns, uint64_t count);
/* A collector of the statistics groups of the built-in metric table. */
void met_init(struct metrics *m, double slo_ttft_s, double slo_tpot_s, FILE *csv);
/* met_init with the groups of table t (NULL: the built-in table). */
void met_init_with(struct metrics *m, const struct res_metrics *t, double slo_ttft_s,
		   double slo_tpot_s, FILE *csv);
void met_free(struct metrics *m);
/* Adds the client's view (the table's client groups, RES_CLIENT_*) with
 * terms c; nothing when c->on is 0. Call after init, before any record. */
void met_set_client(struct metrics *m, const struct met_client *c);
/* Records figures per stage too: a request counts in the stage whose
 * window [start_ns, end_ns] holds its arrival. win (n of them) stays the
 * caller's and must live as long as m. Returns 0, or -1 when memory runs
 * out. */
int met_set_stages(struct metrics *m, const struct wl_stage_info *win, size_t n);
/* Records a request that has ended (REQ_DONE, REQ_SHED or REQ_FAILED).
 * recompute_s: GPU seconds its recomputed tokens cost. Returns 0, or -1
 * when memory runs out. */
int met_record(struct metrics *m, const struct request *r, double recompute_s);
/* Writes the requests.csv header line (a column per statistics group of
 * the built-in metric table, after output_tokens). */
void met_csv_header(FILE *f);
/* met_csv_header with the groups of table t (NULL: the built-in table). */
void met_csv_header_with(FILE *f, const struct res_metrics *t);
/* met_csv_header_with, with the client's view's columns when client. */
void met_csv_header_opts(FILE *f, const struct res_metrics *t, int client);
/* Mean, quantiles (GSL, over the sorted sample) and max; sorts the sample. */
void met_stats_of(struct met_sample *s, struct met_stats *out);
/* Fills the request-derived part of out (the caller fills nodes, perf and
 * the identification fields). */
void met_summarize(struct metrics *m, double sim_time_s, struct met_summary *out);
void met_summary_free(struct met_summary *s);

#endif
