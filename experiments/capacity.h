/* capacity: the highest offered load that meets the SLOs while steady, and the spread of replications. */
#ifndef KVSIM_CAPACITY_H
#define KVSIM_CAPACITY_H

#include <stddef.h>

/* One load of a policy's load curve (the median over its seeds). */
struct cap_point {
	double rate;                 /* the offered load, in the workload's rate key's units */
	double ttft_p99_s, tpot_p99_s; /* tpot_p99_s < 0: no request got a second token */
	double attainment;           /* slo.attainment */
	double lost_frac;            /* (shed + failed) / arrived */
	int completed;               /* some request completed */
	int steady;                  /* summary.json's steady, or 1 when it has none */
	int meets;                   /* set by cap_capacity */
};

/* Whether p meets the SLOs (<= 0: none) as `kvsim plan` judges a probe:
 * TTFT p99 and TPOT p99 within them, at most 0.1% of the requests shed or
 * failed, some completed; and steady. */
int cap_meets(const struct cap_point *p, double slo_ttft_s, double slo_tpot_s);
/* Sets each point's meets and returns the index of the capacity point in
 * pts (sorted by rate, ascending): the highest rate such that it and every
 * lower rate meet, or -1 when the lowest fails. O(n). */
int cap_capacity(struct cap_point *pts, size_t n, double slo_ttft_s, double slo_tpot_s);
/* min, median (the mean of the middle two for an even n) and max of
 * x[0..n), n >= 1; x is sorted in place. */
void cap_spread(double *x, size_t n, double *min, double *median, double *max);

#endif
