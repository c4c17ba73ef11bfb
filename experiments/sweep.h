/* sweep: parameter sweeps (cartesian products of scenario values) and their merge. */
#ifndef KVSIM_SWEEP_H
#define KVSIM_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cJSON;
struct res_metrics;

#define SWP_MAX_AXES 8
#define SWP_MAX_SETS 256

struct swp_axis {
	char path[128];
	int n;
	char **values; /* as given: JSON when it parses, else a string */
};

/* A sweep: the base scenario (file, or NULL for the embedded default, plus
 * the user's --set assignments), the base seed and the varied axes. Point i
 * takes value (i / stride_k) % n_k of axis k, the last axis fastest. */
struct swp {
	const char *scenario;  /* the scenario file as given, or NULL */
	const char *catalog;   /* --catalog FILE, or NULL */
	const char *sets[SWP_MAX_SETS];
	int n_sets;
	uint64_t seed;
	struct swp_axis ax[SWP_MAX_AXES];
	int n_axes;
	long n_points;
};

/* Adds an axis from "PATH=v1,v2,...". 0, or -1 with err. */
int swp_add_axis(struct swp *s, const char *arg, char *err, size_t errlen);
void swp_free(struct swp *s);
/* "path=value;path=value" for point i (its identity). */
void swp_point_canon(const struct swp *s, long i, char *buf, size_t len);
/* Point i's seed: the value of its "seed" axis when the sweep varies the
 * seed, else the base seed, so that every point sees the same sessions
 * and requests (common random numbers: points differ only by what they
 * vary). */
uint64_t swp_point_seed(const struct swp *s, long i);
/* Writes DIR/sweep.spec.json (everything merge needs). */
int swp_write_spec(const struct swp *s, const char *dir, char *err, size_t errlen);
/* Runs point i into DIR/points/pNNNNNN (an ordinary run). 0, 2 (bad
 * scenario at that point) or 3; on failure err says why and the point's
 * folder holds error.txt. warning (NULL: not wanted; wlen bytes) gets the
 * run's warning (met_summary.warning; "" when none). */
int swp_run_point(const struct swp *s, long i, const char *dir, char *warning, size_t wlen,
		  char *err, size_t errlen);
/* One shell command per point (kvsim run ... --out DIR/points/pNNNNNN) into
 * f, with kvsim as exe; absolute paths, single-quoted. */
int swp_write_jobs(const struct swp *s, const char *exe, const char *dir, FILE *f, char *err,
		   size_t errlen);
/* Builds DIR/sweep.csv and DIR/sweep.json from DIR/sweep.spec.json and
 * the points' results, wherever they were run. Reports points missing or
 * failed on out. *missing and *failed get their counts. 0, or -1 with err. */
int swp_merge(const char *dir, FILE *out, long *missing, long *failed, char *err, size_t errlen);
/* swp_merge with the RES_M_SWEEP rows of table as the metric columns (NULL:
 * the built-in metric table). */
int swp_merge_with(const char *dir, const struct res_metrics *table, FILE *out, long *missing,
		   long *failed, char *err, size_t errlen);
/* Prints DIR/sweep.json as a table, a row per point: its varied values,
 * TTFT p99, TPOT p99, goodput, SLO attainment and whether it was steady;
 * points that differ only by seed share a row, each figure their median
 * with its range and "k of n" steady. 0, or -1 with err. */
int swp_print_table(const char *dir, FILE *f, char *err, size_t errlen);
/* Writes DIR/plots/latency_load.dat from DIR/sweep.json for the load axis
 * rate: a block per series (the points' other varied values, seeds aside),
 * each row a load with the median TTFT p99 and TPOT p99 over the seeds;
 * names gets the series' names, blank-separated ("sweep" for the only
 * series of a sweep that varies the load alone). The rows written, or -1
 * with err. */
int swp_latency_load_data(const char *dir, const char *rate, char *names, size_t nlen, char *err,
			  size_t errlen);

#endif
