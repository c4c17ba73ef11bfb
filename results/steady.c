/* steady: whether a run reached a steady state, from its requests binned by time. */
#include "results/steady.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/request.h"

/* Halves every bin's resolution: bin k takes bins 2k and 2k+1. */
static void fold(struct met_steady *s)
{
	for (size_t k = 0; k < STEADY_BINS; k++) {
		size_t a = 2 * k, b = 2 * k + 1;
		int in = a < STEADY_BINS;
		s->arrived[k] = in ? s->arrived[a] + (b < STEADY_BINS ? s->arrived[b] : 0) : 0;
		s->ended[k] = in ? s->ended[a] + (b < STEADY_BINS ? s->ended[b] : 0) : 0;
		s->shed[k] = in ? s->shed[a] + (b < STEADY_BINS ? s->shed[b] : 0) : 0;
		for (size_t h = 0; h < STEADY_HIST; h++)
			s->ttft[k][h] = in ? s->ttft[a][h] + (b < STEADY_BINS ? s->ttft[b][h] : 0) : 0;
	}
	s->bin_s *= 2;
}

/* The bin of time t (s), folding until it fits. */
static size_t bin_of(struct met_steady *s, double t)
{
	if (!(t > 0))
		return 0;
	while (t / s->bin_s >= STEADY_BINS)
		fold(s);
	return (size_t)(t / s->bin_s);
}

static size_t hist_of(double x)
{
	if (!(x > STEADY_HIST_LO))
		return 0;
	double b = ceil(log(x / STEADY_HIST_LO) / log(STEADY_HIST_STEP));
	return b >= STEADY_HIST - 1 ? STEADY_HIST - 1 : (size_t)b;
}

int steady_record(struct met_steady **sp, const struct request *r, double ttft_s)
{
	struct met_steady *s = *sp;
	if (!s) {
		s = *sp = calloc(1, sizeof *s);
		if (!s)
			return -1;
		s->bin_s = 1;
	}
	double at = (double)r->arrival_ns * 1e-9;
	double end = r->state == REQ_DONE && r->finish_ns > r->arrival_ns ? (double)r->finish_ns * 1e-9
									   : at;
	if (at > s->last_arrival_s)
		s->last_arrival_s = at;
	bin_of(s, end > at ? end : at); /* fold first: both bins in one resolution */
	size_t a = bin_of(s, at), e = bin_of(s, end);
	s->arrived[a]++;
	s->ended[e]++;
	if (r->state == REQ_SHED)
		s->shed[a]++;
	if (r->state == REQ_DONE && !isnan(ttft_s))
		s->ttft[a][hist_of(ttft_s)]++;
	return 0;
}

/* The p99 of the TTFT histograms of bins [lo, hi) (NaN without samples);
 * *count: how many samples. */
static double p99_of(const struct met_steady *s, size_t lo, size_t hi, uint64_t *count)
{
	uint64_t h[STEADY_HIST] = {0}, n = 0;
	for (size_t k = lo; k < hi; k++)
		for (size_t b = 0; b < STEADY_HIST; b++) {
			h[b] += s->ttft[k][b];
			n += s->ttft[k][b];
		}
	*count = n;
	if (!n)
		return NAN;
	double rank = 0.99 * (double)(n - 1);
	uint64_t seen = 0;
	for (size_t b = 0; b < STEADY_HIST; b++) {
		seen += h[b];
		if ((double)seen > rank) /* the bin's upper edge: never under the truth */
			return STEADY_HIST_LO * pow(STEADY_HIST_STEP, (double)b);
	}
	return NAN;
}

/* Requests arrived and not yet ended at the end of bin k. */
static double in_system(const struct met_steady *s, size_t k)
{
	double n = 0;
	for (size_t i = 0; i <= k && i < STEADY_BINS; i++)
		n += (double)s->arrived[i] - (double)s->ended[i];
	return n;
}

void steady_judge(const struct met_steady *s, double slo_ttft_s, struct met_steadiness *out)
{
	memset(out, 0, sizeof *out);
	out->ttft_p99_first_s = out->ttft_p99_second_s = NAN;
	if (!s) {
		snprintf(out->reason, sizeof out->reason, "too few requests to tell");
		return;
	}
	double T = s->last_arrival_s;
	size_t end = (size_t)(T / s->bin_s), w = (size_t)(STEADY_WARMUP * T / s->bin_s);
	size_t mid = w + (end + 1 - w) / 2;
	out->window_s = T;
	out->warmup_s = (double)w * s->bin_s;
	uint64_t n1, n2;
	out->ttft_p99_first_s = p99_of(s, w, mid, &n1);
	out->ttft_p99_second_s = p99_of(s, mid, end + 1, &n2);
	out->in_system_mid = in_system(s, mid - 1);
	out->in_system_end = in_system(s, end);
	double shed = 0, arrived = 0, ended = 0, first = 0;
	for (size_t k = mid; k <= end; k++) {
		arrived += s->arrived[k];
		ended += s->ended[k];
		shed += s->shed[k];
	}
	for (size_t k = w; k < mid; k++)
		first += s->arrived[k];
	out->arrived_second = arrived;
	out->ended_second = ended;
	out->shed_share_second = arrived > 0 ? shed / arrived : 0;
	if (end < 8 || first < 100 || arrived < 100) {
		snprintf(out->reason, sizeof out->reason, "too few requests to tell");
		return;
	}
	out->known = 1;
	double p1 = out->ttft_p99_first_s, p2 = out->ttft_p99_second_s;
	/* Little's law: at a steady time in the system, requests in the system
	 * follow the arrival rate. A run whose own load climbs (a trace, a
	 * schedule, sessions still accumulating) holds more at the end with no
	 * overload, so the growth counted is beyond what the arrival rate over
	 * the last quarter of each half explains. */
	size_t q = (end - mid) / 4 > 0 ? (end - mid) / 4 : 1;
	double lam_mid = 0, lam_end = 0;
	for (size_t k = mid - q; k < mid; k++)
		lam_mid += s->arrived[k];
	for (size_t k = end - q; k < end; k++)
		lam_end += s->arrived[k];
	double scale = lam_mid > 0 && lam_end > lam_mid ? lam_end / lam_mid : 1;
	double grew = out->in_system_end - scale * out->in_system_mid;
	double floor_s = 0.05 * slo_ttft_s;
	if (out->shed_share_second > 0.01) {
		out->unsteady = 1;
		snprintf(out->reason, sizeof out->reason,
			 "shed %.1f%% of the second half's arrivals: shedding hides overload",
			 100 * out->shed_share_second);
	} else if (grew > 0.01 * arrived && grew > 3 * sqrt(fmax(out->in_system_mid, 0)) + 10) {
		out->unsteady = 1;
		if (scale > 1.05)
			snprintf(out->reason, sizeof out->reason,
				 "requests in the system grew from %.0f to %.0f over the second half, "
				 "beyond the arrival rate's rise (x%.2f)",
				 out->in_system_mid, out->in_system_end, scale);
		else
			snprintf(out->reason, sizeof out->reason,
				 "requests in the system grew from %.0f to %.0f over the second half",
				 out->in_system_mid, out->in_system_end);
	} else if (n1 >= STEADY_TAIL_MIN && n2 >= STEADY_TAIL_MIN && p2 > 1.5 * p1 &&
		   p2 - p1 > floor_s) {
		out->unsteady = 1;
		snprintf(out->reason, sizeof out->reason,
			 "TTFT p99 rose from %.3g s to %.3g s between the halves", p1, p2);
	} else {
		snprintf(out->reason, sizeof out->reason,
			 "TTFT p99 %.3g s then %.3g s, requests in the system %.0f then %.0f", p1,
			 p2, out->in_system_mid, out->in_system_end);
	}
}
