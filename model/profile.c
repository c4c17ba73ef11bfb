/* profile: Vidur mlp.csv reader and interpolation over token count. */
#include "model/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_interp.h>

#include "config/cfg.h"

enum { C_TOKENS, C_TP, C_HEAD, C_KV, C_EMBD, C_EXP, C_GATED, C_EMB, N_META };
static const char *const meta_cols[N_META] = {
    "num_tokens", "num_tensor_parallel_workers", "n_head", "n_kv_head", "n_embd",
    "n_expanded_embd", "use_gated_mlp", "time_stats.emb.median"};
static const char *const linear_ops[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj",
					 "mlp_down_proj"};
static const char *const other_ops[] = {"input_layernorm", "attn_rope", "post_attention_layernorm",
					"mlp_act", "add"};
#define N_LIN 4
#define N_OTHER 5

void prof_free(struct profile *p)
{
	for (int i = 0; i < p->n_series; i++) {
		for (int k = 0; k < 3; k++)
			if (p->series[i].ip[k])
				gsl_interp_free(p->series[i].ip[k]);
		if (p->series[i].acc)
			gsl_interp_accel_free(p->series[i].acc);
		free(p->series[i].tokens);
		free(p->series[i].linear_s);
		free(p->series[i].layer_s);
		free(p->series[i].emb_s);
	}
	memset(p, 0, sizeof *p);
}

/* Splits a CSV line in place (no quoting in these files; a CRLF line end
 * is accepted). */
int prof_split_csv(char *line, char **f, int max)
{
	size_t len = strlen(line);
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		line[--len] = 0;
	int n = 0;
	for (char *s = line;; s++) {
		if (n < max)
			f[n] = s;
		n++;
		s = strchr(s, ',');
		if (!s)
			break;
		*s = 0;
	}
	return n;
}

static int col_of(char **f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i], name))
			return i;
	return -1;
}

static struct prof_series *series(struct profile *p, int tp)
{
	for (int i = 0; i < p->n_series; i++)
		if (p->series[i].tp == tp)
			return &p->series[i];
	if (p->n_series == PROF_MAX_TP)
		return NULL;
	struct prof_series *s = &p->series[p->n_series++];
	memset(s, 0, sizeof *s);
	s->tp = tp;
	return s;
}

static int push(struct prof_series *s, size_t *cap, double tok, double lin, double lay, double emb)
{
	if (s->n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		double *a = realloc(s->tokens, c * sizeof *a), *b, *d, *e;
		if (!a)
			return -1;
		s->tokens = a;
		if (!(b = realloc(s->linear_s, c * sizeof *b)))
			return -1;
		s->linear_s = b;
		if (!(d = realloc(s->layer_s, c * sizeof *d)))
			return -1;
		s->layer_s = d;
		if (!(e = realloc(s->emb_s, c * sizeof *e)))
			return -1;
		s->emb_s = e;
		*cap = c;
	}
	s->tokens[s->n] = tok;
	s->linear_s[s->n] = lin;
	s->layer_s[s->n] = lay;
	s->emb_s[s->n] = emb;
	s->n++;
	return 0;
}

static int cmp_tok(const void *a, const void *b, const struct prof_series *s)
{
	(void)s;
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts a series by tokens (insertion sort: the files come sorted or
 * nearly so); repeated measurements of one token count are averaged. */
static void sort_series(struct prof_series *s)
{
	for (size_t i = 1; i < s->n; i++) {
		double t = s->tokens[i], l = s->linear_s[i], y = s->layer_s[i], e = s->emb_s[i];
		size_t j = i;
		while (j > 0 && cmp_tok(&s->tokens[j - 1], &t, s) > 0) {
			s->tokens[j] = s->tokens[j - 1];
			s->linear_s[j] = s->linear_s[j - 1];
			s->layer_s[j] = s->layer_s[j - 1];
			s->emb_s[j] = s->emb_s[j - 1];
			j--;
		}
		s->tokens[j] = t;
		s->linear_s[j] = l;
		s->layer_s[j] = y;
		s->emb_s[j] = e;
	}
	size_t k = 0;
	for (size_t i = 0; i < s->n;) {
		size_t j = i;
		double l = 0, y = 0, e = 0;
		for (; j < s->n && s->tokens[j] == s->tokens[i]; j++) {
			l += s->linear_s[j];
			y += s->layer_s[j];
			e += s->emb_s[j];
		}
		double c = (double)(j - i);
		s->tokens[k] = s->tokens[i];
		s->linear_s[k] = l / c;
		s->layer_s[k] = y / c;
		s->emb_s[k] = e / c;
		k++;
		i = j;
	}
	s->n = k;
}

int prof_read(struct profile *p, const char *path, char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	snprintf(p->path, sizeof p->path, "%s", path);
	size_t len;
	char *text = cfg_slurp(path, &len, err, errlen);
	if (!text)
		return -1;
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	enum { MAXF = 128 };
	char *f[MAXF];
	int meta[N_META], lin[N_LIN], oth[N_OTHER];
	size_t caps[PROF_MAX_TP] = {0};
	int rc = -1, lineno = 1;
	if (!line) {
		snprintf(err, errlen, "%s:1: empty file (expected a Vidur mlp.csv header)", path);
		goto done;
	}
	int nh = prof_split_csv(line, f, MAXF);
	if (nh > MAXF)
		nh = MAXF;
	for (int i = 0; i < N_META; i++)
		if ((meta[i] = col_of(f, nh, meta_cols[i])) < 0) {
			snprintf(err, errlen, "%s:1: no column \"%s\" (expected a Vidur mlp.csv)", path,
				 meta_cols[i]);
			goto done;
		}
	for (int i = 0; i < N_LIN + N_OTHER; i++) {
		char name[96];
		snprintf(name, sizeof name, "time_stats.%s.median", i < N_LIN ? linear_ops[i]
									    : other_ops[i - N_LIN]);
		int c = col_of(f, nh, name);
		if (c < 0) {
			snprintf(err, errlen, "%s:1: no column \"%s\" (expected a Vidur mlp.csv)", path,
				 name);
			goto done;
		}
		if (i < N_LIN)
			lin[i] = c;
		else
			oth[i - N_LIN] = c;
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
		double v[N_META] = {0};
		for (int i = 0; i < N_META; i++) {
			if (i == C_GATED) {
				v[i] = !strcmp(f[meta[i]], "True") || !strcmp(f[meta[i]], "true");
				continue;
			}
			char *end;
			v[i] = strtod(f[meta[i]], &end);
			if (end == f[meta[i]] || (*end && *end != '\r') || v[i] < 0) {
				snprintf(err, errlen, "%s:%d: %s: expected a number, got \"%s\"", path,
					 lineno, meta_cols[i], f[meta[i]]);
				goto done;
			}
		}
		double lsum = 0, osum = 0;
		for (int i = 0; i < N_LIN + N_OTHER; i++) {
			int c = i < N_LIN ? lin[i] : oth[i - N_LIN];
			char *end;
			double x = strtod(f[c], &end);
			if (end == f[c] || (*end && *end != '\r') || !(x >= 0)) {
				snprintf(err, errlen, "%s:%d: %s median: expected a time in ms, got \"%s\"",
					 path, lineno, i < N_LIN ? linear_ops[i] : other_ops[i - N_LIN],
					 f[c]);
				goto done;
			}
			if (i < N_LIN)
				lsum += x;
			else
				osum += x;
		}
		int tp = (int)v[C_TP];
		if (tp < 1 || v[C_TOKENS] < 1) {
			snprintf(err, errlen, "%s:%d: expected num_tokens and num_tensor_parallel_workers "
					      ">= 1",
				 path, lineno);
			goto done;
		}
		if (lineno == 2) {
			p->n_head = (int)v[C_HEAD];
			p->n_kv_head = (int)v[C_KV];
			p->n_embd = (int)v[C_EMBD];
			p->n_expanded_embd = (int)v[C_EXP];
			p->gated = (int)v[C_GATED];
		}
		struct prof_series *s = series(p, tp);
		if (!s) {
			snprintf(err, errlen, "%s:%d: more than %d tensor-parallel degrees", path, lineno,
				 PROF_MAX_TP);
			goto done;
		}
		if (push(s, &caps[s - p->series], v[C_TOKENS], lsum * 1e-3, (lsum + osum) * 1e-3,
			 v[C_EMB] * 1e-3)) {
			snprintf(err, errlen, "out of memory");
			goto done;
		}
	}
	if (p->n_series == 0) {
		snprintf(err, errlen, "%s: no data rows", path);
		goto done;
	}
	for (int i = 0; i < p->n_series; i++) {
		sort_series(&p->series[i]);
		struct prof_series *ps = &p->series[i];
		if (ps->n < 2) {
			snprintf(err, errlen, "%s: tp %d has one point; interpolation needs two", path,
				 ps->tp);
			goto done;
		}
		const double *ys[3] = {ps->linear_s, ps->layer_s, ps->emb_s};
		ps->acc = gsl_interp_accel_alloc();
		for (int k = 0; k < 3; k++) {
			ps->ip[k] = gsl_interp_alloc(gsl_interp_linear, ps->n);
			if (!ps->ip[k] || !ps->acc || gsl_interp_init(ps->ip[k], ps->tokens, ys[k], ps->n)) {
				snprintf(err, errlen, "out of memory");
				goto done;
			}
		}
	}
	rc = 0;
done:
	free(text);
	if (rc)
		prof_free(p);
	return rc;
}

const struct prof_series *prof_series_for(const struct profile *p, int tp)
{
	for (int i = 0; i < p->n_series; i++)
		if (p->series[i].tp == tp)
			return &p->series[i];
	return NULL;
}

double prof_interp(const struct prof_series *s, enum prof_y which, double tokens)
{
	const double *y = which == PROF_LINEAR ? s->linear_s : which == PROF_LAYER ? s->layer_s
										   : s->emb_s;
	size_t n = s->n;
	if (tokens <= s->tokens[0])
		return y[0];
	if (tokens >= s->tokens[n - 1])
		return y[n - 1] * tokens / s->tokens[n - 1];
	return gsl_interp_eval(s->ip[which], s->tokens, y, tokens, s->acc);
}

double prof_linear_params(const struct profile *p, int tp)
{
	double h = p->n_embd, e = p->n_expanded_embd, hd = (double)p->n_embd / p->n_head;
	double qkv = h * (p->n_head + 2.0 * p->n_kv_head) * hd, out = h * h;
	double mlp = h * e * (p->gated ? 2.0 : 1.0) + e * h;
	return (qkv + out + mlp) / tp;
}
