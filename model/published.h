/* published: TensorRT-LLM's published first-token latencies, kvsim's
 * prediction of each, and the FP8 efficiency fitted to some of them. */
#ifndef KVSIM_PUBLISHED_H
#define KVSIM_PUBLISHED_H

#include <stddef.h>

/* One batch-1 first-token latency (TensorRT-LLM v0.5, docs/source/
 * performance.md, "Low Latency"): GPU, model, weights' precision, TP
 * degree, prompt tokens, milliseconds; fit 1 where the FP8 efficiencies
 * are fitted on the row (the others are held out). */
struct pub_ttft {
	const char *gpu, *model, *dtype;
	int tp, tokens;
	double ms;
	int fit;
	const char *model_json; /* the model's catalog entry where the catalog has none */
};
extern const struct pub_ttft pub_ttft_rows[];
extern const size_t pub_ttft_n;
/* GPT-J 6B's catalog entry (the catalog has none), for model_json. */
extern const char pub_gptj_json[];

/* kvsim's batch-1 prefill time (ms) for row r: one iteration of its
 * prompt on an empty replica (the default scenario's engine, all of HBM
 * for KV), with the catalog's values. 0, or -1 with err. */
int pub_ttft_ms(const struct pub_ttft *r, double *ms, char *err, size_t errlen);
/* The FP8 efficiencies of gpu's linear layers, of its peak FP8 FLOP/s
 * (*mfu) and of its HBM bandwidth reading 1-byte weights (*mbu), that
 * minimize the squared relative error of kvsim's TTFT over the FP8 rows
 * of gpu marked fit: the best of a 0.05 grid in (0, 1] x (0, 1], refined
 * by GSL's multifit_nlinear (deterministic). *rms gets the fit's root
 * mean square relative error on those rows. 0, or -1 with err. */
int pub_fit_fp8(const char *gpu, double *mfu, double *mbu, double *rms, char *err, size_t errlen);

/* The engine's CPU time per step that Vidur measured for vLLM on A100
 * (microsoft/vidur data/profiling/a100/cpu_overheads.csv at 0633efa, the
 * medians, ms): scheduling, input preparation and sampling for a batch of
 * decodes; fit 1 where the overhead line is fitted on the row. */
struct pub_cpu {
	const char *model;
	int tp, batch;
	double schedule_ms, prepare_ms, sample_ms;
	int fit;
};
extern const struct pub_cpu pub_cpu_rows[];
extern const size_t pub_cpu_n;
/* The line base + per_seq x batch through the fit rows' totals, least
 * squares of relative error (GSL weighted fit). */
void pub_fit_overhead(double *base_ms, double *per_seq_ms);

#endif
