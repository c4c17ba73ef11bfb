/* metrics: request samples, token accounting, GSL statistics. */
#include "results/metrics.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "results/fmt.h"
#include "results/metric_table.h"
#include "results/steady.h"
#include "sim/request.h"
#include "workloads/workload.h"

void met_init_with(struct metrics *m, const struct res_metrics *t, double slo_ttft_s,
		   double slo_tpot_s, FILE *csv)
{
	memset(m, 0, sizeof *m);
	m->slo_ttft_s = slo_ttft_s;
	m->slo_tpot_s = slo_tpot_s;
	m->csv = csv;
	m->table = t;
	size_t it = 0;
	for (const struct res_stat *g; (g = res_stat_next(t, &it));) {
		/* check_metric_table holds every table to this */
		assert(m->n_stat < MET_STAT_MAX && g->slot < MET_STAT_MAX);
		if (g->per_token == RES_GAPS_KIND)
			m->gaps_stat = g;
		else
			m->stat[m->n_stat++] = g;
	}
}

void met_set_client(struct metrics *m, const struct met_client *c)
{
	if (!c->on || m->client.on)
		return;
	m->client = *c;
	/* the client's groups, in table order among the others */
	m->n_stat = 0;
	size_t it = 0;
	for (const struct res_stat *g; (g = res_stat_next_all(m->table, &it));)
		if (g->per_token != RES_GAPS_KIND)
			m->stat[m->n_stat++] = g;
}

/* g's figure for r in the client's view: TTFT plus what comes before the
 * engine and the first chunk's way back; the time per message the client
 * times after the first. NaN: none. */
static double client_stat_of(const struct metrics *m, const struct res_stat *g,
			     const struct request *r)
{
	const struct met_client *c = &m->client;
	if (r->state != REQ_DONE)
		return NAN;
	if (g->client == RES_CLIENT_TTFT || g->client == RES_CLIENT_E2E) {
		/* the last message's way back is the first's */
		int64_t to = g->client == RES_CLIENT_TTFT ? r->first_token_ns : r->finish_ns;
		double span = (double)(to - r->arrival_ns) * 1e-9;
		return span + c->api_server_s + c->tokenize_s_per_token * r->prompt_tokens +
		       c->first_chunk_s;
	}
	if (r->output_tokens < 2)
		return NAN;
	double msgs = (double)(r->output_tokens - 1) * c->messages_per_token;
	return (double)(r->finish_ns - r->first_token_ns) * 1e-9 / msgs;
}

void met_init(struct metrics *m, double slo_ttft_s, double slo_tpot_s, FILE *csv)
{
	met_init_with(m, NULL, slo_ttft_s, slo_tpot_s, csv);
}

static void sample_free(struct met_sample *s)
{
	free(s->v);
	free(s->hist);
}

void met_free(struct metrics *m)
{
	for (int i = 0; i < MET_STAT_MAX; i++)
		sample_free(&m->sample[i]);
	free(m->gaps.hist);
	for (size_t k = 0; k < m->n_stages; k++) {
		sample_free(&m->stage_acc[k].ttft);
		sample_free(&m->stage_acc[k].tpot);
		sample_free(&m->stage_acc[k].e2e);
		sample_free(&m->stage_acc[k].ttft_client);
		sample_free(&m->stage_acc[k].itl_client);
	}
	free(m->stage_acc);
	free(m->steady);
	memset(m, 0, sizeof *m);
}

int met_set_stages(struct metrics *m, const struct wl_stage_info *win, size_t n)
{
	m->stage_acc = n ? calloc(n, sizeof *m->stage_acc) : NULL;
	if (n && !m->stage_acc)
		return -1;
	m->stage_win = win;
	m->n_stages = n;
	return 0;
}

/* r's stage: the last whose window starts at or before its arrival (the
 * windows are in time order), or -1. O(log stages). */
static long stage_of(const struct metrics *m, const struct request *r)
{
	size_t lo = 0, hi = m->n_stages;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->stage_win[mid].requests && m->stage_win[mid].start_ns <= r->arrival_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (long)lo - 1 : -1;
}

static int stage_record(struct metrics *m, const struct request *r, const double *v)
{
	long k = stage_of(m, r);
	if (k < 0)
		return 0;
	struct met_stage_acc *a = &m->stage_acc[k];
	int rc = 0;
	a->arrived++;
	if (r->finish_ns > a->last_finish_ns)
		a->last_finish_ns = r->finish_ns;
	if (r->state == REQ_DONE) {
		a->completed++;
		a->input_tokens += r->prompt_tokens;
		a->output_tokens += r->output_tokens;
	} else if (r->state == REQ_SHED) {
		a->shed++;
	} else {
		a->failed++;
	}
	if (!isnan(v[MET_TTFT]))
		rc |= met_sample_add(&a->ttft, v[MET_TTFT]);
	if (!isnan(v[MET_TPOT]))
		rc |= met_sample_add(&a->tpot, v[MET_TPOT]);
	if (!isnan(v[MET_E2E]))
		rc |= met_sample_add(&a->e2e, v[MET_E2E]);
	if (!isnan(v[MET_TTFT_CLIENT]))
		rc |= met_sample_add(&a->ttft_client, v[MET_TTFT_CLIENT]);
	if (!isnan(v[MET_ITL_CLIENT]))
		rc |= met_sample_add(&a->itl_client, v[MET_ITL_CLIENT]);
	return rc;
}

/* Histogram bins: bin 0 holds values <= 1 ns, bin b >= 1 holds
 * (1e-9 (1.001)^(b-1), 1e-9 (1.001)^b]; the top bin takes the rest. */
#define HIST_BINS 36900
static const double hist_lo = 1e-9, hist_step = 1.001;

static size_t hist_bin(double x)
{
	if (!(x > hist_lo))
		return 0;
	double b = ceil(log(x / hist_lo) / log(hist_step));
	return b >= HIST_BINS - 1 ? HIST_BINS - 1 : (size_t)b;
}

/* The exact sample's values into a new histogram (0, or -1 when memory
 * runs out: the sample is then as it was). */
static int to_hist(struct met_sample *s)
{
	s->hist = calloc(HIST_BINS, sizeof *s->hist);
	if (!s->hist)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		s->hist[hist_bin(s->v[i])]++;
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
	return 0;
}

int met_sample_add(struct met_sample *s, double x)
{
	s->count++;
	s->sum += x;
	if (s->count == 1 || x > s->max)
		s->max = x;
	if (s->hist) {
		s->hist[hist_bin(x)]++;
		return 0;
	}
	if (s->n == MET_EXACT_MAX) {
		if (to_hist(s))
			return -1;
		s->hist[hist_bin(x)]++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		double *nv = realloc(s->v, cap * sizeof *nv);
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

/* The gaps' histogram: whole nanoseconds in log-linear bins, the bit
 * length of the value and its next GAP_SUB_BITS bits (values below
 * 2^GAP_SUB_BITS ns each a bin of its own), so a bin is at most 1/1024 of
 * its values wide (0.1%) and its index costs a count of leading zeros,
 * not a logarithm: the engine reports a gap per iteration. */
#define GAP_SUB_BITS 10
#define GAP_BINS ((64 - GAP_SUB_BITS + 1) << GAP_SUB_BITS)

static size_t gap_bin(uint64_t v)
{
	if (v < (1u << GAP_SUB_BITS))
		return (size_t)v;
	unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - GAP_SUB_BITS;
	return ((size_t)(shift + 1) << GAP_SUB_BITS) + (size_t)((v >> shift) & ((1u << GAP_SUB_BITS) - 1));
}

/* The middle of bin b in ns (a bin of its own below 2^GAP_SUB_BITS). */
static double gap_bin_mid(size_t b)
{
	if (b < (1u << GAP_SUB_BITS))
		return (double)b;
	unsigned shift = (unsigned)(b >> GAP_SUB_BITS) - 1;
	double lo = (double)(((uint64_t)1 << GAP_SUB_BITS) + (b & ((1u << GAP_SUB_BITS) - 1)));
	return ldexp(lo + 0.5, (int)shift);
}

int met_gaps_add(struct metrics *m, int64_t gap_ns, uint64_t count)
{
	if (!m->gaps_stat || !count)
		return 0;
	if (!m->gaps.hist && !(m->gaps.hist = calloc(GAP_BINS, sizeof *m->gaps.hist)))
		return -1;
	uint64_t v = gap_ns > 0 ? (uint64_t)gap_ns : 0;
	m->gaps.hist[gap_bin(v)] += count;
	m->gaps.count += count;
	m->gaps.sum_ns += v * count;
	if (gap_ns > m->gaps.max_ns)
		m->gaps.max_ns = gap_ns;
	return 0;
}

/* The gaps' f-quantile in seconds: the bin holding rank f (count - 1), as
 * GSL ranks a sorted sample, at the bin's middle (never past the max). */
static double gaps_quantile(const struct metrics *m, double f)
{
	double rank = f * (double)(m->gaps.count - 1);
	uint64_t seen = 0;
	for (size_t b = 0; b < GAP_BINS; b++) {
		seen += m->gaps.hist[b];
		if ((double)seen > rank) {
			double v = gap_bin_mid(b);
			return (v > (double)m->gaps.max_ns ? (double)m->gaps.max_ns : v) * 1e-9;
		}
	}
	return (double)m->gaps.max_ns * 1e-9;
}

/* The f-quantile from the histogram: the bin holding rank f (count - 1),
 * as GSL ranks a sorted sample, reported at the bin's geometric middle. */
static double hist_quantile(const struct met_sample *s, double f)
{
	double rank = f * (double)(s->count - 1);
	uint64_t seen = 0;
	for (size_t b = 0; b < HIST_BINS; b++) {
		seen += s->hist[b];
		if ((double)seen > rank) {
			if (b == 0)
				return hist_lo;
			double v = hist_lo * pow(hist_step, (double)b - 0.5);
			return v > s->max ? s->max : v;
		}
	}
	return s->max;
}

void met_csv_header_with(FILE *f, const struct res_metrics *t)
{
	met_csv_header_opts(f, t, 0);
}

void met_csv_header_opts(FILE *f, const struct res_metrics *t, int client)
{
	fputs("id,session,turn,node,status,reason,arrival_s,prompt_tokens,output_tokens,", f);
	size_t it = 0;
	for (const struct res_stat *g; (g = client ? res_stat_next_all(t, &it) : res_stat_next(t, &it));)
		if (g->per_token != RES_GAPS_KIND)
			fprintf(f, "%s,", g->key);
	fputs("cached,reloaded,migrated,recomputed,fresh,preempt_recomputed,preemptions,"
	      "prefill_node\n",
	      f);
}

void met_csv_header(FILE *f)
{
	met_csv_header_with(f, NULL);
}

static void count_reason(struct met_reasons *w, const char *reason)
{
	for (size_t i = 0; i < w->n; i++) {
		if (!strcmp(w->reason[i], reason)) {
			w->count[i]++;
			return;
		}
	}
	if (w->n < 8) {
		w->reason[w->n] = reason;
		w->count[w->n++] = 1;
	}
}

/* Appends x as %.9f and a comma. */
static char *put_s(char *p, double x)
{
	p = fmt_put_fixed(p, x, 9);
	*p++ = ',';
	return p;
}

static char *put_u(char *p, uint64_t v, char sep)
{
	p += fmt_u64(p, v);
	*p++ = sep;
	return p;
}

/* One requests.csv row, as fprintf wrote it, in one fwrite: v[slot] is
 * each statistics group's figure (NaN: an empty cell). */
static void csv_row(const struct metrics *m, const struct request *r, const char *status,
		    const double *v)
{
	/* (1 + MET_STAT_MAX) figures x 400, 512 of strings, integers */
	char line[(1 + MET_STAT_MAX) * 400 + 1024], *p = line;
	const char *reason = r->reason ? r->reason : "";
	size_t ls = strlen(status), lr = strlen(reason);
	if (ls + lr > 512) { /* no such strings today; kept correct anyway */
		fprintf(m->csv, "%llu,%llu,%u,%d,%s,%s,", (unsigned long long)r->id,
			(unsigned long long)r->session, r->turn, r->node, status, reason);
	} else {
		p = put_u(p, r->id, ',');
		p = put_u(p, r->session, ',');
		p = put_u(p, r->turn, ',');
		p += fmt_i64(p, r->node);
		*p++ = ',';
		memcpy(p, status, ls);
		p += ls;
		*p++ = ',';
		memcpy(p, reason, lr);
		p += lr;
		*p++ = ',';
	}
	p = put_s(p, (double)r->arrival_ns * 1e-9);
	p = put_u(p, r->prompt_tokens, ',');
	p = put_u(p, r->output_tokens, ',');
	for (size_t k = 0; k < m->n_stat; k++) {
		double x = v[m->stat[k]->slot];
		if (isnan(x))
			*p++ = ',';
		else
			p = put_s(p, x);
	}
	p = put_u(p, r->cached, ',');
	p = put_u(p, r->reloaded, ',');
	p = put_u(p, r->migrated, ',');
	p = put_u(p, r->recomputed, ',');
	p = put_u(p, r->fresh, ',');
	p = put_u(p, r->preempt_recomputed, ',');
	p = put_u(p, r->preemptions, ',');
	if (r->prefill_node >= 0)
		p += fmt_i64(p, r->prefill_node);
	*p++ = '\n';
	fwrite(line, 1, (size_t)(p - line), m->csv);
}

int met_record(struct metrics *m, const struct request *r, double recompute_s)
{
	const char *status = r->state == REQ_DONE ? "completed" : r->state == REQ_SHED ? "shed"
											: "failed";
	/* each statistics group's figure, by slot; NaN: none for r */
	double v[MET_STAT_MAX];
	int rc = 0;
	for (size_t k = 0; k < MET_STAT_MAX; k++)
		v[k] = NAN;
	for (size_t k = 0; k < m->n_stat; k++) {
		unsigned slot = m->stat[k]->slot;
		v[slot] = m->stat[k]->client ? client_stat_of(m, m->stat[k], r)
					     : res_stat_of(m->stat[k], r);
		if (!isnan(v[slot]))
			rc |= met_sample_add(&m->sample[slot], v[slot]);
	}
	if (r->state == REQ_DONE) {
		m->completed++;
		double ttft = v[MET_TTFT], tpot = v[MET_TPOT];
		int met = ttft <= m->slo_ttft_s && (isnan(tpot) || tpot <= m->slo_tpot_s);
		m->slo_met += met;
		m->tokens.output += r->output_tokens;
	} else if (r->state == REQ_SHED) {
		m->shed++;
		count_reason(&m->shed_why, r->reason ? r->reason : "unknown");
	} else {
		m->failed++;
		count_reason(&m->failed_why, r->reason ? r->reason : "unknown");
	}
	if (r->accounted) {
		m->tokens.input += r->prompt_tokens;
		m->tokens.cached += r->cached;
		m->tokens.reloaded += r->reloaded;
		m->tokens.migrated += r->migrated;
		m->tokens.recomputed += r->recomputed;
		m->tokens.fresh += r->fresh;
		m->tokens.preempt_recomputed += r->preempt_recomputed;
		m->recompute_gpu_s += recompute_s;
	}
	m->preemptions += r->preemptions;
	if (m->n_stages)
		rc |= stage_record(m, r, v);
	rc |= steady_record(&m->steady, r, v[MET_TTFT]);
	if (m->csv)
		csv_row(m, r, status, v);
	return rc ? -1 : 0;
}

/* Sorts v ascending: an LSD radix sort on the IEEE-754 bits (mapped so that
 * unsigned order is numeric order), O(n); the same sequence GSL's heapsort
 * gives (equal values are interchangeable), about twenty times faster on a
 * million samples. Six digits of 11 bits: their counts fit in L1 and the
 * scatter writes to 2,048 places at a time (a fifth faster than four of 16
 * bits). The keys replace the values in v's own memory (allocated, so it
 * takes the type last stored: nothing reads it as double meanwhile), and
 * one scratch array of n takes the other half of each pass. Falls back to
 * gsl_sort when scratch memory is short. */
enum { SORT_BITS = 11, SORT_DIGITS = 6, SORT_RADIX = 1 << SORT_BITS };

static void sort_doubles(double *v, size_t n)
{
	if (n < 1024) {
		gsl_sort(v, 1, n);
		return;
	}
	uint64_t *const keys = (uint64_t *)(void *)v, *const scratch = malloc(n * sizeof *scratch);
	size_t *count = calloc(SORT_DIGITS * SORT_RADIX, sizeof *count);
	if (!scratch || !count) {
		free(scratch);
		free(count);
		gsl_sort(v, 1, n);
		return;
	}
	uint64_t *a = keys, *b = scratch;
	/* the keys, and every digit's counts in the same pass */
	const uint64_t mask = SORT_RADIX - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t k;
		memcpy(&k, &v[i], sizeof k);
		k = (k >> 63) ? ~k : k | (1ULL << 63);
		keys[i] = k;
		for (int d = 0; d < SORT_DIGITS; d++)
			count[d * SORT_RADIX + ((k >> (SORT_BITS * d)) & mask)]++;
	}
	for (int pass = 0; pass < SORT_DIGITS; pass++) {
		size_t *c = count + (size_t)pass * SORT_RADIX, sum = 0;
		int shift = SORT_BITS * pass;
		if (c[(a[0] >> shift) & mask] == n)
			continue; /* one digit for all: the order stands */
		for (size_t d = 0; d < SORT_RADIX; d++) {
			size_t k = c[d];
			c[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++)
			b[c[(a[i] >> shift) & mask]++] = a[i];
		uint64_t *t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t k = (a[i] >> 63) ? a[i] & ~(1ULL << 63) : ~a[i];
		memcpy(&v[i], &k, sizeof k);
	}
	free(scratch);
	free(count);
}

void met_stats_of(struct met_sample *s, struct met_stats *out)
{
	memset(out, 0, sizeof *out);
	out->n = s->count;
	if (s->count == 0) { /* no sample: no figure ("n/a", null in JSON) */
		out->mean = out->p50 = out->p90 = out->p99 = out->max = NAN;
		return;
	}
	if (s->hist) {
		out->mean = s->sum / (double)s->count;
		out->p50 = hist_quantile(s, 0.50);
		out->p90 = hist_quantile(s, 0.90);
		out->p99 = hist_quantile(s, 0.99);
		out->max = s->max;
		return;
	}
	sort_doubles(s->v, s->n);
	out->mean = gsl_stats_mean(s->v, 1, s->n);
	out->p50 = gsl_stats_quantile_from_sorted_data(s->v, 1, s->n, 0.50);
	out->p90 = gsl_stats_quantile_from_sorted_data(s->v, 1, s->n, 0.90);
	out->p99 = gsl_stats_quantile_from_sorted_data(s->v, 1, s->n, 0.99);
	out->max = s->v[s->n - 1];
}

void met_summarize(struct metrics *m, double sim_time_s, struct met_summary *out)
{
	out->sim_time_s = sim_time_s;
	out->arrived = m->arrived;
	out->completed = m->completed;
	out->shed = m->shed;
	out->failed = m->failed;
	out->percentiles_exact = 1;
	for (size_t k = 0; k < m->n_stat; k++) {
		unsigned slot = m->stat[k]->slot;
		met_stats_of(&m->sample[slot], &out->stat[slot]);
		out->percentiles_exact &= !m->sample[slot].hist;
	}
	/* the gaps' percentiles come from the histogram (docs/outputs.md);
	 * they do not change what `percentiles` says of the others */
	if (m->gaps_stat) {
		/* mean and max exact, the quantiles from the histogram */
		struct met_stats *st = &out->stat[m->gaps_stat->slot];
		memset(st, 0, sizeof *st);
		st->n = m->gaps.count;
		st->mean = st->p50 = st->p90 = st->p99 = st->max = NAN;
		if (st->n) {
			st->mean = (double)m->gaps.sum_ns / (double)st->n * 1e-9;
			st->p50 = gaps_quantile(m, 0.50);
			st->p90 = gaps_quantile(m, 0.90);
			st->p99 = gaps_quantile(m, 0.99);
			st->max = (double)m->gaps.max_ns * 1e-9;
		}
	}
	out->tokens = m->tokens;
	double in = (double)m->tokens.input;
	/* shares of no input have no sample: n/a, null in JSON */
	out->prefix_hit_ratio = in > 0 ? (double)m->tokens.cached / in : NAN;
	out->recompute_ratio = in > 0 ? (double)m->tokens.recomputed / in : NAN;
	out->recompute_gpu_s = m->recompute_gpu_s;
	out->preemptions = m->preemptions;
	out->requests_per_s = sim_time_s > 0 ? (double)m->completed / sim_time_s : 0;
	out->output_tokens_per_s = sim_time_s > 0 ? (double)m->tokens.output / sim_time_s : 0;
	out->input_tokens_per_s = sim_time_s > 0 ? (double)m->tokens.input / sim_time_s : 0;
	out->total_tokens_per_s = out->input_tokens_per_s + out->output_tokens_per_s;
	out->slo_ttft_s = m->slo_ttft_s;
	out->slo_tpot_s = m->slo_tpot_s;
	out->slo_attainment = m->arrived ? (double)m->slo_met / (double)m->arrived : 0;
	out->goodput_rps = sim_time_s > 0 ? (double)m->slo_met / sim_time_s : 0;
	out->shed_why = m->shed_why;
	out->failed_why = m->failed_why;
	out->client = m->client.on;
	out->stages = m->n_stages ? calloc(m->n_stages, sizeof *out->stages) : NULL;
	out->n_stages = out->stages ? m->n_stages : 0;
	for (size_t k = 0; k < out->n_stages; k++) {
		const struct wl_stage_info *w = &m->stage_win[k];
		struct met_stage_acc *a = &m->stage_acc[k];
		struct met_stage *st = &out->stages[k];
		st->start_s = (double)w->start_ns * 1e-9;
		st->end_s = (double)w->end_ns * 1e-9;
		st->rate = w->rate;
		st->duration_s = w->duration_s;
		st->sent = w->requests;
		st->last_finish_s = (double)a->last_finish_ns * 1e-9;
		st->arrived = a->arrived;
		st->completed = a->completed;
		st->shed = a->shed;
		st->failed = a->failed;
		st->input_tokens = a->input_tokens;
		st->output_tokens = a->output_tokens;
		met_stats_of(&a->ttft, &st->ttft);
		met_stats_of(&a->tpot, &st->tpot);
		met_stats_of(&a->e2e, &st->e2e);
		met_stats_of(&a->ttft_client, &st->ttft_client);
		met_stats_of(&a->itl_client, &st->itl_client);
	}
	steady_judge(m->steady, m->slo_ttft_s, &out->steadiness);
}

void met_summary_free(struct met_summary *s)
{
	free(s->nodes);
	s->nodes = NULL;
	s->n_nodes = 0;
	free(s->pools);
	s->pools = NULL;
	s->n_pools = 0;
	free(s->stages);
	s->stages = NULL;
	s->n_stages = 0;
}
