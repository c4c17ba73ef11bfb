/* iteration: `kvsim cost`: one iteration of one replica, its predicted time term by term and its power. */
#include "experiments/iteration.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "model/catalog.h"
#include "model/cost.h"
#include "sim/power.h"

/* Exit codes, as the command line's (docs/design.md, section 7). */
enum { EXIT_OK = 0, EXIT_BAD = 2, EXIT_INTERNAL = 3 };

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
 * (reported). Caller frees s with cfg_scenario_free when EXIT_OK. */
static int load_replica(const struct iter_query *c, struct scenario *s)
{
	char err[2048];
	cJSON *root = NULL;
	if (cfg_read_json(NULL, &root, err, sizeof err)) {
		fprintf(stderr, "kvsim cost: %s\n", err);
		return EXIT_INTERNAL;
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
			return EXIT_INTERNAL;
		}
		int bad = cfg_apply_set(root, set, err, sizeof err);
		free(set);
		if (bad) {
			fprintf(stderr, "kvsim cost: %s\n", err);
			cJSON_Delete(root);
			return EXIT_BAD;
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
		return EXIT_BAD;
	}
	return EXIT_OK;
}

/* u and power_w: the iteration's utilisation and one GPU's power while it
 * runs (the energy model, docs/model.md). */
static void print_cost(const struct iter_query *c, const struct scenario *s,
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

int iter_report(const struct iter_query *c)
{
	struct scenario s;
	int rc = load_replica(c, &s);
	if (rc)
		return rc;
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	struct cost_batch b;
	cost_batch_clear(&b);
	if (c->prefill > 0)
		cost_add_prefill(&b, c->prefill, c->cached);
	for (double k = 0; k < c->batch; k++)
		cost_add_decode(&b, c->context);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	double work = cost_work_ns(&cm, &b);
	int64_t t = cost_iteration_ns(&cm, &b);
	print_cost(c, &s, &p, work < (double)t ? work / (double)t : 1.0,
		   power_busy_w(s.cluster.gpu, work, t));
	cfg_scenario_free(&s);
	return EXIT_OK;
}

