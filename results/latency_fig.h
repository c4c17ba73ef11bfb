/* latency_fig: the data of the latency tail figures and of the cluster's timeline. */
#ifndef KVSIM_RESULTS_LATENCY_FIG_H
#define KVSIM_RESULTS_LATENCY_FIG_H

#include <stddef.h>

/* The most points a tail curve is drawn with per policy, whatever the
 * number of requests: up to half on ranks evenly spaced over the sample,
 * the rest on ranks whose share of slower requests is evenly spaced on a
 * log scale, so the p99 to p99.99 tail keeps its points. */
#define RES_CCDF_POINTS 300

/* Writes out: for each policy of the blank-separated list drawn, a block
 * (gnuplot's `index`; blocks two blank lines apart, each opening with the
 * header "value_s,fraction_at_or_above") of the complementary CDF of
 * requests.csv's column metric (values > 0) in dir/<policy>/: the k-th
 * smallest of n values with (n - k + 1) / n, for at most RES_CCDF_POINTS
 * ranks k (RES_CCDF_POINTS above). Then one more block with a row
 * "p99_s,0.01" per policy, its p99 (*p99 in the order of drawn, as
 * summary.json gives it). 0, 2 (damaged input) or 3 with err. O(n log n). */
int res_write_ccdf(const char *dir, const char *drawn, const char *metric, const double *p99,
		   const char *out, char *err, size_t errlen);

/* From dir/<policy>/summary.json: the p99 of metric ("ttft_s" or
 * "tpot_s"; NaN when null) into *p99, and the scenario's SLO on it
 * (slo.ttft_p99_s or slo.tpot_p99_s; 0 when none) into *slo. 0, or 2 with
 * err naming the file and key. */
int res_latency_marks(const char *dir, const char *policy, const char *metric, double *p99,
		      double *slo, char *err, size_t errlen);

/* Writes out, the cluster's timeline per policy, as a dashboard would
 * record it from dir/<policy>/requests.csv: one block per policy (as in
 * res_write_ccdf, header "start_s,ttft_p99_s,requests_per_s,
 * output_tokens_per_s"), a row per bucket of *width_s seconds from 0 to
 * the last request's end: the TTFT p99 of the requests whose first token
 * came in the bucket (NaN when none did), and the requests completed in it
 * and their output tokens, per second of the bucket (the last over its
 * part of the run; left out when that is under half a bucket). *width_s: 60 when the
 * longest run is at least 20 minutes long, else the largest of 1, 2, 5, 10,
 * 15 or 30 s that still cuts it into 20 buckets (a shorter run would show
 * one or two points a minute). 0, 2 or 3 with err. */
int res_write_cluster(const char *dir, const char *const *policies, size_t n, const char *out,
		      double *width_s, char *err, size_t errlen);

#endif
