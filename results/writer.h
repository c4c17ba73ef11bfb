/* writer: summary.json, comparison files and the stdout tables. */
#ifndef KVSIM_WRITER_H
#define KVSIM_WRITER_H

#include <stddef.h>
#include <stdio.h>

struct met_summary;
struct res_metric;
struct res_metrics;
struct cJSON;
struct afile_set;

/* The summary as a JSON object (docs/design.md, section 6 keys; its figures are the rows of
 * the built-in metric table). Caller frees with cJSON_Delete. */
struct cJSON *res_summary_json(const struct met_summary *s);
/* res_summary_json with the rows of t (NULL: the built-in table); a row
 * under a top-level key or object that summary.json does not have goes at
 * the end. */
struct cJSON *res_summary_json_with(const struct met_summary *s, const struct res_metrics *t);
/* Writes text to path through a temporary name and a rename (base/afile.h:
 * symbolic links are followed, devices written in place), so a failed
 * write never leaves a half-written file. Returns 0 or -1 (err filled with
 * the path and strerror). */
int res_write_atomic(const char *path, const char *text, char *err, size_t errlen);
/* Writes the JSON to path atomically, with a trailing newline. */
int res_write_json(const char *path, const struct cJSON *json, char *err, size_t errlen);
/* res_write_json into a result set (renamed with the rest of it by
 * afile_set_commit); set NULL: at once. */
int res_write_json_in(struct afile_set *set, const char *path, const struct cJSON *json, char *err,
		      size_t errlen);
/* Creates dir and its parents; 0 or -1 (err filled). */
int res_mkdirs(const char *dir, char *err, size_t errlen);
/* comparison.csv: one row per summary (policy), the RES_M_CSV rows of t
 * (NULL: the built-in metric table). */
int res_write_comparison_csv_with(const char *path, const struct res_metrics *t,
				  const struct met_summary *s, size_t n, char *err, size_t errlen);
/* res_write_comparison_csv_with into a result set; set NULL: at once. */
int res_write_comparison_csv_in(struct afile_set *set, const char *path,
				const struct res_metrics *t, const struct met_summary *s, size_t n,
				char *err, size_t errlen);
int res_write_comparison_csv(const char *path, const struct met_summary *s, size_t n, char *err,
			     size_t errlen);
enum res_style { RES_STYLE_TEXT, RES_STYLE_MD, RES_STYLE_HTML };
/* Past this many columns the text and Markdown tables are transposed:
 * a row per policy, the figures as columns in blocks that fit 100
 * characters (the HTML table scrolls instead). */
#define RES_WIDE_COLUMNS 6
/* The comparison table: policies side by side, one column each, one line
 * per RES_M_TABLE row of t (NULL: the built-in metric table), as aligned
 * text, Markdown or an HTML <table>. */
void res_print_table(FILE *f, const struct res_metrics *t, const struct met_summary *s, size_t n,
		     enum res_style style);
/* What res_print_table_with adds to the plain table (docs/outputs.md). */
struct res_table_opts {
	/* Mark each row's best figure: ANSI bold in text, **x** in Markdown,
	 * <strong> in HTML. A row is marked when it says which way is better
	 * (RES_BETTER_HIGHER or _LOWER) and its best figure beats another
	 * column's; see res_best_columns. */
	int mark_best;
	/* The column whose figures the others are compared with: beside each
	 * figure of another column, its change in percent, "0.052 (-98%)";
	 * -1: none. Rows that say no direction (RES_BETTER_NONE) show none. */
	int baseline;
};
/* The columns of s[0..n) holding row m's best figure, as shown (compared
 * at the table's precision, so figures that print the same tie): best[j]
 * is 1 for each, 0 for the rest. A figure that is not a number (NaN) is no
 * value and never best. Returns how many are marked: 0 when the row says
 * no direction, or when no column's figure is beaten by the best (all tie,
 * or fewer than two columns have a value); all tied best are marked. */
size_t res_best_columns(const struct res_metric *m, const struct met_summary *s, size_t n,
			unsigned char *best);
/* Row m's figure in column s as the table shows it (its cell read back,
 * times the row's unit: in seconds or bytes again), so that figures that
 * print the same compare equal; NaN when it is not a number. */
double res_shown_value(const struct res_metric *m, const struct met_summary *s);
/* The change of v against base in percent as the table shows it: "+12%"
 * (whole at 10% and above), "-3.5%" (one decimal below), "0%" when equal,
 * "n/a" when base is 0 or either is not a number. */
void res_delta_pct(double v, double base, char *buf, size_t len);
/* The mechanisms each column ran with (docs/policies.md), as printed under
 * the comparison table. */
void res_print_mechanisms(FILE *f, const struct met_summary *s, size_t n, enum res_style style);
/* The pools each column ran on, one line per column and pool (name, role,
 * GPU x tp, nodes, busy ratio, mean KV use, requests), as printed under
 * the comparison table; nothing when every column ran a single pool. */
void res_print_pools(FILE *f, const struct met_summary *s, size_t n, enum res_style style);
/* res_print_table with opts (NULL: the plain table). */
void res_print_table_with(FILE *f, const struct res_metrics *t, const struct met_summary *s,
			  size_t n, enum res_style style, const struct res_table_opts *opts);
/* The comparison table, the pools (res_print_pools) and the mechanisms
 * under it, with opts (NULL: as res_print_comparison or _md). */
void res_print_comparison_with(FILE *f, const struct met_summary *s, size_t n,
			       enum res_style style, const struct res_table_opts *opts);
/* bench_serving.json: the run in the shape of `vllm bench serve
 * --save-result` (flat keys, milliseconds; docs/outputs.md). Caller frees
 * with cJSON_Delete; NULL when memory runs out. */
struct cJSON *res_bench_serving_json(const struct met_summary *s);
/* comparison.csv's text, byte for byte, to f. */
void res_print_comparison_csv(FILE *f, const struct met_summary *s, size_t n);
/* res_print_table with the built-in table. */
void res_print_comparison(FILE *f, const struct met_summary *s, size_t n);
/* The one-run table. */
void res_print_summary(FILE *f, const struct met_summary *s);

#endif
