/* attention: one layer's attention-kernel time: a calibrated model and
 * Vidur's measured tables (attention.csv), interpolated. */
#ifndef KVSIM_ATTENTION_H
#define KVSIM_ATTENTION_H

#include <stddef.h>

/* Attention kernel libraries with measurements: Vidur's attention_backend
 * column (AttentionBackend.FLASHINFER, AttentionBackend.FLASH_ATTENTION). */
enum attn_backend { ATTN_FLASHINFER, ATTN_FLASH_ATTENTION, ATTN_BACKENDS };
/* "flashinfer", "flash_attention": the scenario's and catalog's names;
 * NULL-terminated. */
extern const char *const attn_backend_names[ATTN_BACKENDS + 1];

/* The calibrated attention time of one backend on one GPU, per layer and
 * GPU of a tensor-parallel group (seconds):
 *   prefill  pre_fixed + F / (peak x eff), where
 *            F   = 4 x q_heads x head_dim x (sum n_i c_i + causal x sum n_i^2)
 *                  (chunk i: n_i new tokens after c_i cached; causal 0.5 is
 *                  the causal mask's triangle, 1 the whole square),
 *            eff = efficiency x P / (P + rows_half) x L / (L + context_half),
 *            P   = query rows x q_heads (sum n_i x q_heads: the parallel work),
 *            L   = context per chunk (mean of c_i + n_i);
 *   decode   dec_fixed + per_head x d x kv_heads + KV bytes / (HBM bandwidth
 *            x bandwidth) for d decodes reading their KV.
 * A GPU without a fit uses attn_fit_plain's. */
struct attn_fit {
	double pre_fixed_s, efficiency, causal, rows_half, context_half;
	double dec_fixed_s, per_head_s, bandwidth;
	char profile[96]; /* the measurements it was fitted on ("<org>/<model>"), or "" */
};

/* What the time depends on, per GPU of the tensor-parallel group. */
struct attn_shape {
	double q_heads, kv_heads, head_dim;
	double kv_bytes;             /* KV bytes per token per layer */
	double peak_flops, hbm_bytes_per_s; /* the GPU's dense 16-bit peak and HBM bandwidth */
};

/* The plain roofline as a fit: causal FLOPs at mfu of peak, KV at mbu of
 * the bandwidth, no fixed costs (GPUs without measurements of their own). */
void attn_fit_plain(struct attn_fit *f, double mfu, double mbu);
/* Prefill time of chunks with rows = sum n_i, nc = sum n_i c_i, nsq =
 * sum n_i^2 and mean context ctx (c_i + n_i); 0 when rows is 0. */
double attn_fit_prefill_s(const struct attn_fit *f, const struct attn_shape *s, double rows,
			  double nc, double nsq, double ctx);
/* Decode time of d decodes over sum_k KV tokens in all; 0 when d is 0.
 * *per_token (may be NULL) gets its derivative in sum_k. */
double attn_fit_decode_s(const struct attn_fit *f, const struct attn_shape *s, double d,
			 double sum_k, double *per_token);

/* One measured row: a prefill chunk (chunk new tokens after kv cached) or
 * a decode batch (batch requests over kv cached tokens each), at tp. */
struct attn_row {
	int prefill, tp;
	double batch, chunk, kv, t_s;
};

/* A Vidur attention.csv (or a sample of its rows, same columns). */
struct attn_rows {
	struct attn_row *r;
	size_t n;
	int q_heads, kv_heads, n_embd; /* the model's, at TP 1 */
	enum attn_backend backend;
	char path[1024];
};

/* Reads an attention CSV; 0, or -1 with err naming FILE:LINE and what was
 * expected. Caller frees with attn_rows_free. */
int attn_rows_read(struct attn_rows *a, const char *path, char *err, size_t errlen);
void attn_rows_free(struct attn_rows *a);
/* The shape of a's model at tp, on a GPU of peak_flops and bandwidth
 * (16-bit KV: Vidur's profiles are FP16). */
void attn_rows_shape(const struct attn_rows *a, int tp, double peak_flops, double hbm_bytes_per_s,
		     struct attn_shape *s);

/* Measured times arranged for interpolation: decode rows as lines of one
 * KV length (points by batch), prefill rows as lines of one chunk size
 * (points by cached tokens); repeated points averaged. */
struct attn_line {
	double key;
	size_t n;
	double *x, *t;
};

struct attn_table {
	struct attn_line *dec, *pre;
	size_t n_dec, n_pre;
	double *buf;
	int tp; /* the TP degree the table holds (the rows' smallest) */
};

/* Builds t from a's rows at TP degree tp (0: the smallest in a), leaving
 * out row skip ((size_t)-1: none). 0, or -1: out of memory, no rows at
 * tp, or (tp 0) no rows of one kind. Caller frees with attn_table_free. */
int attn_table_build(struct attn_table *t, const struct attn_rows *a, int tp, size_t skip);
void attn_table_free(struct attn_table *t);
/* The table of DIR/compute/GPU/FOLDER/attention.csv (Vidur's full table),
 * else of attention_sample.csv beside it: 1 with t and rows filled (caller
 * frees both), 0 when neither file exists, -1 on a bad file (err). */
int attn_table_load(struct attn_table *t, struct attn_rows *rows, const char *dir, const char *gpu,
		    const char *folder, char *err, size_t errlen);
/* Interpolated prefill time of a chunk after kv cached tokens: between
 * the nearest chunk lines below and above (those measured at kv where
 * there are such), linear in the work chunk x (kv + chunk / 2); each line
 * linear in kv between its points and extended along its chord outside
 * them. Exact at measured points. Below the smallest chunk, that line's
 * time; above the largest, the two largest extended in the work. */
double attn_table_prefill_s(const struct attn_table *t, double chunk, double kv);
/* Interpolated decode time of batch requests over kv tokens each, the
 * same way with lines of one KV length (linear in kv between them, each
 * line linear in batch and extended along its chord). *per_kv (may be
 * NULL) gets the derivative in kv. */
double attn_table_decode_s(const struct attn_table *t, double batch, double kv, double *per_kv);
/* The same where lines measured at the query's kv (prefill) or batch
 * (decode) lie on both sides of it (or one passes through it), else NaN:
 * interpolation only, for tables of sparse rows. */
double attn_table_prefill_within(const struct attn_table *t, double chunk, double kv);
double attn_table_decode_within(const struct attn_table *t, double batch, double kv,
				double *per_kv);

#endif
