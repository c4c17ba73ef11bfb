/* rng: seeded GSL random streams and the distributions scenarios name. */
#ifndef KVSIM_RNG_H
#define KVSIM_RNG_H

#include <stdint.h>

#include <gsl/gsl_rng.h>

/* Independent streams per component (arrivals, lengths, routing, ...): the
 * stream's seed is a splitmix64 mix of the scenario seed and a stream id, so
 * adding a stream never shifts the draws of another. Caller frees with
 * gsl_rng_free. NULL when memory runs out. */
gsl_rng *rng_stream(uint64_t seed, uint64_t stream_id);

/* splitmix64 finaliser: the one 64-bit mixer used for seeds and hashes. */
static inline uint64_t rng_mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

enum dist_kind {
	DIST_CONSTANT,    /* value */
	DIST_UNIFORM,     /* min, max (inclusive integers for token counts) */
	DIST_EXPONENTIAL, /* mean */
	DIST_LOGNORMAL,   /* median, sigma */
	DIST_GAMMA,       /* mean, cv */
	DIST_GEOMETRIC,   /* mean; support 1, 2, ... */
	DIST_ZIPF,        /* n, s; ranks 1..n */
};

struct dist {
	enum dist_kind kind;
	double a, b;       /* the two parameters, in the order listed above */
	double *zipf_cdf;  /* DIST_ZIPF only: n cumulative probabilities */
};

/* Builds a distribution; for zipf it allocates the CDF table (O(n)).
 * Returns 0, or -1 on bad parameters / no memory. */
int dist_make(struct dist *d, enum dist_kind kind, double a, double b);
void dist_free(struct dist *d);
/* Deep copy (the zipf table is duplicated). */
int dist_copy(struct dist *dst, const struct dist *src);
double dist_sample(const struct dist *d, gsl_rng *r);
/* A token count: the sample rounded to the nearest integer, at least 1. */
uint32_t dist_sample_tokens(const struct dist *d, gsl_rng *r);
/* The distribution's mean (for zipf, the mean rank). */
double dist_mean(const struct dist *d);
const char *dist_kind_name(enum dist_kind kind);

/* Zipf ranks over 0..n-1 (rank 0 most popular), P(k) proportional to
 * 1/(k+1)^s. The table is O(n) memory; a draw is a binary search, O(log n). */
struct zipf {
	uint32_t n;
	double *cdf;
};
int zipf_make(struct zipf *z, uint32_t n, double s);
void zipf_free(struct zipf *z);
uint32_t zipf_draw(const struct zipf *z, gsl_rng *r);

#endif
