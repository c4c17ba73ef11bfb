/* capacity: the highest offered load that meets the SLOs while steady, and the spread of replications. */
#include <math.h>
#include <stdlib.h>

#include "experiments/capacity.h"

int cap_meets(const struct cap_point *p, double slo_ttft_s, double slo_tpot_s)
{
	return p->completed && p->steady && (slo_ttft_s <= 0 || p->ttft_p99_s <= slo_ttft_s) &&
	       (slo_tpot_s <= 0 || p->tpot_p99_s < 0 || p->tpot_p99_s <= slo_tpot_s) &&
	       p->lost_frac <= 0.001;
}

int cap_capacity(struct cap_point *pts, size_t n, double slo_ttft_s, double slo_tpot_s)
{
	int best = -1, broken = 0;
	for (size_t i = 0; i < n; i++) {
		pts[i].meets = cap_meets(&pts[i], slo_ttft_s, slo_tpot_s);
		broken |= !pts[i].meets;
		if (!broken)
			best = (int)i;
	}
	return best;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void cap_spread(double *x, size_t n, double *min, double *median, double *max)
{
	qsort(x, n, sizeof *x, cmp_double);
	*min = x[0];
	*max = x[n - 1];
	*median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}
