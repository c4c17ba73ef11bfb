/* profile: measured operator times (Vidur format) and their interpolation. */
#ifndef KVSIM_PROFILE_H
#define KVSIM_PROFILE_H

#include <stddef.h>

#include <gsl/gsl_interp.h>

/* Vidur's compute/<gpu>/<org>/<model>/mlp.csv: the median time of every
 * non-attention operator of ONE transformer layer, by num_tokens and
 * tensor-parallel degree. Kept per TP degree as points sorted by tokens:
 * the four linear operators (QKV, output, gate+up, down projections) and
 * all the layer's operators (those plus norms, rope, activation, add).
 * Times in seconds. */
#define PROF_MAX_TP 8

struct prof_series {
	int tp;
	size_t n;
	double *tokens;
	double *linear_s; /* attn_pre_proj + attn_post_proj + mlp_up_proj + mlp_down_proj */
	double *layer_s;  /* every per-layer operator (emb excluded: once per model) */
	double *emb_s;
	gsl_interp *ip[3];     /* linear_s, layer_s, emb_s */
	gsl_interp_accel *acc;
};

enum prof_y { PROF_LINEAR, PROF_LAYER, PROF_EMB };

struct profile {
	char path[1024];
	/* the layer's shape, from the file */
	int n_head, n_kv_head, n_embd, n_expanded_embd, gated;
	struct prof_series series[PROF_MAX_TP];
	int n_series;
};

/* Reads one mlp.csv; 0, or -1 with err naming FILE:LINE and what was
 * expected. Caller frees with prof_free. */
int prof_read(struct profile *p, const char *path, char *err, size_t errlen);
void prof_free(struct profile *p);
/* The series for tp, or NULL. */
const struct prof_series *prof_series_for(const struct profile *p, int tp);
/* Linear interpolation (GSL) of y over tokens; exact at profiled points;
 * outside the range, the nearest end scaled in proportion to tokens above
 * the top (compute-bound) and held flat below the bottom. */
double prof_interp(const struct prof_series *s, enum prof_y which, double tokens);
/* Splits a CSV line in place into at most max fields (no quoting; a
 * trailing CR or LF ends the last field); returns how many the line has. */
int prof_split_csv(char *line, char **f, int max);
/* Weights of one layer's linear operators per GPU (parameters), bf16. */
double prof_linear_params(const struct profile *p, int tp);

#endif
