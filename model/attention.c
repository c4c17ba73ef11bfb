/* attention: the calibrated attention model, Vidur's attention.csv reader
 * and the interpolation of its measured times. */
#include "model/attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "model/profile.h"

const char *const attn_backend_names[ATTN_BACKENDS + 1] = {"flashinfer", "flash_attention", NULL};
/* Vidur's spelling of the same, in the order above */
static const char *const vidur_backends[ATTN_BACKENDS] = {"AttentionBackend.FLASHINFER",
							   "AttentionBackend.FLASH_ATTENTION"};

void attn_fit_plain(struct attn_fit *f, double mfu, double mbu)
{
	memset(f, 0, sizeof *f);
	f->efficiency = mfu;
	f->causal = 0.5;
	f->bandwidth = mbu;
}

double attn_fit_prefill_s(const struct attn_fit *f, const struct attn_shape *s, double rows,
			  double nc, double nsq, double ctx)
{
	if (rows <= 0)
		return 0;
	double flops = 4.0 * s->q_heads * s->head_dim * (nc + f->causal * nsq);
	double p = rows * s->q_heads;
	double eff = f->efficiency * p / (p + f->rows_half) * ctx / (ctx + f->context_half);
	return f->pre_fixed_s + flops / (s->peak_flops * eff);
}

double attn_fit_decode_s(const struct attn_fit *f, const struct attn_shape *s, double d,
			 double sum_k, double *per_token)
{
	double pt = d > 0 ? s->kv_bytes / (s->hbm_bytes_per_s * f->bandwidth) : 0;
	if (per_token)
		*per_token = pt;
	if (d <= 0)
		return 0;
	return f->dec_fixed_s + f->per_head_s * d * s->kv_heads + sum_k * pt;
}

void attn_rows_free(struct attn_rows *a)
{
	free(a->r);
	memset(a, 0, sizeof *a);
}

enum {
	A_PRE_T, A_DEC_T, A_BATCH, A_CHUNK, A_KV, A_IS_PRE, A_TP, A_QH, A_KVH, A_EMBD, A_BACKEND,
	N_ACOLS
};
static const char *const acols[N_ACOLS] = {
    "time_stats.attn_prefill.median", "time_stats.attn_decode.median", "batch_size",
    "prefill_chunk_size", "kv_cache_size", "is_prefill", "num_tensor_parallel_workers",
    "n_q_head", "n_kv_head", "n_embd", "attention_backend"};

/* A non-negative number from field s of column c, or -1 with err. */
static int field_num(const char *s, const char *path, int lineno, int c, double *out, char *err,
		     size_t errlen)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0) || !isfinite(v)) {
		snprintf(err, errlen, "%s:%d: %s: expected a number >= 0, got \"%s\"", path, lineno,
			 acols[c], s);
		return -1;
	}
	*out = v;
	return 0;
}

/* One data line's fields f (columns col) into a's next row. */
static int parse_row(struct attn_rows *a, char **f, const int *col, int lineno, char *err,
		     size_t errlen)
{
	const char *path = a->path, *pre = f[col[A_IS_PRE]], *be = f[col[A_BACKEND]];
	struct attn_row r = {0};
	if (!strcmp(pre, "True") || !strcmp(pre, "true"))
		r.prefill = 1;
	else if (strcmp(pre, "False") && strcmp(pre, "false")) {
		snprintf(err, errlen, "%s:%d: is_prefill: expected True or False, got \"%s\"", path,
			 lineno, pre);
		return -1;
	}
	double v[N_ACOLS];
	for (int c = A_BATCH; c <= A_EMBD; c++)
		if (c != A_IS_PRE && field_num(f[col[c]], path, lineno, c, &v[c], err, errlen))
			return -1;
	int tc = r.prefill ? A_PRE_T : A_DEC_T;
	if (field_num(f[col[tc]], path, lineno, tc, &v[tc], err, errlen))
		return -1;
	r.tp = (int)v[A_TP];
	r.batch = v[A_BATCH];
	r.chunk = v[A_CHUNK];
	r.kv = v[A_KV];
	r.t_s = v[tc] * 1e-3;
	if (r.tp < 1 || r.tp != v[A_TP] || v[A_QH] < 1 || v[A_KVH] < 1 || v[A_EMBD] < 1 ||
	    r.t_s <= 0 || (r.prefill ? r.chunk < 1 : r.batch < 1 || r.kv < 1)) {
		snprintf(err, errlen, "%s:%d: expected a time above 0, a TP degree, heads and (prefill) "
				      "a chunk >= 1 or (decode) a batch and KV length >= 1",
			 path, lineno);
		return -1;
	}
	int backend = -1;
	for (int b = 0; b < ATTN_BACKENDS; b++)
		if (!strcmp(be, vidur_backends[b]))
			backend = b;
	if (backend < 0) {
		snprintf(err, errlen, "%s:%d: attention_backend: expected %s or %s, got \"%s\"", path,
			 lineno, vidur_backends[0], vidur_backends[1], be);
		return -1;
	}
	if (a->n == 0) {
		a->q_heads = (int)v[A_QH];
		a->kv_heads = (int)v[A_KVH];
		a->n_embd = (int)v[A_EMBD];
		a->backend = (enum attn_backend)backend;
	} else if (a->q_heads != (int)v[A_QH] || a->kv_heads != (int)v[A_KVH] ||
		   a->n_embd != (int)v[A_EMBD] || (int)a->backend != backend) {
		snprintf(err, errlen, "%s:%d: expected one model and backend per file (the first row "
				      "has %d q heads, %d KV heads, n_embd %d, %s)",
			 path, lineno, a->q_heads, a->kv_heads, a->n_embd, vidur_backends[a->backend]);
		return -1;
	}
	a->r[a->n++] = r;
	return 0;
}

int attn_rows_read(struct attn_rows *a, const char *path, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	snprintf(a->path, sizeof a->path, "%s", path);
	char *text = cfg_slurp(path, NULL, err, errlen);
	if (!text)
		return -1;
	size_t lines = 1;
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	enum { MAXF = 64 };
	char *f[MAXF], *save = NULL, *line = strtok_r(text, "\n", &save);
	int col[N_ACOLS], rc = -1, lineno = 1;
	a->r = malloc(lines * sizeof *a->r);
	if (!a->r) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	int nh = line ? prof_split_csv(line, f, MAXF) : 0;
	for (int c = 0; c < N_ACOLS; c++) {
		col[c] = -1;
		for (int i = 0; i < nh && i < MAXF; i++)
			if (!strcmp(f[i], acols[c]))
				col[c] = i;
		if (col[c] < 0) {
			snprintf(err, errlen, "%s:1: no column \"%s\" (expected a Vidur attention.csv)",
				 path, acols[c]);
			goto done;
		}
	}
	while ((line = strtok_r(NULL, "\n", &save))) {
		lineno++;
		if (!*line || *line == '\r')
			continue;
		int n = prof_split_csv(line, f, MAXF);
		if (n != nh) {
			snprintf(err, errlen, "%s:%d: %d fields, expected %d as in the header", path,
				 lineno, n, nh);
			goto done;
		}
		if (parse_row(a, f, col, lineno, err, errlen))
			goto done;
	}
	if (a->n == 0) {
		snprintf(err, errlen, "%s: no data rows", path);
		goto done;
	}
	rc = 0;
done:
	free(text);
	if (rc)
		attn_rows_free(a);
	return rc;
}

void attn_rows_shape(const struct attn_rows *a, int tp, double peak_flops, double hbm_bytes_per_s,
		     struct attn_shape *s)
{
	double hd = (double)a->n_embd / a->q_heads;
	s->q_heads = (double)a->q_heads / tp;
	s->kv_heads = a->kv_heads >= tp ? (double)a->kv_heads / tp : 1; /* replicated below tp */
	s->head_dim = hd;
	s->kv_bytes = 2.0 * s->kv_heads * hd * 2.0; /* K and V, FP16 */
	s->peak_flops = peak_flops;
	s->hbm_bytes_per_s = hbm_bytes_per_s;
}

void attn_table_free(struct attn_table *t)
{
	free(t->dec);
	free(t->pre);
	free(t->buf);
	memset(t, 0, sizeof *t);
}

/* Rows as (key, x, t) triples of one kind, for sorting into lines. */
struct kxt {
	double k, x, t;
};

static int cmp_kxt(const void *a, const void *b)
{
	const struct kxt *p = a, *q = b;
	if (p->k != q->k)
		return p->k < q->k ? -1 : 1;
	return (p->x > q->x) - (p->x < q->x);
}

/* Sorts v[0..n) into lines (repeats averaged), writing x and t into buf
 * from *used on. Returns the number of lines, or -1. */
static long make_lines(struct kxt *v, size_t n, struct attn_line **out, double *buf, size_t *used)
{
	qsort(v, n, sizeof *v, cmp_kxt);
	size_t n_lines = 0;
	for (size_t i = 0; i < n; i++)
		n_lines += i == 0 || v[i].k != v[i - 1].k;
	struct attn_line *l = calloc(n_lines ? n_lines : 1, sizeof *l);
	if (!l)
		return -1;
	size_t li = 0;
	for (size_t i = 0; i < n;) {
		struct attn_line *ln = &l[li++];
		ln->key = v[i].k;
		ln->x = buf + *used;
		ln->t = buf + *used + n;
		size_t j = i;
		while (j < n && v[j].k == ln->key) {
			size_t m = j;
			double sum = 0;
			for (; m < n && v[m].k == ln->key && v[m].x == v[j].x; m++)
				sum += v[m].t;
			ln->x[ln->n] = v[j].x;
			ln->t[ln->n] = sum / (double)(m - j);
			ln->n++;
			j = m;
		}
		*used += ln->n;
		i = j;
	}
	*out = l;
	return (long)n_lines;
}

int attn_table_build(struct attn_table *t, const struct attn_rows *a, int tp, size_t skip)
{
	memset(t, 0, sizeof *t);
	int need_both = tp == 0;
	for (size_t i = 0; need_both && i < a->n; i++)
		if (tp == 0 || a->r[i].tp < tp)
			tp = a->r[i].tp;
	t->tp = tp;
	struct kxt *dec = malloc((a->n + 1) * sizeof *dec), *pre = malloc((a->n + 1) * sizeof *pre);
	/* x values, then t values, per kind: 2 n doubles each at most */
	t->buf = malloc((4 * a->n + 1) * sizeof *t->buf);
	size_t nd = 0, np = 0, used = 0;
	int rc = -1;
	if (!dec || !pre || !t->buf)
		goto done;
	for (size_t i = 0; i < a->n; i++) {
		const struct attn_row *r = &a->r[i];
		if (i == skip || r->tp != tp)
			continue;
		if (r->prefill)
			pre[np++] = (struct kxt){r->chunk, r->kv, r->t_s};
		else
			dec[nd++] = (struct kxt){r->kv, r->batch, r->t_s};
	}
	if (need_both ? nd == 0 || np == 0 : nd + np == 0)
		goto done;
	/* each kind's lines take x from buf[used..] and t n values further */
	long k = make_lines(dec, nd, &t->dec, t->buf, &used);
	if (k < 0)
		goto done;
	t->n_dec = (size_t)k;
	used = 2 * nd;
	k = make_lines(pre, np, &t->pre, t->buf, &used);
	if (k < 0)
		goto done;
	t->n_pre = (size_t)k;
	rc = 0;
done:
	free(dec);
	free(pre);
	if (rc)
		attn_table_free(t);
	return rc;
}

int attn_table_load(struct attn_table *t, struct attn_rows *rows, const char *dir, const char *gpu,
		    const char *folder, char *err, size_t errlen)
{
	static const char *const names[] = {"attention.csv", "attention_sample.csv"};
	for (int i = 0; i < 2; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/compute/%s/%s/%s", dir, gpu, folder, names[i]);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		fclose(f);
		if (attn_rows_read(rows, path, err, errlen))
			return -1;
		if (attn_table_build(t, rows, 0, (size_t)-1)) {
			snprintf(err, errlen, "%s: expected prefill and decode rows (or out of memory)",
				 path);
			attn_rows_free(rows);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* Line l at x: linear between its points; outside its range, the chord
 * from its first to its last point extended (the times are close to
 * linear along a line: in batch for decode, in cached tokens for
 * prefill), never below half the nearer end's time. */
static double line_at(const struct attn_line *l, double x)
{
	size_t lo = 0, hi = l->n - 1;
	if (x < l->x[0] || x > l->x[hi]) {
		double end = x < l->x[0] ? l->t[0] : l->t[hi];
		if (hi == 0)
			return end;
		double s = (l->t[hi] - l->t[0]) / (l->x[hi] - l->x[0]);
		double t = end + s * (x - (x < l->x[0] ? l->x[0] : l->x[hi]));
		return t > end / 2 ? t : end / 2;
	}
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (l->x[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	if (lo == hi)
		return l->t[lo];
	return l->t[lo] + (l->t[hi] - l->t[lo]) * (x - l->x[lo]) / (l->x[hi] - l->x[lo]);
}

static int covers(const struct attn_line *l, double x)
{
	return x >= l->x[0] && x <= l->x[l->n - 1];
}

/* The work a point stands for: decode batch x kv, prefill chunk x (kv +
 * chunk / 2); y is the line key, x the position on the line. */
static double work(int prefill, double y, double x)
{
	return prefill ? y * (x + y / 2) : x * y;
}

/* Lines ls (sorted by key) at key y and position x: see the header. The
 * bracketing lines are the nearest below and above y that were measured
 * at x, else the nearest ones, extended along themselves. *dy gets the
 * derivative in y (decode: in kv). */
static double lines_eval(const struct attn_line *ls, size_t n, int prefill, double y, double x,
			 int within, double *dy)
{
	long lo = -1, hi = -1, lo_any = -1, hi_any = -1;
	for (size_t i = 0; i < n; i++) {
		if (ls[i].key <= y) {
			lo_any = (long)i;
			if (covers(&ls[i], x))
				lo = (long)i;
		} else {
			if (hi_any < 0)
				hi_any = (long)i;
			if (hi < 0 && covers(&ls[i], x))
				hi = (long)i;
		}
	}
	if (lo >= 0 && ls[lo].key == y)
		hi = lo;
	*dy = 0;
	if (within && (lo < 0 || hi < 0))
		return NAN;
	if (lo < 0)
		lo = lo_any;
	if (hi < 0)
		hi = hi_any;
	if (lo >= 0 && hi >= 0) {
		double ta = line_at(&ls[lo], x), tb = line_at(&ls[hi], x);
		if (lo == hi)
			return ta;
		double wa = work(prefill, ls[lo].key, x), wb = work(prefill, ls[hi].key, x);
		double s = (tb - ta) / (wb - wa);
		*dy = prefill ? 0 : s * x;
		return ta + s * (work(prefill, y, x) - wa);
	}
	if (hi >= 0) /* below every line: held flat */
		return line_at(&ls[hi], x);
	/* above every line: the two highest extended, or in proportion to the
	 * work when there is one alone or they fall */
	double ta = line_at(&ls[lo], x), wa = work(prefill, ls[lo].key, x), w = work(prefill, y, x);
	double s = ta / wa;
	if (lo > 0) {
		double t2 = line_at(&ls[lo - 1], x), w2 = work(prefill, ls[lo - 1].key, x);
		if (ta > t2)
			s = (ta - t2) / (wa - w2);
	}
	*dy = prefill ? 0 : s * x;
	return ta + s * (w - wa);
}

double attn_table_prefill_s(const struct attn_table *t, double chunk, double kv)
{
	double d;
	return lines_eval(t->pre, t->n_pre, 1, chunk, kv, 0, &d);
}

double attn_table_decode_s(const struct attn_table *t, double batch, double kv, double *per_kv)
{
	double d, v = lines_eval(t->dec, t->n_dec, 0, kv, batch, 0, &d);
	if (per_kv)
		*per_kv = d;
	return v;
}

double attn_table_prefill_within(const struct attn_table *t, double chunk, double kv)
{
	double d;
	return t->n_pre ? lines_eval(t->pre, t->n_pre, 1, chunk, kv, 1, &d) : NAN;
}

double attn_table_decode_within(const struct attn_table *t, double batch, double kv,
				double *per_kv)
{
	double d = 0, v = t->n_dec ? lines_eval(t->dec, t->n_dec, 0, kv, batch, 1, &d) : NAN;
	if (per_kv)
		*per_kv = d;
	return v;
}
