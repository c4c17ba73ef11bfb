/* cells: a comparison's runs, policy x seed x load, in this process or in worker processes. */
#ifndef KVSIM_CLI_CELLS_H
#define KVSIM_CLI_CELLS_H

#include <stdio.h>

struct cJSON;
struct cli_common;
struct afile_set;
struct met_summary;

#define CMP_MAX_SEEDS 64
#define CMP_MAX_RATES 64

/* The grid of a comparison. Cell (p, s, r) runs policy names[p] with seed
 * seeds[s] (the scenario's when n_seeds is 0) at load r: r = 0 the
 * scenario's own, r > 0 rate_path = rates[r - 1]. Its index is
 * (p * max(n_seeds, 1) + s) * (1 + n_rates) + r, its folder
 * OUT/<policy>[/rate-<rate>][/seed-<seed> for s > 0]. */
struct cmp_grid {
	const char **names;
	int n_pol;
	long long seeds[CMP_MAX_SEEDS];
	int n_seeds;
	double rates[CMP_MAX_RATES];
	int n_rates;
	char rate_path[128]; /* workload.<the workload's rate key> */
	int jobs;            /* worker processes; <= 1: in this process, files renamed together */
	/* The load curve's points, set by cmp_rate_path: the rates and the
	 * scenario's own rate (when the scenario gives it), ascending; pt_r[k]
	 * is the cells' load index of point k, 0 (the column's own run) for the
	 * scenario's rate. A rate equal to the scenario's is not run again. */
	double pt_rate[CMP_MAX_RATES + 1];
	int pt_r[CMP_MAX_RATES + 1];
	int n_pts;
	int same_r; /* the load index whose rate is the scenario's (not run), or 0 */
};

int cmp_n_seeds(const struct cmp_grid *g);
int cmp_n_cells(const struct cmp_grid *g);
int cmp_cell(const struct cmp_grid *g, int p, int s, int r);
/* Whether cell i is not run: its load is the scenario's own, whose run is
 * the column's (load index 0) with the same requests and results. */
int cmp_cell_skipped(const struct cmp_grid *g, int i);

/* Parses --seeds ("N": seeds 1..N; "a-b"; "a,b,c") into g. 0, or -1. */
int cmp_parse_seeds(struct cmp_grid *g, const char *v);
/* Parses --rates "r1,r2,..." (positive, increasing) into g. 0, or -1. */
int cmp_parse_rates(struct cmp_grid *g, const char *v);
/* Finds the workload's rate key in base (rate_path) and the load curve's
 * points (pt_rate, pt_r, n_pts, same_r); 0, or -1 with err. */
int cmp_rate_path(struct cmp_grid *g, const struct cJSON *base, char *err, size_t errlen);

/* Runs tasks 0..n-1 but those skip marks (skip NULL: none) in up to jobs
 * worker processes: fn(ctx, i, &sums[i]) in a worker, its summary brought
 * back. Results are fn's whatever the worker. CLI_OK, or the first
 * failure's CLI_* code (fn reports it). */
typedef int (*cmp_task_fn)(void *ctx, int i, struct met_summary *sum);
int cmp_run_parallel(int n, int jobs, cmp_task_fn fn, void *ctx, const unsigned char *skip,
		     struct met_summary *sums);

/* Runs every cell of g into sums (cmp_n_cells of them, zeroed), cells of
 * load 0 and seed index 0 into set when in this process. Results are the
 * same whatever g->jobs. CLI_OK, or a CLI_* code after reporting. */
int cmp_run(const struct cli_common *o, const struct cJSON *base, const struct cmp_grid *g,
	    const char *out, struct afile_set *set, struct met_summary *sums);

/* Adds to each column entry of cmp (the comparison.json array, one entry
 * per policy) its "seeds" (when several) and "capacity" (when --rates)
 * objects, and writes OUT/capacity.json when --rates. 0, or -1 with err. */
int cmp_annotate(const struct cmp_grid *g, const struct met_summary *sums, struct cJSON *cmp,
		 const char *out, char *err, size_t errlen);
/* The verdict's spread source (res_spread_fn) over g's cells sums: column
 * p's min, median and max of figure m over its seeds when --seeds gave
 * several and every seed has the figure (0), else -1 (one seed). */
struct res_metric;
struct res_spread;
struct cmp_spread_ctx {
	const struct cmp_grid *g;
	const struct met_summary *sums;
};
int cmp_seed_spread(const void *ctx, const struct res_metric *m, size_t p,
		    struct res_spread *out);
/* The comparison table with each figure's median over the seeds and its
 * range, "0.052 (0.049-0.061)", one column per policy. */
void cmp_print_seeds_table(FILE *f, const struct cmp_grid *g, const struct met_summary *sums);
/* compare --rates --plot: DIR/plots/latency_load.dat and the figure drawn
 * from it into figs (struct report_figs). 0, or 3 with err. */
struct report_figs;
int cmp_plot_capacity(const struct cmp_grid *g, const struct met_summary *sums, const char *out,
		      struct report_figs *figs, char *err, size_t errlen);
/* The load curves and capacity, one block per policy. */
void cmp_print_capacity(FILE *f, const struct cmp_grid *g, const struct met_summary *sums);
/* Capacity's verdict: the columns within one load step (one grid point)
 * of the highest capacity are best; their gain over column baseline is
 * material when the baseline's capacity is two steps or more below. The
 * sentence into buf; when verdict (comparison.json's list) is given, an
 * entry {figure "capacity", best, change, material} first in it. */
void cmp_capacity_verdict(const struct cmp_grid *g, const struct met_summary *sums, int baseline,
			  char *buf, size_t len, struct cJSON *verdict);

#endif
