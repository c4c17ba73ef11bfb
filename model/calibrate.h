/* calibrate: fitting the roofline's efficiencies to measured operator times. */
#ifndef KVSIM_CALIBRATE_H
#define KVSIM_CALIBRATE_H

#include <stddef.h>

#include "model/attention.h"

struct profile;

/* The calibrated roofline of one layer's linear operators:
 *   t = n_ops * op_overhead + ((F / (peak * mfu))^knee + (B / (bw * mbu))^knee)^(1 / knee)
 * a smooth maximum of the compute and memory times (knee -> infinity is
 * the plain roofline max) plus a fixed cost per kernel. */
struct roof_params {
	double mfu, mbu, knee, op_overhead_s;
};

/* One measured point: a layer's linear operators at some token count. */
struct cal_point {
	double flops, bytes, t; /* per GPU; t in seconds */
	int tp;
	double tokens;
	int model; /* index of the profile it came from */
};

#define CAL_LINEAR_OPS 4

/* The smooth roofline time of flops and bytes with n_ops kernels. */
double cal_time(const struct roof_params *rp, double peak, double bw, double flops, double bytes,
		int n_ops);
/* The fit's relative errors over one model's points at one TP degree:
 * mean (MAPE), worst, and the mean in three token bands (below 64, 64-256
 * (the knee), above 256). n = 0 when there are no such points. */
struct cal_errors {
	double mape, worst, band[3];
	int n, band_n[3];
};
void cal_errors_of(const struct roof_params *rp, double peak, double bw,
		   const struct cal_point *pts, size_t n, int model, int tp, struct cal_errors *out);
/* Appends every point of p (bf16 weights and activations) to *pts. */
int cal_points(const struct profile *p, int model, struct cal_point **pts, size_t *n, size_t *cap);
/* Least-squares fit of relative error (GSL multifit_nlinear, trust region
 * with Levenberg-Marquardt steps) from a fixed start: deterministic.
 * mfu and mbu are kept in (0, 1]. 0, or -1 with err. */
int cal_fit(const struct cal_point *pts, size_t n, double peak, double bw, struct roof_params *out,
	    char *err, size_t errlen);

/* Every mlp.csv under DIR/compute/<gpu>/<org>/<model>/, sorted by path,
 * read into points (model = index in *names, which gets "<org>/<model>";
 * caller frees names[i], names, and *pts). 0, or -1 with err. */
int cal_load_gpu(const char *dir, const char *gpu, struct cal_point **pts, size_t *n,
		 char ***names, int *n_names, char *err, size_t errlen);
/* A least-squares line t = alpha + beta * bytes (weights 1/t^2: relative
 * error) through the intra-node rows (devices_per_node == num_workers ==
 * workers) of a Vidur all_reduce.csv or send_recv.csv. *mape gets the
 * line's mean absolute percentage error over rows of at least min_bytes.
 * 0, or -1 with err (FILE:LINE for bad rows). */
int cal_collective(const char *csv, int workers, double min_bytes, double *alpha_s,
		   double *beta_s_per_byte, double *mape, int *n_rows, char *err, size_t errlen);

/* Every attention table under DIR/compute/<gpu>/<org>/<model>/
 * (attention.csv, else attention_sample.csv), sorted by path. */
struct cal_attn_set {
	struct attn_rows *files;
	char **names; /* "<org>/<model>" */
	int n;
};
/* 0 (set->n may be 0: no attention data for that GPU), or -1 with err.
 * Caller frees with cal_attn_set_free. */
int cal_attn_load_gpu(const char *dir, const char *gpu, struct cal_attn_set *set, char *err,
		      size_t errlen);
void cal_attn_set_free(struct cal_attn_set *set);
/* The fit's prediction of row r of a (its own TP degree) on a GPU of peak
 * FLOP/s and bw bytes/s. */
double cal_attn_predict(const struct attn_fit *f, const struct attn_rows *a, const struct attn_row *r,
			double peak, double bw);
/* Fits backend b's attention model to every row measured with it in set
 * (all TP degrees), least squares of relative error: decode by weighted
 * linear least squares (GSL multifit_wlinear), prefill by GSL
 * multifit_nlinear from fixed starts (the best kept): deterministic.
 * out->profile names the file with the most rows. 0, or -1 with err (no
 * rows of b, or no convergence). */
int cal_attn_fit(const struct cal_attn_set *set, enum attn_backend b, double peak, double bw,
		 struct attn_fit *out, char *err, size_t errlen);
/* The relative error of f over a's rows of one kind (prefill 1, decode
 * 0) at tp (0: every TP degree): mean, worst and count. */
struct cal_attn_err {
	double mape, worst;
	int n;
};
void cal_attn_errors(const struct attn_fit *f, const struct attn_rows *a, int prefill, int tp,
		     double peak, double bw, struct cal_attn_err *out);

#endif
