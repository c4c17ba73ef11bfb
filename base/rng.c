/* rng: GSL generator streams and distribution sampling. */
#include "base/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

gsl_rng *rng_stream(uint64_t seed, uint64_t stream_id)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (!r)
		return NULL;
	uint64_t s = rng_mix64(rng_mix64(seed) ^ rng_mix64(stream_id + 0x1234567ULL));
	/* mt19937 takes an unsigned long seed; 0 selects GSL's default, avoid it. */
	unsigned long ul = (unsigned long)(s & 0xffffffffUL);
	gsl_rng_set(r, ul ? ul : 4357UL);
	return r;
}

int zipf_make(struct zipf *z, uint32_t n, double s)
{
	z->n = n;
	z->cdf = NULL;
	if (n == 0 || !(s >= 0))
		return -1;
	z->cdf = malloc(n * sizeof *z->cdf);
	if (!z->cdf)
		return -1;
	double acc = 0;
	for (uint32_t k = 0; k < n; k++) {
		acc += pow((double)k + 1.0, -s);
		z->cdf[k] = acc;
	}
	for (uint32_t k = 0; k < n; k++)
		z->cdf[k] /= acc;
	z->cdf[n - 1] = 1.0;
	return 0;
}

void zipf_free(struct zipf *z)
{
	free(z->cdf);
	z->cdf = NULL;
	z->n = 0;
}

static uint32_t cdf_search(const double *cdf, uint32_t n, double u)
{
	uint32_t lo = 0, hi = n - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

uint32_t zipf_draw(const struct zipf *z, gsl_rng *r)
{
	return cdf_search(z->cdf, z->n, gsl_rng_uniform(r));
}

int dist_make(struct dist *d, enum dist_kind kind, double a, double b)
{
	memset(d, 0, sizeof *d);
	d->kind = kind;
	d->a = a;
	d->b = b;
	if (kind == DIST_ZIPF) {
		struct zipf z;
		if (!(a >= 1 && a <= 1e8) || zipf_make(&z, (uint32_t)a, b) != 0)
			return -1;
		d->zipf_cdf = z.cdf;
	}
	return 0;
}

void dist_free(struct dist *d)
{
	free(d->zipf_cdf);
	d->zipf_cdf = NULL;
}

int dist_copy(struct dist *dst, const struct dist *src)
{
	*dst = *src;
	dst->zipf_cdf = NULL;
	if (src->kind != DIST_ZIPF)
		return 0;
	size_t n = (size_t)src->a;
	dst->zipf_cdf = malloc(n * sizeof *dst->zipf_cdf);
	if (!dst->zipf_cdf)
		return -1;
	memcpy(dst->zipf_cdf, src->zipf_cdf, n * sizeof *dst->zipf_cdf);
	return 0;
}

double dist_sample(const struct dist *d, gsl_rng *r)
{
	switch (d->kind) {
	case DIST_CONSTANT:
		return d->a;
	case DIST_UNIFORM: {
		/* Inclusive integers when both bounds are integral (token counts).
		 * gsl_rng_uniform_int only reaches the generator's range (2^32):
		 * wider ranges scale a uniform double instead. */
		if (floor(d->a) == d->a && floor(d->b) == d->b) {
			double span = d->b - d->a + 1;
			if (span <= (double)gsl_rng_max(r))
				return d->a + (double)gsl_rng_uniform_int(r, (unsigned long)span);
			return d->a + floor(span * gsl_rng_uniform(r));
		}
		return d->a + (d->b - d->a) * gsl_rng_uniform(r);
	}
	case DIST_EXPONENTIAL:
		return gsl_ran_exponential(r, d->a);
	case DIST_LOGNORMAL:
		return gsl_ran_lognormal(r, log(d->a), d->b);
	case DIST_GAMMA: {
		double shape = 1.0 / (d->b * d->b);
		return gsl_ran_gamma(r, shape, d->a / shape);
	}
	case DIST_GEOMETRIC:
		return (double)gsl_ran_geometric(r, 1.0 / d->a);
	case DIST_ZIPF:
		return (double)cdf_search(d->zipf_cdf, (uint32_t)d->a, gsl_rng_uniform(r)) + 1.0;
	}
	return 0;
}

uint32_t dist_sample_tokens(const struct dist *d, gsl_rng *r)
{
	double x = floor(dist_sample(d, r) + 0.5);
	if (!(x >= 1))
		return 1;
	if (x > 4e9)
		return 4000000000u;
	return (uint32_t)x;
}

double dist_mean(const struct dist *d)
{
	switch (d->kind) {
	case DIST_CONSTANT:
		return d->a;
	case DIST_UNIFORM:
		return (d->a + d->b) / 2;
	case DIST_EXPONENTIAL:
	case DIST_GAMMA:
	case DIST_GEOMETRIC:
		return d->a;
	case DIST_LOGNORMAL:
		return d->a * exp(d->b * d->b / 2);
	case DIST_ZIPF: {
		double m = 0, prev = 0;
		for (uint32_t k = 0; k < (uint32_t)d->a; k++) {
			m += (k + 1.0) * (d->zipf_cdf[k] - prev);
			prev = d->zipf_cdf[k];
		}
		return m;
	}
	}
	return 0;
}

const char *dist_kind_name(enum dist_kind kind)
{
	static const char *const names[] = {"constant",  "uniform",   "exponential", "lognormal",
					    "gamma",     "geometric", "zipf"};
	return names[kind];
}
