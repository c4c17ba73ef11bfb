/* writer: summary.json, comparison files and the stdout tables. */
#ifndef KVSIM_WRITER_H
#define KVSIM_WRITER_H

#include <stddef.h>
#include <stdio.h>

struct met_summary;
struct cJSON;

/* The summary as a JSON object (DESIGN 6 keys). Caller frees with cJSON_Delete. */
struct cJSON *res_summary_json(const struct met_summary *s);
/* Writes text to path through a temporary name and a rename, so a failed
 * write never leaves a half-written file. Returns 0 or -1 (err filled). */
int res_write_atomic(const char *path, const char *text, char *err, size_t errlen);
/* Writes the JSON to path atomically, with a trailing newline. */
int res_write_json(const char *path, const struct cJSON *json, char *err, size_t errlen);
/* Creates dir and its parents; 0 or -1 (err filled). */
int res_mkdirs(const char *dir, char *err, size_t errlen);
/* comparison.csv: one row per summary (policy), the table's figures. */
int res_write_comparison_csv(const char *path, const struct met_summary *s, size_t n, char *err,
			     size_t errlen);
/* The comparison table as Markdown and as an HTML <table>. */
void res_print_comparison_md(FILE *f, const struct met_summary *s, size_t n);
void res_print_comparison_html(FILE *f, const struct met_summary *s, size_t n);
/* The one-run table. */
void res_print_summary(FILE *f, const struct met_summary *s);
/* Policies side by side, one column each. */
void res_print_comparison(FILE *f, const struct met_summary *s, size_t n);

#endif
