/* metric_table: every figure of summary.json, named once, with how each consumer shows it. */
#ifndef KVSIM_METRIC_TABLE_H
#define KVSIM_METRIC_TABLE_H

#include <stddef.h>

struct met_summary;
struct cJSON;

enum res_better { RES_BETTER_NONE, RES_BETTER_HIGHER, RES_BETTER_LOWER };

/* How a figure is stored in struct met_summary. RES_KIND_PER: a mean
 * worked out from two fields, the double at offset over the uint64_t at
 * per (0 when that count is 0). */
enum res_kind { RES_KIND_U64, RES_KIND_F64, RES_KIND_SIZE, RES_KIND_PER };

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
};

/* One metric. The summary writer writes rows in table order within each
 * JSON object (paths are "key" or "object.key"); each output takes the
 * rows it is marked for, in table order but for its _LAST rows. */
struct res_metric {
	const char *name;  /* label in the comparison table */
	const char *path;  /* dotted JSON path in summary.json */
	enum res_better better;
	enum res_kind kind;
	size_t offset;     /* of the figure in struct met_summary */
	size_t per;        /* RES_KIND_PER: of the count it is divided by; else 0 */
	int decimals;      /* comparison table: digits after the point (RES_KIND_F64) */
	double unit;       /* comparison table: shows the figure divided by this */
	const char *csv;   /* column name in comparison.csv and sweep.csv, or NULL */
	unsigned use;      /* RES_M_* */
};

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
/* The figure of s that m names. */
double res_metric_value(const struct res_metric *m, const struct met_summary *s);
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
