/* cmd_fidelity: `kvsim cost` and `kvsim calibrate`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/calibrate.h"
#include "sim/catalog.h"
#include "sim/commands.h"
#include "sim/config.h"
#include "sim/cost.h"

static const char usage_cost[] =
    "usage: kvsim cost --gpu G --model M [--tp N] [--dtype bf16|fp8]\n"
    "                  [--prefill TOKENS [--cached TOKENS]] [--decode-batch B --context K]\n"
    "                  [--cost-model roofline|profile|fixed] [--profiles DIR]\n"
    "                  [--catalog FILE] [--json]\n"
    "\n"
    "Prints the predicted time of one engine iteration of a replica (tp GPUs of type G\n"
    "serving model M): a prefill of TOKENS new tokens after CACHED cached ones, plus B\n"
    "decodes each attending over K tokens. The time is split into compute (FLOPs /\n"
    "(peak x mfu)), memory (bytes / (HBM bandwidth x mbu)), their smooth maximum (or,\n"
    "with --cost-model profile, the measured layers), per-kernel cost, tensor-parallel\n"
    "communication and the engine's fixed overhead, and names the bound that dominates.\n"
    "Defaults: --tp 1, --dtype bf16, --prefill 0, the GPU's calibrated roofline,\n"
    "--profiles ../shared/profiles/vidur.\n";

static const char usage_calibrate[] =
    "usage: kvsim calibrate [--profiles DIR] [--gpu PROFILE] [--json]\n"
    "\n"
    "Fits the roofline's mfu, mbu, knee and per-kernel overhead, per GPU, to the\n"
    "measured linear-operator times in DIR/compute/<gpu>/<org>/<model>/mlp.csv (Vidur\n"
    "format; default ../shared/profiles/vidur), by least squares of the relative error\n"
    "(GSL). Prints the fitted values (the catalog's \"roofline\" entries come from here)\n"
    "and the error by model and tensor-parallel degree. --json prints the values only.\n";

static int want_value(int i, int argc, char **argv, const char *usage)
{
	if (i + 1 >= argc) {
		fprintf(stderr, "kvsim: %s needs a value\n%s", argv[i], usage);
		return 0;
	}
	return 1;
}

static int parse_count(const char *flag, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0) || v > 1e9 || v != floor(v)) {
		fprintf(stderr, "kvsim cost: %s: expected a whole number >= 0, got \"%s\"\n", flag, s);
		return -1;
	}
	*out = v;
	return 0;
}

int cmd_cost(int argc, char **argv)
{
	const char *gpu = NULL, *model = NULL, *tp = "1", *dtype = "bf16", *kind = NULL;
	const char *profiles = NULL, *catalog = NULL;
	double prefill = 0, cached = 0, batch = 0, context = 0;
	int json = 0, have_ctx = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_cost, stdout);
			return 0;
		}
		if (!strcmp(a, "--json")) {
			json = 1;
			continue;
		}
		if (!want_value(i, argc, argv, usage_cost))
			return 2;
		const char *v = argv[++i];
		if (!strcmp(a, "--gpu"))
			gpu = v;
		else if (!strcmp(a, "--model"))
			model = v;
		else if (!strcmp(a, "--tp"))
			tp = v;
		else if (!strcmp(a, "--dtype"))
			dtype = v;
		else if (!strcmp(a, "--cost-model"))
			kind = v;
		else if (!strcmp(a, "--profiles"))
			profiles = v;
		else if (!strcmp(a, "--catalog"))
			catalog = v;
		else if (!strcmp(a, "--prefill")) {
			if (parse_count(a, v, &prefill))
				return 2;
		} else if (!strcmp(a, "--cached")) {
			if (parse_count(a, v, &cached))
				return 2;
		} else if (!strcmp(a, "--decode-batch")) {
			if (parse_count(a, v, &batch))
				return 2;
		} else if (!strcmp(a, "--context")) {
			if (parse_count(a, v, &context))
				return 2;
			have_ctx = 1;
		} else {
			fprintf(stderr, "kvsim cost: unknown option \"%s\"\n%s", a, usage_cost);
			return 2;
		}
	}
	if (!gpu || !model) {
		fprintf(stderr, "kvsim cost: give --gpu and --model\n%s", usage_cost);
		return 2;
	}
	if (batch > 0 && !have_ctx) {
		fprintf(stderr, "kvsim cost: --decode-batch needs --context\n");
		return 2;
	}
	if (prefill == 0 && batch == 0) {
		fprintf(stderr, "kvsim cost: nothing to run: give --prefill and/or --decode-batch\n");
		return 2;
	}
	char err[2048], set[1200];
	cJSON *root = NULL;
	if (cfg_read_json(NULL, &root, err, sizeof err)) {
		fprintf(stderr, "kvsim cost: %s\n", err);
		return 3;
	}
	const char *pairs[][2] = {{"cluster.gpu", gpu},	   {"cluster.model", model},
				  {"cluster.tp", tp},	   {"cluster.dtype", dtype},
				  {"cluster.cost_model.kind", kind},
				  {"cluster.cost_model.profiles", profiles}};
	for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
		if (!pairs[k][1])
			continue;
		int quote = strcmp(pairs[k][0], "cluster.tp") != 0;
		snprintf(set, sizeof set, quote ? "%s=\"%s\"" : "%s=%s", pairs[k][0], pairs[k][1]);
		if (cfg_apply_set(root, set, err, sizeof err)) {
			fprintf(stderr, "kvsim cost: %s\n", err);
			cJSON_Delete(root);
			return 2;
		}
	}
	/* The replica must fit, but this command asks about one iteration:
	 * take all of HBM so that large models still get a KV cache. */
	cfg_apply_set(root, "cluster.engine.gpu_memory_utilization=1.0", err, sizeof err);
	cfg_apply_set(root, "cluster.engine.activation_reserve_gib=0", err, sizeof err);
	struct scenario s;
	int rc = cfg_scenario_load(&s, root, catalog, err, sizeof err);
	cJSON_Delete(root);
	if (rc) {
		fprintf(stderr, "kvsim cost: %s\n", err);
		return 2;
	}
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	struct cost_batch b;
	cost_batch_clear(&b);
	if (prefill > 0)
		cost_add_prefill(&b, prefill, cached);
	for (double k = 0; k < batch; k++)
		cost_add_decode(&b, context);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	const char *kinds[] = {"roofline", "fixed", "profile"};
	const char *bound = p.comm_s > p.combined_s	   ? "communication"
			    : p.overhead_s + p.kernels_s > p.combined_s ? "overhead"
			    : s.cluster.cost.kind == COST_PROFILE	   ? "measured layers"
			    : p.compute_s >= p.memory_s		   ? "compute"
								   : "memory";
	if (json) {
		printf("{\"gpu\":\"%s\",\"model\":\"%s\",\"tp\":%d,\"dtype\":\"%s\",\"cost_model\":\"%s\","
		       "\"prefill_tokens\":%.0f,\"cached_tokens\":%.0f,\"decode_batch\":%.0f,"
		       "\"context\":%.0f,\"compute_s\":%.9g,\"memory_s\":%.9g,\"combined_s\":%.9g,"
		       "\"kernels_s\":%.9g,\"communication_s\":%.9g,\"overhead_s\":%.9g,"
		       "\"iteration_s\":%.9g,\"bound\":\"%s\"}\n",
		       s.cluster.gpu->name, s.cluster.model->name, s.cluster.tp, dtype,
		       kinds[s.cluster.cost.kind], prefill, cached, batch, context, p.compute_s,
		       p.memory_s, p.combined_s, p.kernels_s, p.comm_s, p.overhead_s, p.total_s, bound);
	} else {
		printf("%s x %d serving %s (%s), %s cost model\n", s.cluster.gpu->name, s.cluster.tp,
		       s.cluster.model->name, dtype, kinds[s.cluster.cost.kind]);
		printf("batch: prefill %.0f tokens after %.0f cached; %.0f decodes over %.0f tokens\n",
		       prefill, cached, batch, context);
		if (s.cluster.cost.kind == COST_ROOFLINE)
			printf("roofline: mfu %.4g, mbu %.4g, knee %.4g, %.4g us per kernel\n",
			       s.cluster.cost.mfu, s.cluster.cost.mbu, s.cluster.cost.knee,
			       s.cluster.cost.op_overhead_us);
		printf("  compute        %10.3f ms\n", p.compute_s * 1e3);
		printf("  memory         %10.3f ms\n", p.memory_s * 1e3);
		printf("  %-14s %10.3f ms\n",
		       s.cluster.cost.kind == COST_PROFILE ? "layers+attn" : "combined", p.combined_s * 1e3);
		printf("  kernels        %10.3f ms\n", p.kernels_s * 1e3);
		printf("  communication  %10.3f ms\n", p.comm_s * 1e3);
		printf("  overhead       %10.3f ms\n", p.overhead_s * 1e3);
		printf("  iteration      %10.3f ms  (%s-bound)\n", p.total_s * 1e3, bound);
	}
	cfg_scenario_free(&s);
	return 0;
}

int cmd_calibrate(int argc, char **argv)
{
	const char *dir = "../shared/profiles/vidur", *only = NULL;
	int json = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_calibrate, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--profiles") || !strcmp(argv[i], "--gpu")) {
			if (!want_value(i, argc, argv, usage_calibrate))
				return 2;
			if (!strcmp(argv[i], "--gpu"))
				only = argv[++i];
			else
				dir = argv[++i];
		} else {
			fprintf(stderr, "kvsim calibrate: unknown option \"%s\"\n%s", argv[i],
				usage_calibrate);
			return 2;
		}
	}
	struct catalog cat;
	char err[2048];
	if (catalog_load_builtin(&cat, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return 3;
	}
	int rc = 0, first = 1, fitted = 0;
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
		struct cal_point *pts;
		size_t n;
		char **names;
		int n_names;
		if (cal_load_gpu(dir, gp->profile, &pts, &n, &names, &n_names, err, sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s\n", err);
			rc = 2;
			break;
		}
		struct roof_params rp;
		if (cal_fit(pts, n, gp->bf16_flops, gp->hbm_bytes_per_s, &rp, err, sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s: %s\n", gp->profile, err);
			rc = 3;
		} else if (json) {
			printf("%s\"%s\":{\"mfu\":%.4f,\"mbu\":%.4f,\"knee\":%.4f,\"op_overhead_us\":%.3f}",
			       first ? "" : ",", gp->profile, rp.mfu, rp.mbu, rp.knee,
			       rp.op_overhead_s * 1e6);
			first = 0;
		} else {
			printf("%s (%s: %.4g FLOP/s bf16, %.4g B/s): %zu points from %d models\n",
			       gp->profile, gp->name, gp->bf16_flops, gp->hbm_bytes_per_s, n, n_names);
			printf("  \"roofline\": {\"mfu\": %.4f, \"mbu\": %.4f, \"knee\": %.4f, "
			       "\"op_overhead_us\": %.3f}\n",
			       rp.mfu, rp.mbu, rp.knee, rp.op_overhead_s * 1e6);
			printf("  %-40s %4s %8s %8s %12s\n", "model", "tp", "MAPE", "worst", "64-256 tok");
			for (int m = 0; m < n_names; m++) {
				for (int tp = 1; tp <= 8; tp *= 2) {
					struct cal_errors e;
					cal_errors_of(&rp, gp->bf16_flops, gp->hbm_bytes_per_s, pts, n, m,
						      tp, &e);
					if (e.n)
						printf("  %-40s %4d %7.1f%% %7.1f%% %11.1f%%\n", names[m], tp,
						       100 * e.mape, 100 * e.worst, 100 * e.band[1]);
				}
			}
		}
		/* Intra-server all-reduce: a line per group size. */
		char csv[4096];
		snprintf(csv, sizeof csv, "%s/network/%s_dgx/all_reduce.csv", dir, gp->profile);
		if (json)
			printf(",\"%s_allreduce\":{", gp->profile);
		else
			printf("  \"allreduce\" (from %s, tp: [latency_us, us_per_MiB]):\n", csv);
		for (int tp = 2, k = 0; tp <= 8 && !rc; tp *= 2, k++) {
			double a, b, mape;
			int rows;
			if (cal_collective(csv, tp, 1048576, &a, &b, &mape, &rows, err, sizeof err)) {
				fprintf(stderr, "kvsim calibrate: %s\n", err);
				rc = 2;
				break;
			}
			if (json)
				printf("%s\"%d\":[%.3f,%.3f]", k ? "," : "", tp, a * 1e6, b * 1e6 * 1048576);
			else
				printf("    \"%d\": [%.3f, %.3f]   MAPE %.1f%% over %d messages >= 1 MiB\n",
				       tp, a * 1e6, b * 1e6 * 1048576, 100 * mape, rows);
		}
		if (json)
			printf("}");
		fitted++;
		for (int m = 0; m < n_names; m++)
			free(names[m]);
		free(names);
		free(pts);
	}
	if (json)
		printf("}\n");
	if (!rc && fitted == 0) {
		fprintf(stderr, "kvsim calibrate: no GPU in the catalog names a profile%s%s\n",
			only ? " called " : "", only ? only : "");
		rc = 2;
	}
	catalog_free(&cat);
	return rc;
}
