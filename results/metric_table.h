/* metric_table: every figure of summary.json, named once, with how each consumer shows it. */
#ifndef KVSIM_METRIC_TABLE_H
#define KVSIM_METRIC_TABLE_H

#include <stddef.h>

struct met_summary;
struct cJSON;
struct request;

enum res_better { RES_BETTER_NONE, RES_BETTER_HIGHER, RES_BETTER_LOWER };

/* Where a row's figure is: one per run (struct met_summary), one per pool
 * (struct met_pool, summary.json's pools[]) or one per node (struct
 * met_node, nodes[]). A pool or node row's path is the array's key, a dot
 * and the key in each element: "pools.busy_ratio". */
enum res_scope { RES_SCOPE_RUN, RES_SCOPE_POOL, RES_SCOPE_NODE };

/* How a figure is stored in its scope's struct. RES_KIND_PER: a mean
 * worked out from two fields, the double at offset over the uint64_t at
 * per (0 when that count is 0). RES_KIND_TEXT (a char array) and
 * RES_KIND_TEXT_PTR (a const char *) are names, not figures: written as
 * JSON strings, NaN as a value. */
enum res_kind {
	RES_KIND_U64,
	RES_KIND_F64,
	RES_KIND_SIZE,
	RES_KIND_PER,
	RES_KIND_INT,
	RES_KIND_TEXT,
	RES_KIND_TEXT_PTR,
};

/* Which outputs take a row (res_metric.use). A row in none of them is
 * still written to summary.json. */
enum {
	RES_M_TABLE = 1 << 0,      /* the comparison table (text, Markdown, HTML) */
	RES_M_CSV = 1 << 1,        /* a comparison.csv column */
	RES_M_DIFF = 1 << 2,       /* compared by `kvsim diff` by default */
	RES_M_DIFF_NAMED = 1 << 3, /* compared by `kvsim diff` only when named (perf) */
	RES_M_SWEEP = 1 << 4,      /* a sweep.csv column */
	/* Placed after the other rows of that output rather than in table
	 * order, so that files written before keep their column order. */
	RES_M_DIFF_LAST = 1 << 5,
	RES_M_SWEEP_LAST = 1 << 6,
	/* The path names an array of summary.json and the figure is its
	 * length; the summary writer writes the array itself. */
	RES_M_ARRAY_LEN = 1 << 7,
	/* In the comparison table and comparison.csv only when some column
	 * ran a disaggregated cluster (met_summary.disaggregated), so that
	 * the figures of the prefill-to-decode path do not clutter the
	 * others' tables; summary.json and diff always have them. */
	RES_M_IF_DISAGG = 1 << 8,
	/* ... only when some column autoscales (met_summary.autoscaled) */
	RES_M_IF_SCALED = 1 << 9,
	/* ... only when some column has the client's view (met_summary.client);
	 * summary.json too has the row only then */
	RES_M_IF_CLIENT = 1 << 10,
	/* Never marked best: a total per run, which closed-loop runs that
	 * serve different work and drain at different times do not compare
	 * by (its figure per unit of work served is compared instead), and
	 * the simulator's own speed (perf). */
	RES_M_NO_BEST = 1 << 11,
};

/* A statistics group's sample: one figure per completed request, the time
 * from one of its times to another (int64_t ns fields of struct request)
 * in seconds, divided by its output tokens after the first when per_token
 * (then only for outputs of 2+ tokens). The collector keeps it
 * (metrics.sample[slot]), requests.csv has a column of it, and the
 * group's rows (RES_STATS) read its statistics (met_summary.stat[slot]). */
struct res_stat {
	const char *key; /* summary.json's object and requests.csv's column: "ttft_s" */
	unsigned slot;   /* enum met_slot: its place in the collector and the summary */
	size_t from, to; /* offsetof(struct request, a time) */
	int per_token;
	/* RES_CLIENT_*: a figure of the client's view, worked out from the
	 * span and the run's client terms (struct met_client); such a group
	 * is collected, written and shown only in runs with a client block */
	int client;
};
enum { RES_CLIENT_NONE, RES_CLIENT_TTFT, RES_CLIENT_ITL, RES_CLIENT_E2E };

/* One metric. The summary writer writes rows in table order within each
 * JSON object (paths are "key" or "object.key"); each output takes the
 * rows it is marked for, in table order but for its _LAST rows. */
struct res_metric {
	const char *name;  /* label in the comparison table */
	const char *path;  /* dotted JSON path in summary.json */
	enum res_better better;
	enum res_scope scope;
	enum res_kind kind;
	size_t offset;     /* of the figure in its scope's struct */
	size_t per;        /* RES_KIND_PER: of the count it is divided by; else 0 */
	int decimals;      /* comparison table: digits after the point (RES_KIND_F64) */
	double unit;       /* comparison table: shows the figure divided by this */
	const char *csv;   /* column name in comparison.csv and sweep.csv, or NULL */
	unsigned use;      /* RES_M_* */
	/* The first row of a statistics group (RES_STATS): the group's
	 * sample; NULL on every other row. */
	const struct res_stat *stat;
};

/* A statistics group, one entry of a table of rows: its mean, the rows
 * parts (a macro of rows, each with its comma, or RES_NO_PARTS) shown
 * under the mean, then p50, p90, p99, max and the count, each a row named
 * "<label> mean (s)" ... "<label> samples" at "<stem>_s.mean" ...
 * "<stem>_s.count" (comparison.csv "<stem>_mean_s" ...), better lower,
 * dec digits in the table; u_*: each statistic's RES_M_* (the count's is
 * 0). span: RES_SPAN(from, to) or RES_PER_TOKEN(from, to), times of
 * struct request. Needs results/summary.h and sim/request.h. */
/* clang-format off */
#define RES_SPAN(from, to) offsetof(struct request, from), offsetof(struct request, to), 0, 0
#define RES_PER_TOKEN(from, to) offsetof(struct request, from), offsetof(struct request, to), 1, 0
#define RES_CLIENT(from, to, kind) offsetof(struct request, from), offsetof(struct request, to), 0, kind
/* Not a span of each request: every gap between two output tokens of a
 * request, fed by the engine (met_gaps_add). */
#define RES_GAPS_KIND 2
#define RES_GAPS 0, 0, RES_GAPS_KIND, 0
#define RES_NO_PARTS
/* The table shows latencies in milliseconds (as vLLM's benchmark prints
 * them); summary.json keeps seconds. */
#define RES_STAT_ROW(label, stem, slot, what, shown, dec, use, group)                         \
	{label " " shown " (ms)", stem "_s." #what, RES_BETTER_LOWER, RES_SCOPE_RUN, RES_KIND_F64, \
	 offsetof(struct met_summary, stat[slot].what), 0, dec, 1e-3, stem "_" #what "_s", use, group}
#define RES_STATS(label, stem, slot, span, dec, parts, u_mean, u_p50, u_p90, u_p99, u_max)      \
	RES_STAT_ROW(label, stem, slot, mean, "mean", dec, u_mean,                               \
		     (&(const struct res_stat){stem "_s", slot, span})),                         \
	parts                                                                                    \
	RES_STAT_ROW(label, stem, slot, p50, "median", dec, u_p50, NULL),                        \
	RES_STAT_ROW(label, stem, slot, p90, "p90", dec, u_p90, NULL),                           \
	RES_STAT_ROW(label, stem, slot, p99, "p99", dec, u_p99, NULL),                           \
	RES_STAT_ROW(label, stem, slot, max, "max", dec, u_max, NULL),                           \
	{label " samples", stem "_s.count", RES_BETTER_NONE, RES_SCOPE_RUN, RES_KIND_SIZE,       \
	 offsetof(struct met_summary, stat[slot].n), 0, 0, 1, NULL, (u_max) & RES_M_IF_CLIENT, NULL}
/* clang-format on */

struct res_metrics {
	const struct res_metric *row;
	size_t n;
};

/* The outputs, each a set of rows in its order (res_metric_next). */
enum res_list {
	RES_LIST_TABLE,    /* comparison table */
	RES_LIST_CSV,      /* comparison.csv */
	RES_LIST_DIFF,     /* diff's default set */
	RES_LIST_DIFF_ALL, /* every metric diff knows (--list, --metrics) */
	RES_LIST_SWEEP,    /* sweep.csv */
};

/* Whether m is a latency (a statistic of a per-request time, a part of
 * the mean TTFT, or SLO attainment and goodput, read from them): a column that did not reach a steady state is never
 * named best on one. */
int res_metric_is_latency(const struct res_metric *m);
/* The built-in table (static; never freed). */
const struct res_metrics *res_metrics_builtin(void);
/* t, or the built-in table when t is NULL. */
const struct res_metrics *res_metrics_or_builtin(const struct res_metrics *t);
/* The rows of list in its order: start with *cursor = 0 and call until
 * NULL (a whole walk is O(n)). */
const struct res_metric *res_metric_next(const struct res_metrics *t, enum res_list list,
					 size_t *cursor);
/* The row of list whose path is path, or NULL. */
const struct res_metric *res_metric_find(const struct res_metrics *t, enum res_list list,
					 const char *path);
/* Whether the table and comparison.csv over s[0..n) show row m
 * (RES_M_IF_DISAGG rows only when some column is disaggregated,
 * RES_M_IF_SCALED rows when some column autoscales). */
int res_metric_shown(const struct res_metric *m, const struct met_summary *s, size_t n);
/* The figure of s that m names (a run row; NaN for a name). */
double res_metric_value(const struct res_metric *m, const struct met_summary *s);
/* The figure of element i of m's scope in s (the run for RES_SCOPE_RUN,
 * pool i, node i); NaN for a name or an element s does not have. */
double res_metric_value_at(const struct res_metric *m, const struct met_summary *s, size_t i);
/* The name m reads in element i of its scope (RES_KIND_TEXT, _TEXT_PTR);
 * NULL for a figure or an element s does not have. */
const char *res_metric_text_at(const struct res_metric *m, const struct met_summary *s, size_t i);
/* How many elements scope has in s (1 for the run), and the key of its
 * array in summary.json ("pools", "nodes"; NULL for the run). */
size_t res_scope_count(enum res_scope scope, const struct met_summary *s);
const char *res_scope_key(enum res_scope scope);
/* The statistics groups of t (NULL: the built-in table), in table order:
 * start with *cursor = 0 and call until NULL (a whole walk is O(n)). The
 * client's view's groups (res_stat.client) are left out: a run without a
 * client block has them nowhere. */
const struct res_stat *res_stat_next(const struct res_metrics *t, size_t *cursor);
/* The same with the client's view's groups. */
const struct res_stat *res_stat_next_all(const struct res_metrics *t, size_t *cursor);
/* The figure of group g for request r, or NaN when r has none (it did not
 * complete; one output token for a per-token group). */
double res_stat_of(const struct res_stat *g, const struct request *r);
/* The comparison table's cell: integers in full, fractions with m->decimals
 * after dividing by m->unit. */
void res_metric_cell(const struct res_metric *m, const struct met_summary *s, char *buf,
		     size_t len);
/* The comparison.csv cell: integers in full, fractions as "%.9g". */
void res_metric_csv_cell(const struct res_metric *m, const struct met_summary *s, char *buf,
			 size_t len);
/* The number at a dotted path of a JSON object (objects only along the
 * way), or NULL. */
const struct cJSON *res_json_at(const struct cJSON *o, const char *path);
/* The item of any type at a dotted path (objects only along the way), or
 * NULL. */
const struct cJSON *res_json_item_at(const struct cJSON *o, const char *path);

#endif
