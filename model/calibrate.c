/* calibrate: GSL nonlinear least squares over Vidur's linear-operator times. */
#include "model/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "model/profile.h"

double cal_time(const struct roof_params *rp, double peak, double bw, double flops, double bytes,
		int n_ops)
{
	double tc = flops / (peak * rp->mfu), tm = bytes / (bw * rp->mbu), t;
	if (rp->knee <= 0 || rp->knee > 64) {
		t = fmax(tc, tm);
	} else {
		/* Scaled so that large ratios do not overflow. */
		double hi = fmax(tc, tm), lo = fmin(tc, tm);
		t = hi > 0 ? hi * pow(1.0 + pow(lo / hi, rp->knee), 1.0 / rp->knee) : 0;
	}
	return t + n_ops * rp->op_overhead_s;
}

void cal_errors_of(const struct roof_params *rp, double peak, double bw,
		   const struct cal_point *pts, size_t n, int model, int tp, struct cal_errors *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++) {
		if (pts[i].model != model || pts[i].tp != tp)
			continue;
		double e =
		    fabs(cal_time(rp, peak, bw, pts[i].flops, pts[i].bytes, CAL_LINEAR_OPS) - pts[i].t) /
		    pts[i].t;
		int k = pts[i].tokens < 64 ? 0 : pts[i].tokens <= 256 ? 1 : 2;
		out->mape += e;
		out->worst = fmax(out->worst, e);
		out->n++;
		out->band[k] += e;
		out->band_n[k]++;
	}
	if (out->n)
		out->mape /= out->n;
	for (int k = 0; k < 3; k++)
		if (out->band_n[k])
			out->band[k] /= out->band_n[k];
}

int cal_points(const struct profile *p, int model, struct cal_point **pts, size_t *n, size_t *cap)
{
	double h = p->n_embd, e = p->n_expanded_embd, hd = h / p->n_head;
	double qkv_out = (p->n_head + 2.0 * p->n_kv_head) * hd, up_out = e * (p->gated ? 2.0 : 1.0);
	for (int k = 0; k < p->n_series; k++) {
		const struct prof_series *s = &p->series[k];
		double w = prof_linear_params(p, s->tp), tp = s->tp;
		for (size_t i = 0; i < s->n; i++) {
			if (*n == *cap) {
				size_t c = *cap ? 2 * *cap : 4096;
				struct cal_point *q = realloc(*pts, c * sizeof *q);
				if (!q)
					return -1;
				*pts = q;
				*cap = c;
			}
			double N = s->tokens[i];
			/* bf16: 2 bytes per weight and per activation read or written:
			 * each GEMM reads its input and writes its output. */
			double act = N * ((h + qkv_out / tp) + (h / tp + h) + (h + up_out / tp) +
					  (e / tp + h));
			(*pts)[(*n)++] = (struct cal_point){2.0 * N * w, 2.0 * w + 2.0 * act,
							    s->linear_s[i], s->tp, N, model};
		}
	}
	return 0;
}

struct fit_data {
	const struct cal_point *pts;
	size_t n;
	double peak, bw;
};

/* x = (logit mfu, logit mbu, log knee-1, op overhead in us). */
static void unpack(const gsl_vector *x, struct roof_params *rp)
{
	rp->mfu = 1.0 / (1.0 + exp(-gsl_vector_get(x, 0)));
	rp->mbu = 1.0 / (1.0 + exp(-gsl_vector_get(x, 1)));
	rp->knee = 1.0 + exp(gsl_vector_get(x, 2));
	rp->op_overhead_s = fabs(gsl_vector_get(x, 3)) * 1e-6;
}

static int residuals(const gsl_vector *x, void *ctx, gsl_vector *f)
{
	const struct fit_data *d = ctx;
	struct roof_params rp;
	unpack(x, &rp);
	for (size_t i = 0; i < d->n; i++) {
		const struct cal_point *p = &d->pts[i];
		double t = cal_time(&rp, d->peak, d->bw, p->flops, p->bytes, CAL_LINEAR_OPS);
		gsl_vector_set(f, i, (t - p->t) / p->t);
	}
	return GSL_SUCCESS;
}

int cal_fit(const struct cal_point *pts, size_t n, double peak, double bw, struct roof_params *out,
	    char *err, size_t errlen)
{
	if (n < 8) {
		snprintf(err, errlen, "calibration needs at least 8 points, got %zu", n);
		return -1;
	}
	struct fit_data d = {pts, n, peak, bw};
	gsl_multifit_nlinear_fdf fdf;
	memset(&fdf, 0, sizeof fdf);
	fdf.f = residuals;
	fdf.df = NULL; /* finite differences */
	fdf.n = n;
	fdf.p = 4;
	fdf.params = &d;
	gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
	    gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, n, 4);
	gsl_vector *x = gsl_vector_alloc(4);
	if (!w || !x) {
		if (w)
			gsl_multifit_nlinear_free(w);
		if (x)
			gsl_vector_free(x);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Start: docs/design.md's 0.7 / 0.8, knee 2, 5 us per kernel. */
	gsl_vector_set(x, 0, log(0.7 / 0.3));
	gsl_vector_set(x, 1, log(0.8 / 0.2));
	gsl_vector_set(x, 2, 0.0);
	gsl_vector_set(x, 3, 5.0);
	gsl_multifit_nlinear_init(x, &fdf, w);
	int info;
	int status = gsl_multifit_nlinear_driver(500, 1e-10, 1e-10, 1e-10, NULL, NULL, &info, w);
	unpack(gsl_multifit_nlinear_position(w), out);
	gsl_multifit_nlinear_free(w);
	gsl_vector_free(x);
	if (status != GSL_SUCCESS && status != GSL_EMAXITER) {
		snprintf(err, errlen, "calibration did not converge: %s", gsl_strerror(status));
		return -1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted subdirectory names of path (NULL-terminated), or NULL. */
static char **subdirs(const char *path, int *n)
{
	DIR *d = opendir(path);
	*n = 0;
	if (!d)
		return NULL;
	char **v = NULL;
	int cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (*n + 1 >= cap) {
			cap = cap ? 2 * cap : 16;
			char **w = realloc(v, (size_t)cap * sizeof *w);
			if (!w)
				break;
			v = w;
		}
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (v)
		qsort(v, (size_t)*n, sizeof *v, cmp_str);
	return v;
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int cal_load_gpu(const char *dir, const char *gpu, struct cal_point **pts, size_t *n,
		 char ***names, int *n_names, char *err, size_t errlen)
{
	char path[4096];
	size_t cap = 0;
	*pts = NULL;
	*n = 0;
	*names = NULL;
	*n_names = 0;
	snprintf(path, sizeof path, "%s/compute/%s", dir, gpu);
	int n_org;
	char **orgs = subdirs(path, &n_org);
	if (!orgs) {
		snprintf(err, errlen, "%s: no such folder (expected Vidur profiles: "
				      "compute/<gpu>/<org>/<model>/mlp.csv)",
			 path);
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n_org && !rc; i++) {
		snprintf(path, sizeof path, "%s/compute/%s/%s", dir, gpu, orgs[i]);
		int n_mod;
		char **mods = subdirs(path, &n_mod);
		for (int j = 0; mods && j < n_mod && !rc; j++) {
			snprintf(path, sizeof path, "%s/compute/%s/%s/%s/mlp.csv", dir, gpu, orgs[i],
				 mods[j]);
			struct profile p;
			if (prof_read(&p, path, err, errlen)) {
				rc = -1;
				break;
			}
			char **w = realloc(*names, (size_t)(*n_names + 1) * sizeof *w);
			char name[512];
			snprintf(name, sizeof name, "%s/%s", orgs[i], mods[j]);
			if (!w || cal_points(&p, *n_names, pts, n, &cap)) {
				if (w)
					*names = w;
				snprintf(err, errlen, "out of memory");
				rc = -1;
			} else {
				*names = w;
				(*names)[(*n_names)++] = strdup(name);
			}
			prof_free(&p);
		}
		free_list(mods, n_mod);
	}
	free_list(orgs, n_org);
	if (!rc && *n == 0) {
		snprintf(err, errlen, "%s/compute/%s: no mlp.csv found", dir, gpu);
		rc = -1;
	}
	return rc;
}

int cal_collective(const char *csv, int workers, double min_bytes, double *alpha_s,
		   double *beta_s_per_byte, double *mape, int *n_rows, char *err, size_t errlen)
{
	FILE *f = fopen(csv, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open", csv);
		return -1;
	}
	char line[2048];
	size_t n = 0, cap = 0;
	double *x = NULL, *y = NULL, *w = NULL;
	int lineno = 1, rc = 0;
	if (!fgets(line, sizeof line, f)) {
		snprintf(err, errlen, "%s: empty file", csv);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		lineno++;
		/* ,min,max,mean,median,std,rank,num_workers,size,collective,devices_per_node,... */
		char *fl[16];
		int nf = prof_split_csv(line, fl, 16);
		if (nf < 11) {
			snprintf(err, errlen, "%s:%d: %d fields, expected at least 11", csv, lineno, nf);
			rc = -1;
			break;
		}
		double med = atof(fl[4]) * 1e-3, size = atof(fl[8]);
		if (atoi(fl[7]) != workers || atoi(fl[10]) != workers || med <= 0 || size <= 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			double *a = realloc(x, cap * sizeof *a), *b = a ? realloc(y, cap * sizeof *b) : NULL,
			       *c = b ? realloc(w, cap * sizeof *c) : NULL;
			if (a)
				x = a;
			if (b)
				y = b;
			if (c)
				w = c;
			if (!a || !b || !c) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
				break;
			}
		}
		x[n] = size;
		y[n] = med;
		w[n] = 1.0 / (med * med);
		n++;
	}
	fclose(f);
	if (!rc && n < 2) {
		snprintf(err, errlen, "%s: fewer than 2 intra-node rows with %d workers", csv, workers);
		rc = -1;
	}
	if (!rc) {
		double c0, c1, cov00, cov01, cov11, chisq;
		gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
		*alpha_s = c0;
		*beta_s_per_byte = c1;
		double sum = 0;
		int k = 0;
		for (size_t i = 0; i < n; i++) {
			if (x[i] < min_bytes)
				continue;
			sum += fabs(c0 + c1 * x[i] - y[i]) / y[i];
			k++;
		}
		*mape = k ? sum / k : 0;
		*n_rows = k;
	}
	free(x);
	free(y);
	free(w);
	return rc;
}

void cal_attn_set_free(struct cal_attn_set *set)
{
	for (int i = 0; i < set->n; i++) {
		attn_rows_free(&set->files[i]);
		free(set->names[i]);
	}
	free(set->files);
	free(set->names);
	memset(set, 0, sizeof *set);
}

int cal_attn_load_gpu(const char *dir, const char *gpu, struct cal_attn_set *set, char *err,
		      size_t errlen)
{
	memset(set, 0, sizeof *set);
	char path[4096];
	snprintf(path, sizeof path, "%s/compute/%s", dir, gpu);
	int n_org, rc = 0;
	char **orgs = subdirs(path, &n_org);
	for (int i = 0; orgs && i < n_org && !rc; i++) {
		snprintf(path, sizeof path, "%s/compute/%s/%s", dir, gpu, orgs[i]);
		int n_mod;
		char **mods = subdirs(path, &n_mod);
		for (int j = 0; mods && j < n_mod && !rc; j++) {
			char folder[600];
			snprintf(folder, sizeof folder, "%s/%s", orgs[i], mods[j]);
			struct attn_rows *f = realloc(set->files, (size_t)(set->n + 1) * sizeof *f);
			char **nm = f ? realloc(set->names, (size_t)(set->n + 1) * sizeof *nm) : NULL;
			if (f)
				set->files = f;
			if (nm)
				set->names = nm;
			if (!f || !nm) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
				break;
			}
			struct attn_table t;
			int got = attn_table_load(&t, &set->files[set->n], dir, gpu, folder, err, errlen);
			if (got < 0) {
				rc = -1;
				break;
			}
			if (got == 0)
				continue;
			attn_table_free(&t);
			set->names[set->n++] = strdup(folder);
		}
		free_list(mods, n_mod);
	}
	free_list(orgs, n_org);
	if (rc)
		cal_attn_set_free(set);
	return rc;
}

double cal_attn_predict(const struct attn_fit *f, const struct attn_rows *a, const struct attn_row *r,
			double peak, double bw)
{
	struct attn_shape s;
	attn_rows_shape(a, r->tp, peak, bw, &s);
	if (r->prefill)
		return attn_fit_prefill_s(f, &s, r->chunk, r->chunk * r->kv, r->chunk * r->chunk,
					  r->kv + r->chunk);
	return attn_fit_decode_s(f, &s, r->batch, r->batch * r->kv, NULL);
}

void cal_attn_errors(const struct attn_fit *f, const struct attn_rows *a, int prefill, int tp,
		     double peak, double bw, struct cal_attn_err *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < a->n; i++) {
		const struct attn_row *r = &a->r[i];
		if (r->prefill != prefill || (tp && r->tp != tp))
			continue;
		double e = fabs(cal_attn_predict(f, a, r, peak, bw) - r->t_s) / r->t_s;
		out->mape += e;
		out->worst = fmax(out->worst, e);
		out->n++;
	}
	if (out->n)
		out->mape /= out->n;
}

/* The rows of backend b's files, one kind, as (file, row) pairs. */
struct attn_pts {
	const struct cal_attn_set *set;
	const struct attn_rows **file;
	const struct attn_row **row;
	size_t n;
	double peak, bw;
};

static int attn_pts_of(const struct cal_attn_set *set, enum attn_backend b, int prefill,
		       struct attn_pts *p)
{
	size_t cap = 0;
	for (int i = 0; i < set->n; i++)
		cap += set->files[i].backend == b ? set->files[i].n : 0;
	p->set = set;
	p->n = 0;
	p->file = malloc((cap + 1) * sizeof *p->file);
	p->row = malloc((cap + 1) * sizeof *p->row);
	if (!p->file || !p->row)
		return -1;
	for (int i = 0; i < set->n; i++)
		for (size_t k = 0; set->files[i].backend == b && k < set->files[i].n; k++)
			if (set->files[i].r[k].prefill == prefill) {
				p->file[p->n] = &set->files[i];
				p->row[p->n++] = &set->files[i].r[k];
			}
	return 0;
}

/* Decode: t = fixed + per_head x (batch x kv heads) + (batch x kv x KV
 * bytes / bw) / bandwidth: linear in (fixed, per_head, 1 / bandwidth). */
static int fit_decode(const struct attn_pts *p, struct attn_fit *out, char *err, size_t errlen)
{
	if (p->n < 3) {
		snprintf(err, errlen, "decode: %zu rows, need at least 3", p->n);
		return -1;
	}
	gsl_matrix *X = gsl_matrix_alloc(p->n, 3), *cov = gsl_matrix_alloc(3, 3);
	gsl_vector *y = gsl_vector_alloc(p->n), *w = gsl_vector_alloc(p->n), *c = gsl_vector_alloc(3);
	gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(p->n, 3);
	int rc = -1;
	if (!X || !cov || !y || !w || !c || !ws) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct attn_shape s;
		const struct attn_row *r = p->row[i];
		attn_rows_shape(p->file[i], r->tp, p->peak, p->bw, &s);
		gsl_matrix_set(X, i, 0, 1.0);
		gsl_matrix_set(X, i, 1, r->batch * s.kv_heads);
		gsl_matrix_set(X, i, 2, r->batch * r->kv * s.kv_bytes / p->bw);
		gsl_vector_set(y, i, r->t_s);
		gsl_vector_set(w, i, 1.0 / (r->t_s * r->t_s));
	}
	double chisq;
	gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws);
	double fixed = gsl_vector_get(c, 0), ph = gsl_vector_get(c, 1), inv = gsl_vector_get(c, 2);
	if (!(inv > 1) || fixed < 0 || ph < 0) {
		snprintf(err, errlen, "decode fit out of range: fixed %g s, per head %g s, 1/bandwidth %g",
			 fixed, ph, inv);
		goto done;
	}
	out->dec_fixed_s = fixed;
	out->per_head_s = ph;
	out->bandwidth = 1.0 / inv;
	rc = 0;
done:
	gsl_matrix_free(X);
	gsl_matrix_free(cov);
	gsl_vector_free(y);
	gsl_vector_free(w);
	gsl_vector_free(c);
	if (ws)
		gsl_multifit_linear_free(ws);
	return rc;
}

/* Prefill parameters x = (fixed in us, logit efficiency, logit causal,
 * log rows_half, log context_half). */
static void unpack_pre(const gsl_vector *x, struct attn_fit *f)
{
	f->pre_fixed_s = fabs(gsl_vector_get(x, 0)) * 1e-6;
	f->efficiency = 1.0 / (1.0 + exp(-gsl_vector_get(x, 1)));
	f->causal = 1.0 / (1.0 + exp(-gsl_vector_get(x, 2)));
	f->rows_half = exp(gsl_vector_get(x, 3));
	f->context_half = exp(gsl_vector_get(x, 4));
}

static int pre_residuals(const gsl_vector *x, void *ctx, gsl_vector *fv)
{
	const struct attn_pts *p = ctx;
	struct attn_fit f;
	unpack_pre(x, &f);
	for (size_t i = 0; i < p->n; i++) {
		double t = cal_attn_predict(&f, p->file[i], p->row[i], p->peak, p->bw);
		gsl_vector_set(fv, i, (t - p->row[i]->t_s) / p->row[i]->t_s);
	}
	return GSL_SUCCESS;
}

static int fit_prefill(const struct attn_pts *p, struct attn_fit *out, char *err, size_t errlen)
{
	enum { NP = 5 };
	if (p->n < 2 * NP) {
		snprintf(err, errlen, "prefill: %zu rows, need at least %d", p->n, 2 * NP);
		return -1;
	}
	/* Starts (fixed us, efficiency, causal, rows half, context half):
	 * launch-scale fixed costs, FlashAttention-2's 50-73% of peak on A100
	 * (Dao, 2023) and below, the causal triangle and the whole square,
	 * halves from one wave of query tiles to many (chosen to span the
	 * plausible range; the best of them is kept). */
	static const double starts[][NP] = {{10, 0.5, 0.5, 1e3, 1e3},  {5, 0.7, 0.5, 1e4, 1e3},
					    {10, 0.4, 0.9, 1e3, 1e3},  {2, 0.3, 0.9, 1e2, 1e2},
					    {20, 0.6, 0.6, 1e4, 1e4}};
	gsl_multifit_nlinear_fdf fdf;
	memset(&fdf, 0, sizeof fdf);
	fdf.f = pre_residuals;
	fdf.n = p->n;
	fdf.p = NP;
	fdf.params = (void *)p;
	gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
	    gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, p->n, NP);
	gsl_vector *x = gsl_vector_alloc(NP);
	if (!w || !x) {
		if (w)
			gsl_multifit_nlinear_free(w);
		gsl_vector_free(x);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	double best = INFINITY;
	for (size_t k = 0; k < sizeof starts / sizeof *starts; k++) {
		const double *s0 = starts[k];
		gsl_vector_set(x, 0, s0[0]);
		gsl_vector_set(x, 1, log(s0[1] / (1 - s0[1])));
		gsl_vector_set(x, 2, log(s0[2] / (1 - s0[2])));
		gsl_vector_set(x, 3, log(s0[3]));
		gsl_vector_set(x, 4, log(s0[4]));
		gsl_multifit_nlinear_init(x, &fdf, w);
		int info;
		int status = gsl_multifit_nlinear_driver(500, 1e-10, 1e-10, 1e-10, NULL, NULL, &info, w);
		if (status != GSL_SUCCESS && status != GSL_EMAXITER)
			continue;
		double chisq;
		gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), &chisq);
		if (chisq < best) {
			best = chisq;
			unpack_pre(gsl_multifit_nlinear_position(w), out);
		}
	}
	gsl_multifit_nlinear_free(w);
	gsl_vector_free(x);
	if (!isfinite(best)) {
		snprintf(err, errlen, "prefill fit did not converge");
		return -1;
	}
	return 0;
}

int cal_attn_fit(const struct cal_attn_set *set, enum attn_backend b, double peak, double bw,
		 struct attn_fit *out, char *err, size_t errlen)
{
	struct attn_fit f = {0};
	struct attn_pts pre = {0}, dec = {0};
	int rc = -1;
	if (attn_pts_of(set, b, 1, &pre) || attn_pts_of(set, b, 0, &dec)) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	pre.peak = dec.peak = peak;
	pre.bw = dec.bw = bw;
	if (fit_decode(&dec, &f, err, errlen) || fit_prefill(&pre, &f, err, errlen))
		goto done;
	size_t most = 0;
	for (int i = 0; i < set->n; i++)
		if (set->files[i].backend == b && set->files[i].n > most) {
			most = set->files[i].n;
			snprintf(f.profile, sizeof f.profile, "%s", set->names[i]);
		}
	*out = f;
	rc = 0;
done:
	free(pre.file);
	free(pre.row);
	free(dec.file);
	free(dec.row);
	return rc;
}
