/* cost: `kvsim cost` and `kvsim calibrate`. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "model/calibrate.h"
#include "model/catalog.h"
#include "config/config.h"
#include "model/cost.h"
#include "sim/power.h"
#include "model/published.h"

enum {
	O_GPU = CLI_OPT_OWN,
	O_MODEL,
	O_TP,
	O_DTYPE,
	O_PREFILL,
	O_CACHED,
	O_DECODE_BATCH,
	O_CONTEXT,
	O_COST_MODEL,
	O_PROFILES,
	O_JSON
};

static const struct cli_opt cost_opts[] = {
    {O_GPU, "gpu", 0, "G", "the GPU type (kvsim list gpus)", "@gpu", CLI_REQUIRED},
    {O_MODEL, "model", 0, "M", "the model (kvsim list models), or a Hugging Face config.json",
     "@model", CLI_REQUIRED},
    {O_TP, "tp", 0, "N", "GPUs per replica, tensor-parallel (default 1)", NULL, 0},
    {O_DTYPE, "dtype", 0, "bf16|fp8", "weights and KV precision (default bf16)", "bf16 fp8", 0},
    {O_PREFILL, "prefill", 0, "TOKENS", "new prompt tokens in the batch (default 0)", NULL, 0},
    {O_CACHED, "cached", 0, "TOKENS", "prompt tokens before them, already cached", NULL, 0},
    {O_DECODE_BATCH, "decode-batch", 0, "B", "decodes in the batch (needs --context)", NULL, 0},
    {O_CONTEXT, "context", 0, "K", "the tokens each decode attends over", NULL, 0},
    {O_COST_MODEL, "cost-model", 0, "roofline|profile|fixed",
     "the cost model (default: the GPU's calibrated roofline)", "roofline profile fixed", 0},
    {O_PROFILES, "profiles", 0, "DIR",
     "Vidur profiles for --cost-model profile (default ../shared/profiles/vidur)", "@dir", 0},
    CLI_ROW_CATALOG,
    {O_JSON, "json", 0, NULL, "print JSON", NULL, 0},
    {0},
};
CLI_TABLE_FITS(cost_opts);

static const struct cli_opt calibrate_opts[] = {
    {O_PROFILES, "profiles", 0, "DIR", "the Vidur profiles (default ../shared/profiles/vidur)",
     "@dir", 0},
    {O_GPU, "gpu", 0, "PROFILE", "fit this GPU's profile folder only (a100, h100)", "@profile",
     0},
    {O_JSON, "json", 0, NULL, "print the fitted values only, as JSON", NULL, 0},
    {0},
};
CLI_TABLE_FITS(calibrate_opts);

/* What kvsim cost asks about. */
struct cost_args {
	const char *gpu, *model, *tp, *dtype, *kind, *profiles, *catalog;
	double prefill, cached, batch, context;
	int have_ctx, json;
};

/* A whole-number option's value into *out; 0, or -1 after reporting. */
static int parse_count(const struct cli_cmd *cmd, int id, const char *s, double *out)
{
	const struct cli_opt *o = cost_opts;
	while (o->id != id)
		o++;
	double v;
	if (cli_parse_num(s, &v) || v < 0 || v > 1e9 || v != floor(v)) {
		char opt[64];
		snprintf(opt, sizeof opt, "--%s", o->name);
		cli_bad_value(cmd, opt, "a whole number >= 0", s);
		return -1;
	}
	*out = v;
	return 0;
}

/* The options into c; CLI_END to go on, else cli_next's end. */
static int parse_cost(const struct cli_ctx *cx, int argc, char **argv, struct cost_args *c)
{
	const char *v;
	int id, bad = 0;
	struct cli_args a;
	cli_begin(&a, cx, argc, argv);
	while (!bad && (id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case O_GPU: c->gpu = v; break;
		case O_MODEL: c->model = v; break;
		case O_TP: {
			long long tp;
			if (cli_parse_int(v, 1, INT_MAX, &tp)) {
				cli_bad_value(cx->cmd, "--tp", "a whole number >= 1", v);
				bad = 1;
			}
			c->tp = v;
			break;
		}
		case O_DTYPE: c->dtype = v; break;
		case O_COST_MODEL: c->kind = v; break;
		case O_PROFILES: c->profiles = v; break;
		case OPT_CATALOG: c->catalog = v; break;
		case O_PREFILL: bad = parse_count(cx->cmd, id, v, &c->prefill); break;
		case O_CACHED: bad = parse_count(cx->cmd, id, v, &c->cached); break;
		case O_DECODE_BATCH: bad = parse_count(cx->cmd, id, v, &c->batch); break;
		case O_CONTEXT:
			bad = parse_count(cx->cmd, id, v, &c->context);
			c->have_ctx = 1;
			break;
		case O_JSON: c->json = 1; break;
		}
	}
	if (bad)
		return CLI_BAD;
	if (id != CLI_END)
		return id;
	if (a.n_pos)
		cli_misuse(cx->cmd, "unexpected argument %s", a.pos[0]);
	else if (!c->gpu || !c->model)
		cli_misuse(cx->cmd, "give --gpu and --model");
	else if (c->batch > 0 && !c->have_ctx)
		fprintf(stderr, "kvsim cost: --decode-batch needs --context\n");
	else if (c->prefill == 0 && c->batch == 0)
		fprintf(stderr, "kvsim cost: nothing to run: give --prefill and/or --decode-batch\n");
	else
		return CLI_END;
	return CLI_BAD;
}

/* "PATH=VALUE" for cfg_apply_set, VALUE as a JSON string when quote (any
 * length, quotes and backslashes escaped), else as given; NULL when out
 * of memory. Caller frees. */
static char *set_arg(const char *path, const char *value, int quote)
{
	cJSON *str = quote ? cJSON_CreateString(value) : NULL;
	char *json = str ? cJSON_PrintUnformatted(str) : NULL;
	cJSON_Delete(str);
	const char *v = quote ? json : value;
	char *set = v ? malloc(strlen(path) + strlen(v) + 2) : NULL;
	if (set)
		sprintf(set, "%s=%s", path, v);
	free(json);
	return set;
}

/* The embedded default scenario with the replica c names; an exit code
 * (reported). Caller frees s with cfg_scenario_free when CLI_OK. */
static int load_replica(const struct cost_args *c, struct scenario *s)
{
	char err[2048];
	cJSON *root = NULL;
	if (cfg_read_json(NULL, &root, err, sizeof err)) {
		fprintf(stderr, "kvsim cost: %s\n", err);
		return CLI_INTERNAL;
	}
	const char *pairs[][2] = {{"cluster.gpu", c->gpu},	  {"cluster.model", c->model},
				  {"cluster.tp", c->tp},	  {"cluster.dtype", c->dtype},
				  {"cluster.cost_model.kind", c->kind},
				  {"cluster.cost_model.profiles", c->profiles}};
	for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
		if (!pairs[k][1])
			continue;
		char *set = set_arg(pairs[k][0], pairs[k][1], strcmp(pairs[k][0], "cluster.tp") != 0);
		if (!set) {
			fprintf(stderr, "kvsim cost: out of memory\n");
			cJSON_Delete(root);
			return CLI_INTERNAL;
		}
		int bad = cfg_apply_set(root, set, err, sizeof err);
		free(set);
		if (bad) {
			fprintf(stderr, "kvsim cost: %s\n", err);
			cJSON_Delete(root);
			return CLI_USAGE;
		}
	}
	/* The replica must fit, but this command asks about one iteration:
	 * take all of HBM so that large models still get a KV cache. */
	cfg_apply_set(root, "cluster.engine.gpu_memory_utilization=1.0", err, sizeof err);
	cfg_apply_set(root, "cluster.engine.activation_reserve_gib=0", err, sizeof err);
	int rc = cfg_scenario_load(s, root, c->catalog, err, sizeof err);
	cJSON_Delete(root);
	if (rc) {
		fprintf(stderr, "kvsim cost: %s\n", err);
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* u and power_w: the iteration's utilisation and one GPU's power while it
 * runs (the energy model, docs/model.md). */
static void print_cost(const struct cost_args *c, const struct scenario *s,
		       const struct cost_parts *p, double u, double power_w)
{
	const char *kinds[] = {"roofline", "fixed", "profile"};
	const struct cost_cfg *cost = &s->cluster.cost;
	const char *bound = p->comm_s > p->combined_s			? "communication"
			    : p->overhead_s + p->kernels_s > p->combined_s ? "overhead"
			    : p->attention_s > p->combined_s		? "attention"
			    : cost->kind == COST_PROFILE			? "measured layers"
			    : p->compute_s >= p->memory_s			? "compute"
									: "memory";
	/* The replica's KV cache at the scenario defaults (this command itself
	 * takes all of memory, see load_replica). */
	const struct cat_model *m = s->cluster.model;
	double kv_tokens = (double)cfg_kv_blocks(&s->cluster, CFG_GPU_MEMORY_UTILIZATION,
						 CFG_ACTIVATION_RESERVE_GIB, NULL, NULL) *
			   s->cluster.engine.kv_block_tokens;
	if (c->json) {
		cJSON *str = cJSON_CreateString(m->name);
		char *name = str ? cJSON_PrintUnformatted(str) : NULL;
		cJSON_Delete(str);
		printf("{\"gpu\":\"%s\",\"model\":%s,\"tp\":%d,\"dtype\":\"%s\",\"cost_model\":\"%s\","
		       "\"prefill_tokens\":%.0f,\"cached_tokens\":%.0f,\"decode_batch\":%.0f,"
		       "\"context\":%.0f,\"compute_s\":%.9g,\"memory_s\":%.9g,\"combined_s\":%.9g,"
		       "\"kernels_s\":%.9g,\"attention_s\":%.9g,\"communication_s\":%.9g,"
		       "\"overhead_s\":%.9g,\"iteration_s\":%.9g,\"utilisation\":%.6g,"
		       "\"power_w\":%.6g,\"bound\":\"%s\",\"kv_bytes_per_token\":%.0f,"
		       "\"params\":%.0f,\"active_params\":%.0f,\"kv_capacity_tokens\":%.0f}\n",
		       s->cluster.gpu->name, name ? name : "\"\"", s->cluster.tp, c->dtype,
		       kinds[cost->kind], c->prefill, c->cached, c->batch, c->context, p->compute_s,
		       p->memory_s, p->combined_s, p->kernels_s, p->attention_s, p->comm_s,
		       p->overhead_s, p->total_s, u, power_w, bound, m->kv_bytes_per_token,
		       m->params, m->active_params, kv_tokens);
		free(name);
		return;
	}
	printf("%s x %d serving %s (%s), %s cost model\n", s->cluster.gpu->name, s->cluster.tp,
	       m->name, c->dtype, kinds[cost->kind]);
	printf("model: %.4g B parameters, %.4g B active; KV %.0f bytes per token; %.0f tokens of KV "
	       "cache per replica at the defaults\n",
	       m->params / 1e9, m->active_params / 1e9, m->kv_bytes_per_token, kv_tokens);
	printf("batch: prefill %.0f tokens after %.0f cached; %.0f decodes over %.0f tokens\n",
	       c->prefill, c->cached, c->batch, c->context);
	if (cost->kind == COST_ROOFLINE)
		printf("roofline: mfu %.4g, mbu %.4g, knee %.4g, %.4g us per kernel\n", cost->mfu,
		       cost->mbu, cost->knee, cost->op_overhead_us);
	printf("  compute        %10.3f ms\n", p->compute_s * 1e3);
	printf("  memory         %10.3f ms\n", p->memory_s * 1e3);
	printf("  %-14s %10.3f ms\n", cost->kind == COST_PROFILE ? "layers" : "combined",
	       p->combined_s * 1e3);
	printf("  kernels        %10.3f ms\n", p->kernels_s * 1e3);
	printf("  attention      %10.3f ms\n", p->attention_s * 1e3);
	printf("  communication  %10.3f ms\n", p->comm_s * 1e3);
	printf("  overhead       %10.3f ms\n", p->overhead_s * 1e3);
	printf("  iteration      %10.3f ms  (%s-bound)\n", p->total_s * 1e3, bound);
	printf("power: %.1f W per GPU while it runs (utilisation %.3f; idle %.0f W, TDP %.0f W)\n",
	       power_w, u, catalog_gpu_idle_w(s->cluster.gpu), s->cluster.gpu->tdp_w);
}

static int cmd_cost(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cost_args c = {.tp = "1", .dtype = "bf16"};
	int end = parse_cost(cx, argc, argv, &c);
	if (end != CLI_END)
		return cli_end_code(end);
	struct scenario s;
	int rc = load_replica(&c, &s);
	if (rc)
		return rc;
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	struct cost_batch b;
	cost_batch_clear(&b);
	if (c.prefill > 0)
		cost_add_prefill(&b, c.prefill, c.cached);
	for (double k = 0; k < c.batch; k++)
		cost_add_decode(&b, c.context);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	double work = cost_work_ns(&cm, &b);
	int64_t t = cost_iteration_ns(&cm, &b);
	print_cost(&c, &s, &p, work < (double)t ? work / (double)t : 1.0,
		   power_busy_w(s.cluster.gpu, work, t));
	cfg_scenario_free(&s);
	return CLI_OK;
}

/* The fit's error by model and tensor-parallel degree. */
static void print_fit_errors(const struct cat_gpu *gp, const struct roof_params *rp,
			     const struct cal_point *pts, size_t n, char **names, int n_names)
{
	printf("  %-40s %4s %8s %8s %12s\n", "model", "tp", "MAPE", "worst", "64-256 tok");
	for (int m = 0; m < n_names; m++) {
		for (int tp = 1; tp <= 8; tp *= 2) {
			struct cal_errors e;
			cal_errors_of(rp, gp->bf16_flops, gp->hbm_bytes_per_s, pts, n, m, tp, &e);
			if (e.n)
				printf("  %-40s %4d %7.1f%% %7.1f%% %11.1f%%\n", names[m], tp,
				       100 * e.mape, 100 * e.worst, 100 * e.band[1]);
		}
	}
}

/* Fits the roofline to one profile folder's linear operators; an exit code
 * (reported). */
static int fit_roofline(const char *dir, const struct cat_gpu *gp, int json, int *first)
{
	struct cal_point *pts;
	size_t n;
	char **names, err[2048];
	int n_names, rc = CLI_OK;
	if (cal_load_gpu(dir, gp->profile, &pts, &n, &names, &n_names, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return CLI_USAGE;
	}
	struct roof_params rp;
	if (cal_fit(pts, n, gp->bf16_flops, gp->hbm_bytes_per_s, &rp, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s: %s\n", gp->profile, err);
		rc = CLI_INTERNAL;
	} else if (json) {
		printf("%s\"%s\":{\"mfu\":%.4f,\"mbu\":%.4f,\"knee\":%.4f,\"op_overhead_us\":%.3f}",
		       *first ? "" : ",", gp->profile, rp.mfu, rp.mbu, rp.knee,
		       rp.op_overhead_s * 1e6);
		*first = 0;
	} else {
		printf("%s (%s: %.4g FLOP/s bf16, %.4g B/s): %zu points from %d models\n",
		       gp->profile, gp->name, gp->bf16_flops, gp->hbm_bytes_per_s, n, n_names);
		printf("  \"roofline\": {\"mfu\": %.4f, \"mbu\": %.4f, \"knee\": %.4f, "
		       "\"op_overhead_us\": %.3f}\n",
		       rp.mfu, rp.mbu, rp.knee, rp.op_overhead_s * 1e6);
		print_fit_errors(gp, &rp, pts, n, names, n_names);
	}
	for (int m = 0; m < n_names; m++)
		free(names[m]);
	free(names);
	free(pts);
	return rc;
}

/* Intra-server all-reduce: a line per group size, unless fit_rc says the
 * roofline fit failed; an exit code (reported). */
static int fit_allreduce(const char *dir, const struct cat_gpu *gp, int json, int fit_rc)
{
	char csv[4096], err[2048];
	snprintf(csv, sizeof csv, "%s/network/%s_dgx/all_reduce.csv", dir, gp->profile);
	if (json)
		printf(",\"%s_allreduce\":{", gp->profile);
	else
		printf("  \"allreduce\" (from %s, tp: [latency_us, us_per_MiB]):\n", csv);
	int rc = fit_rc;
	for (int tp = 2, k = 0; tp <= 8 && !rc; tp *= 2, k++) {
		double a, b, mape;
		int rows;
		if (cal_collective(csv, tp, 1048576, &a, &b, &mape, &rows, err, sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s\n", err);
			rc = CLI_USAGE;
			break;
		}
		if (json)
			printf("%s\"%d\":[%.3f,%.3f]", k ? "," : "", tp, a * 1e6, b * 1e6 * 1048576);
		else
			printf("    \"%d\": [%.3f, %.3f]   MAPE %.1f%% over %d messages >= 1 MiB\n", tp,
			       a * 1e6, b * 1e6 * 1048576, 100 * mape, rows);
	}
	if (json)
		printf("}");
	return rc;
}

/* Attention per backend, on the attention tables of the GPU's profile
 * folder (none: nothing printed); an exit code (reported). */
static int fit_attention(const char *dir, const struct cat_gpu *gp, int json)
{
	struct cal_attn_set set;
	char err[2048];
	if (cal_attn_load_gpu(dir, gp->profile, &set, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return CLI_USAGE;
	}
	int rc = CLI_OK, k = 0;
	if (json && set.n)
		printf(",\"%s_attention\":{", gp->profile);
	for (int b = 0; b < ATTN_BACKENDS && !rc; b++) {
		int have = 0;
		for (int i = 0; i < set.n; i++)
			have |= set.files[i].backend == (enum attn_backend)b;
		if (!have)
			continue;
		struct attn_fit f;
		if (cal_attn_fit(&set, (enum attn_backend)b, gp->bf16_flops, gp->hbm_bytes_per_s, &f, err,
				 sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s attention (%s): %s\n", gp->profile,
				attn_backend_names[b], err);
			rc = CLI_INTERNAL;
			break;
		}
		if (json) {
			printf("%s\"%s\":{\"prefill\":{\"fixed_us\":%.3f,\"efficiency\":%.4f,"
			       "\"causal\":%.4f,\"rows_half\":%.1f,\"context_half\":%.1f},\"decode\":{"
			       "\"fixed_us\":%.3f,\"per_head_us\":%.5f,\"bandwidth\":%.4f},\"profile\":\"%s\"}",
			       k++ ? "," : "", attn_backend_names[b], f.pre_fixed_s * 1e6, f.efficiency,
			       f.causal, f.rows_half, f.context_half, f.dec_fixed_s * 1e6,
			       f.per_head_s * 1e6, f.bandwidth, f.profile);
			continue;
		}
		printf("  \"attention\" %s:\n    \"prefill\": {\"fixed_us\": %.3f, \"efficiency\": %.4f, "
		       "\"causal\": %.4f, \"rows_half\": %.1f, \"context_half\": %.1f}\n    \"decode\": "
		       "{\"fixed_us\": %.3f, \"per_head_us\": %.5f, \"bandwidth\": %.4f}\n",
		       attn_backend_names[b], f.pre_fixed_s * 1e6, f.efficiency, f.causal, f.rows_half,
		       f.context_half, f.dec_fixed_s * 1e6, f.per_head_s * 1e6, f.bandwidth);
		printf("    %-32s %4s %8s %8s %6s\n", "table", "tp", "kind", "MAPE", "worst");
		for (int i = 0; i < set.n; i++) {
			if (set.files[i].backend != (enum attn_backend)b)
				continue;
			for (int tp = 1; tp <= 8; tp++)
				for (int pre = 1; pre >= 0; pre--) {
					struct cal_attn_err e;
					cal_attn_errors(&f, &set.files[i], pre, tp, gp->bf16_flops,
							gp->hbm_bytes_per_s, &e);
					if (e.n)
						printf("    %-32s %4d %8s %7.1f%% %7.1f%%\n", set.names[i], tp,
						       pre ? "prefill" : "decode", 100 * e.mape, 100 * e.worst);
				}
		}
	}
	if (json && set.n)
		printf("}");
	cal_attn_set_free(&set);
	return rc;
}

/* The engine overhead line (Vidur's CPU medians, copied in
 * model/published.c) and the FP8 efficiencies of each GPU with published
 * FP8 rows; an exit code (reported). */
static int fit_published(const struct catalog *cat, int json)
{
	double base, per;
	pub_fit_overhead(&base, &per);
	if (json)
		printf(",\"iteration_overhead\":{\"base_ms\":%.4f,\"per_seq_ms\":%.5f}", base, per);
	else
		printf("engine overhead (Vidur's CPU medians, vLLM on A100; model/published.c):\n"
		       "  \"iteration_overhead\": {\"base_ms\": %.4f, \"per_seq_ms\": %.5f}\n",
		       base, per);
	for (size_t g = 0; g < cat->n_gpus; g++) {
		const char *name = cat->gpus[g].name;
		int rows = 0;
		for (size_t i = 0; i < pub_ttft_n; i++)
			rows += pub_ttft_rows[i].fit && !strcmp(pub_ttft_rows[i].gpu, name);
		if (!rows)
			continue;
		double mfu, mbu, rms;
		char err[2048];
		if (pub_fit_fp8(name, &mfu, &mbu, &rms, err, sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s\n", err);
			return CLI_INTERNAL;
		}
		if (json)
			printf(",\"%s_fp8\":{\"mfu\":%.4f,\"mbu\":%.4f}", name, mfu, mbu);
		else
			printf("%s FP8 (TensorRT-LLM's published first-token latencies, %d rows fitted):\n"
			       "  \"fp8\": {\"mfu\": %.4f, \"mbu\": %.4f}   RMS error %.1f%%\n",
			       name, rows, mfu, mbu, 100 * rms);
	}
	return CLI_OK;
}

static int cmd_calibrate(const struct cli_ctx *cx, int argc, char **argv)
{
	const char *dir = "../shared/profiles/vidur", *only = NULL, *v;
	int json = 0, id;
	struct cli_args args;
	cli_begin(&args, cx, argc, argv);
	while ((id = cli_next(&args, &v)) > 0) {
		switch (id) {
		case O_PROFILES: dir = v; break;
		case O_GPU: only = v; break;
		case O_JSON: json = 1; break;
		}
	}
	if (id != CLI_END)
		return cli_end_code(id);
	if (args.n_pos)
		return cli_misuse(cx->cmd, "unexpected argument %s", args.pos[0]);
	struct catalog cat;
	char err[2048];
	if (catalog_load_builtin(&cat, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return CLI_INTERNAL;
	}
	int rc = CLI_OK, first = 1, fitted = 0;
	if (json)
		printf("{");
	for (size_t g = 0; g < cat.n_gpus && !rc; g++) {
		const struct cat_gpu *gp = &cat.gpus[g];
		if (!gp->profile[0] || (only && strcmp(only, gp->profile)))
			continue;
		/* One fit per profile folder: the first GPU naming it. */
		int seen = 0;
		for (size_t h = 0; h < g; h++)
			seen |= !strcmp(cat.gpus[h].profile, gp->profile);
		if (seen)
			continue;
		rc = fit_roofline(dir, gp, json, &first);
		if (rc == CLI_USAGE)
			break;
		rc = fit_allreduce(dir, gp, json, rc);
		if (!rc)
			rc = fit_attention(dir, gp, json);
		fitted++;
	}
	if (!rc && fitted && !only)
		rc = fit_published(&cat, json);
	if (json)
		printf("}\n");
	if (!rc && fitted == 0) {
		fprintf(stderr, "kvsim calibrate: no GPU in the catalog names a profile%s%s\n",
			only ? " called " : "", only ? only : "");
		rc = CLI_USAGE;
	}
	catalog_free(&cat);
	return rc;
}

const struct cli_cmd cli_cost_cmd = {
    .name = "cost",
    .args = "",
    .summary = "one iteration's predicted time, term by term",
    .run = cmd_cost,
    .opts = cost_opts,
    .about =
	"Prints the predicted time of one engine iteration of a replica (tp GPUs of type\n"
	"G serving model M): a prefill of TOKENS new tokens after CACHED cached ones,\n"
	"plus B decodes each attending over K tokens. The time is split into compute\n"
	"of the linear layers (FLOPs / (peak x mfu)), memory (weights / (HBM bandwidth x\n"
	"mbu)), their smooth maximum (or, with --cost-model profile, the measured\n"
	"layers), per-kernel cost, attention (calibrated, or measured with --cost-model\n"
	"profile), tensor-parallel communication and the engine's CPU overhead, and\n"
	"names the bound that dominates; then one GPU's power while the iteration runs\n"
	"(the energy model: idle power + (TDP - idle) x utilisation).\n",
};

const struct cli_cmd cli_calibrate_cmd = {
    .name = "calibrate",
    .args = "",
    .summary = "fit the roofline to measured operator profiles",
    .run = cmd_calibrate,
    .opts = calibrate_opts,
    .about =
	"Fits the roofline's mfu, mbu, knee and per-kernel overhead, per GPU, to the\n"
	"measured linear-operator times in DIR/compute/<gpu>/<org>/<model>/mlp.csv (Vidur\n"
	"format), by least squares of the relative error (GSL); the intra-server\n"
	"all-reduce lines to DIR/network/<gpu>_dgx/all_reduce.csv; the attention model\n"
	"of each backend to the attention tables beside mlp.csv (attention.csv or\n"
	"attention_sample.csv); and, without --gpu, the engine's CPU time per iteration\n"
	"and the FP8 efficiencies to the published figures in model/published.c. Prints\n"
	"the fitted values (the catalog's entries come from here) and the errors.\n",
};
