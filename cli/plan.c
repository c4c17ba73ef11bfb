/* plan: `kvsim plan`: the smallest cluster, or the highest rate, that meets the SLOs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "results/metrics.h"
#include "results/writer.h"
#include "sim/catalog.h"
#include "sim/cfg.h"
#include "sim/config.h"
#include "sim/sim.h"
#include "workloads/workload.h"

enum { O_SLO = CLI_OPT_OWN, O_SEARCH, O_MIN, O_MAX, O_GPUS, O_RATE_KEY };

static const struct cli_opt plan_opts[] = {
    {O_SLO, "slo", 0, "ttft_p99=S|tpot_p99=S", "a service-level objective, in seconds",
     "ttft_p99= tpot_p99=", CLI_REQUIRED | CLI_REPEAT},
    {O_SEARCH, "search", 0, "nodes|rate", "what to search", "nodes rate", CLI_REQUIRED},
    {O_MIN, "min", 0, "X", "the search's lower bound", NULL, 0},
    {O_MAX, "max", 0, "X", "the search's upper bound", NULL, 0},
    {O_GPUS, "gpus", 0, "A,B,...", "search each GPU type and rank them by cost", "@gpu", 0},
    {O_RATE_KEY, "rate-key", 0, "PATH", "the rate to search (default: the workload's)", NULL, 0},
    CLI_ROW_POLICY("route with policy P"),
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_CATALOG,
    CLI_ROW_OUT("output directory (default: out/plan)"),
    CLI_ROW_QUIET("print nothing but errors"),
    {0},
};
CLI_TABLE_FITS(plan_opts);

#define MAX_GPUS 32
#define MAX_RATE_KEY 200 /* the longest --rate-key: probe's PATH=VALUE must hold it */

struct plan {
	struct cli_common o;
	double slo_ttft, slo_tpot; /* <= 0: not constrained */
	const char *search, *min_arg, *max_arg;
	char gpu_buf[1024]; /* --gpus, split */
	const char *gpus[MAX_GPUS];
	int n_gpus; /* 0: the scenario's own GPU */
	int by_rate;
	double min, max;
	const char *rate_key; /* the path probes set */
	char rate_path[128];
	cJSON *probes;
};

/* One GPU type's answer. */
struct answer {
	const char *gpu;
	double value, nodes, cost, tokens_per_dollar, goodput;
	int ok;
};

static int parse_slo(const struct cli_cmd *cmd, struct plan *p, const char *v)
{
	double x;
	int ttft = !strncmp(v, "ttft_p99=", 9), tpot = !strncmp(v, "tpot_p99=", 9);
	if ((!ttft && !tpot) || cli_parse_num(v + 9, &x) || x <= 0) {
		cli_bad_value(cmd, "--slo", "ttft_p99=SECONDS or tpot_p99=SECONDS (SECONDS > 0)", v);
		return -1;
	}
	*(ttft ? &p->slo_ttft : &p->slo_tpot) = x;
	return 0;
}

static int parse_rate_key(const struct cli_cmd *cmd, struct plan *p, const char *v)
{
	if (!v[0]) {
		cli_bad_value(cmd, "--rate-key", "a scenario key such as workload.rate_per_s", v);
		return -1;
	}
	if (strlen(v) > MAX_RATE_KEY) {
		cli_misuse(cmd, "--rate-key: too long (at most %d characters)", MAX_RATE_KEY);
		return -1;
	}
	p->rate_key = v;
	return 0;
}

/* The options into p; CLI_END to go on, else cli_next's end. */
static int parse(const struct cli_ctx *cx, int argc, char **argv, struct plan *p)
{
	struct cli_args a;
	const char *v;
	int id;
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case O_SLO:
			if (parse_slo(cx->cmd, p, v))
				return CLI_BAD;
			break;
		case O_SEARCH: p->search = v; break;
		case O_GPUS:
			p->n_gpus = cli_list(cx->cmd, "--gpus", "GPU names", v, p->gpu_buf,
					     sizeof p->gpu_buf, p->gpus, MAX_GPUS);
			if (p->n_gpus < 0)
				return CLI_BAD;
			break;
		case O_MIN: p->min_arg = v; break;
		case O_MAX: p->max_arg = v; break;
		case O_RATE_KEY:
			if (parse_rate_key(cx->cmd, p, v))
				return CLI_BAD;
			break;
		default:
			if (cli_common_opt(cx->cmd, &p->o, id, v) < 0)
				return CLI_BAD;
		}
	}
	return id == CLI_END ? cli_scenario_arg(cx, &a, &p->o) : id;
}

/* --search, --slo, --min and --max make sense together; 0, or -1 after
 * reporting. */
static int check_search(const struct cli_cmd *cmd, struct plan *p)
{
	if (!p->search || (strcmp(p->search, "nodes") && strcmp(p->search, "rate"))) {
		cli_misuse(cmd, "give --search nodes or --search rate");
		return -1;
	}
	if (p->slo_ttft <= 0 && p->slo_tpot <= 0) {
		fprintf(stderr, "kvsim plan: give at least one --slo ttft_p99=S or tpot_p99=S\n");
		return -1;
	}
	p->by_rate = !strcmp(p->search, "rate");
	p->min = p->by_rate ? 0 : 1;
	p->max = p->by_rate ? 0 : 1024;
	if ((p->min_arg && (cli_parse_num(p->min_arg, &p->min) || p->min <= 0)) ||
	    (p->max_arg && (cli_parse_num(p->max_arg, &p->max) || p->max <= 0)) ||
	    (!p->by_rate && (p->min != (long)p->min || p->max != (long)p->max)) ||
	    (p->max && p->min > p->max)) {
		fprintf(stderr, "kvsim plan: --min/--max: expected positive numbers, min <= max "
				"(whole numbers for nodes)\n");
		return -1;
	}
	return 0;
}

/* The rate search's path (--rate-key, else the workload's own) and where
 * it starts: the scenario's rate, else the workload's default; --min and
 * --max default to 1/1024 and 1024 times that. -1 after reporting. */
static double rate_start(struct plan *p, const struct scenario *base)
{
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(base->workload, "kind");
	const char *k = cJSON_IsString(kind) ? kind->valuestring : "chat";
	const struct wl_ops *ops = wl_find(k);
	if (!p->rate_key && ops && ops->rate_key) {
		snprintf(p->rate_path, sizeof p->rate_path, "workload.%s", ops->rate_key);
		p->rate_key = p->rate_path;
	}
	if (!p->rate_key) {
		fprintf(stderr, "kvsim plan: a %s workload has no rate key; give --rate-key PATH\n", k);
		return -1;
	}
	const char *leaf = strrchr(p->rate_key, '.');
	const cJSON *v =
	    cJSON_GetObjectItemCaseSensitive(base->workload, leaf ? leaf + 1 : p->rate_key);
	double start = cJSON_IsNumber(v)		  ? v->valuedouble
		       : ops && ops->rate_default > 0 ? ops->rate_default
						      : 10;
	if (p->min > 0 && start < p->min)
		start = p->min;
	if (p->max <= 0)
		p->max = start * 1024;
	if (p->min <= 0)
		p->min = start / 1024;
	return start;
}

/* --gpus (default: the scenario's GPU), each checked against the catalog,
 * into names; their count, or -1 after reporting. */
static int gpu_names(const struct plan *p, const struct scenario *base, const char **names)
{
	int n = p->n_gpus ? p->n_gpus : 1;
	for (int i = 0; i < n; i++)
		names[i] = p->n_gpus ? p->gpus[i] : base->cluster.gpu->name;
	for (int i = 0; i < n; i++) {
		if (!catalog_gpu(&base->cat, names[i])) {
			char known[512];
			catalog_names(&base->cat, "gpus", known, sizeof known);
			fprintf(stderr, "kvsim plan: --gpus: unknown GPU \"%s\" (known: %s)\n", names[i],
				known);
			return -1;
		}
	}
	return n;
}

/* Runs the scenario with path=value and extra (path=value or NULL). Returns
 * 1 pass, 0 fail, -1 error (reported). */
static int probe(struct plan *p, const char *label, const char *path, double value,
		 const char *extra, struct met_summary *out)
{
	cJSON *root = cli_load_tree_with_policy(&p->o);
	if (!root)
		return -1;
	char set[MAX_RATE_KEY + 32], err[1024];
	snprintf(set, sizeof set, "%s=%.10g", path, value); /* parse_rate_key bounds path */
	if (cfg_apply_set(root, set, err, sizeof err) ||
	    (extra && cfg_apply_set(root, extra, err, sizeof err))) {
		fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(root);
		return -1;
	}
	struct scenario sc;
	int bad = cli_load_scenario(&p->o, root, &sc);
	cJSON_Delete(root);
	if (bad)
		return -1;
	struct sim_opts so = {0};
	int rc = sim_run(&sc, &so, out, err, sizeof err);
	cfg_scenario_free(&sc);
	if (rc) {
		if (rc <= CLI_INTERNAL) /* else interrupted: main says so */
			fprintf(stderr, "kvsim: %s\n", err);
		return -1;
	}
	uint64_t lost = out->shed + out->failed;
	int pass = out->completed > 0 && (p->slo_ttft <= 0 || out->ttft.p99 <= p->slo_ttft) &&
		   (p->slo_tpot <= 0 || out->tpot.n == 0 || out->tpot.p99 <= p->slo_tpot) &&
		   (double)lost <= 0.001 * (double)out->arrived;
	if (!p->o.quiet)
		printf("  probe %-9s %s=%-10.6g TTFT p99 %8.3f s  TPOT p99 %7.4f s  shed+failed %6llu  "
		       "goodput %8.2f req/s  %s\n",
		       label, path, value, out->ttft.p99, out->tpot.p99, (unsigned long long)lost,
		       out->goodput_rps, pass ? "PASS" : "fail");
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "gpu", label);
	cJSON_AddStringToObject(j, "path", path);
	cJSON_AddNumberToObject(j, "value", value);
	cJSON_AddNumberToObject(j, "ttft_p99_s", out->ttft.p99);
	cJSON_AddNumberToObject(j, "tpot_p99_s", out->tpot.p99);
	cJSON_AddNumberToObject(j, "shed_or_failed", (double)lost);
	cJSON_AddNumberToObject(j, "goodput_rps", out->goodput_rps);
	cJSON_AddNumberToObject(j, "output_tokens_per_s", out->output_tokens_per_s);
	cJSON_AddBoolToObject(j, "pass", pass);
	cJSON_AddItemToArray(p->probes, j);
	return pass;
}

/* A probe's summary becomes the best so far if it passed, else is dropped. */
static void keep_if_pass(int pass, struct met_summary *best, struct met_summary *m)
{
	if (pass) {
		met_summary_free(best);
		*best = *m;
	} else {
		met_summary_free(m);
	}
}

/* Smallest passing node count in [min, max]: doubling, then bisection.
 * Returns it, 0 if none passes, -1 on error; *best gets its summary. */
static long search_nodes(struct plan *p, const char *label, const char *extra,
			 struct met_summary *best)
{
	long lo = (long)p->min - 1, n = (long)p->min, hi = -1;
	struct met_summary m;
	while (n <= (long)p->max) {
		int r = probe(p, label, "cluster.nodes", (double)n, extra, &m);
		if (r < 0)
			return -1;
		if (r) {
			hi = n;
			*best = m;
			break;
		}
		met_summary_free(&m);
		lo = n;
		if (n == (long)p->max)
			break;
		n = n * 2 > (long)p->max ? (long)p->max : n * 2;
	}
	if (hi < 0)
		return 0;
	while (hi - lo > 1) {
		long mid = lo + (hi - lo) / 2;
		int r = probe(p, label, "cluster.nodes", (double)mid, extra, &m);
		if (r < 0)
			return -1;
		keep_if_pass(r, best, &m);
		*(r ? &hi : &lo) = mid;
	}
	return hi;
}

/* Highest passing rate: from the scenario's rate, doubling or halving to a
 * bracket, then bisection to 1%. Returns it, 0 if none, -1 on error. */
static double search_rate(struct plan *p, const char *label, const char *extra, double start,
			  struct met_summary *best)
{
	struct met_summary m;
	double pass_at = -1, fail_at = -1, r = start;
	int got = probe(p, label, p->rate_key, r, extra, &m);
	if (got < 0)
		return -1;
	if (got) {
		pass_at = r;
		*best = m;
		while (r * 2 <= p->max) {
			r *= 2;
			got = probe(p, label, p->rate_key, r, extra, &m);
			if (got < 0)
				return -1;
			keep_if_pass(got, best, &m);
			if (!got) {
				fail_at = r;
				break;
			}
			pass_at = r;
		}
		if (fail_at < 0)
			return pass_at; /* passes up to --max */
	} else {
		met_summary_free(&m);
		fail_at = r;
		while (r / 2 >= p->min) {
			r /= 2;
			got = probe(p, label, p->rate_key, r, extra, &m);
			if (got < 0)
				return -1;
			if (got) {
				pass_at = r;
				*best = m;
				break;
			}
			met_summary_free(&m);
			fail_at = r;
		}
		if (pass_at < 0)
			return 0;
	}
	while ((fail_at - pass_at) / pass_at > 0.01) {
		double mid = (pass_at + fail_at) / 2;
		got = probe(p, label, p->rate_key, mid, extra, &m);
		if (got < 0)
			return -1;
		keep_if_pass(got, best, &m);
		*(got ? &pass_at : &fail_at) = mid;
	}
	return pass_at;
}

/* The search on one GPU type: its answer into *res and answers (JSON).
 * 0, or -1 after reporting. */
static int search_gpu(struct plan *p, const struct scenario *base, const char *gpu, double start,
		      struct answer *res, cJSON *answers)
{
	char extra[512];
	if (snprintf(extra, sizeof extra, "cluster.gpu=%s", gpu) >= (int)sizeof extra) {
		fprintf(stderr, "kvsim plan: GPU name too long: %s\n", gpu);
		return -1;
	}
	if (!p->o.quiet) {
		printf("%s: searching %s for", gpu, p->by_rate ? p->rate_key : "cluster.nodes");
		if (p->slo_ttft > 0)
			printf(" TTFT p99 <= %g s", p->slo_ttft);
		if (p->slo_tpot > 0)
			printf("%s TPOT p99 <= %g s", p->slo_ttft > 0 ? "," : "", p->slo_tpot);
		printf("\n");
	}
	struct met_summary best;
	memset(&best, 0, sizeof best);
	double v = p->by_rate ? search_rate(p, gpu, extra, start, &best)
			      : (double)search_nodes(p, gpu, extra, &best);
	if (v < 0)
		return -1;
	const struct cat_gpu *gp = catalog_gpu(&base->cat, gpu);
	res->gpu = gpu;
	res->value = v;
	res->ok = v > 0;
	res->nodes = p->by_rate ? base->cluster.nodes : v;
	res->cost = res->nodes * base->cluster.tp * gp->price_per_hour;
	res->goodput = best.goodput_rps;
	res->tokens_per_dollar = res->cost > 0 ? best.output_tokens_per_s * 3600 / res->cost : 0;
	met_summary_free(&best);
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "gpu", gpu);
	cJSON_AddBoolToObject(a, "met", res->ok);
	if (res->ok) {
		cJSON_AddNumberToObject(a, p->by_rate ? "rate" : "nodes", v);
		cJSON_AddNumberToObject(a, "gpus", res->nodes * base->cluster.tp);
		cJSON_AddNumberToObject(a, "cost_per_hour", res->cost);
		cJSON_AddNumberToObject(a, "output_tokens_per_dollar", res->tokens_per_dollar);
		cJSON_AddNumberToObject(a, "goodput_rps", res->goodput);
	}
	cJSON_AddItemToArray(answers, a);
	if (p->o.quiet)
		return 0;
	if (res->ok)
		printf("%s: %s %.6g (%.0f GPUs, $%.2f/h, %.0f output tokens per $)\n\n", gpu,
		       p->by_rate ? "highest rate" : "smallest cluster", v,
		       res->nodes * base->cluster.tp, res->cost, res->tokens_per_dollar);
	else
		printf("%s: no %s in [%g, %g] meets the SLOs\n\n", gpu,
		       p->by_rate ? "rate" : "node count", p->min, p->max);
	return 0;
}

/* 1 when a ranks below b: cheapest first (nodes), most tokens per dollar
 * first (rate), answers before misses. */
static int ranks_below(const struct plan *p, const struct answer *a, const struct answer *b)
{
	if (a->ok && b->ok)
		return p->by_rate ? a->tokens_per_dollar < b->tokens_per_dollar : a->cost > b->cost;
	return !a->ok && b->ok;
}

static void print_ranking(const struct plan *p, const struct answer *res, int n)
{
	int order[MAX_GPUS];
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) /* insertion sort: stable, n is small */
		for (int j = i; j > 0 && ranks_below(p, &res[order[j - 1]], &res[order[j]]); j--) {
			int t = order[j - 1];
			order[j - 1] = order[j];
			order[j] = t;
		}
	printf("%-4s %-10s %10s %10s %16s %14s\n", "rank", "gpu", p->by_rate ? "rate" : "nodes",
	       "$/hour", "out tokens / $", "goodput req/s");
	for (int i = 0; i < n; i++) {
		const struct answer *r = &res[order[i]];
		if (r->ok)
			printf("%-4d %-10s %10.6g %10.2f %16.0f %14.2f\n", i + 1, r->gpu, r->value,
			       r->cost, r->tokens_per_dollar, r->goodput);
		else
			printf("%-4s %-10s %10s\n", "-", r->gpu, "none");
	}
}

/* DIR/plan.json: the question, the answers and every probe. Takes answers
 * and p->probes. */
static int write_plan(struct plan *p, const struct scenario *base, cJSON *answers)
{
	const char *out = p->o.out ? p->o.out : "out/plan";
	char path[4200], err[1024];
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "scenario", base->name);
	cJSON_AddStringToObject(j, "search", p->by_rate ? p->rate_key : "cluster.nodes");
	cJSON *slo = cJSON_AddObjectToObject(j, "slo");
	if (p->slo_ttft > 0)
		cJSON_AddNumberToObject(slo, "ttft_p99_s", p->slo_ttft);
	if (p->slo_tpot > 0)
		cJSON_AddNumberToObject(slo, "tpot_p99_s", p->slo_tpot);
	cJSON_AddNumberToObject(j, "seed", (double)base->seed);
	cJSON_AddStringToObject(j, "kvsim_version", kvsim_version());
	cJSON_AddItemToObject(j, "answers", answers);
	cJSON_AddItemToObject(j, "probes", p->probes);
	p->probes = NULL;
	snprintf(path, sizeof path, "%s/plan.json", out);
	int rc = CLI_OK;
	if (res_mkdirs(out, err, sizeof err) || res_write_json(path, j, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		rc = CLI_INTERNAL;
	} else if (!p->o.quiet) {
		printf("wrote %s\n", path);
	}
	cJSON_Delete(j);
	return rc;
}

/* Every GPU type's search, the ranking, plan.json. */
static int plan(struct plan *p, const struct scenario *base, double start)
{
	const char *names[MAX_GPUS];
	int ng = gpu_names(p, base, names);
	if (ng < 0)
		return CLI_USAGE;
	struct answer res[MAX_GPUS];
	cJSON *answers = cJSON_CreateArray();
	p->probes = cJSON_CreateArray();
	int any = 0;
	for (int g = 0; g < ng; g++) {
		if (search_gpu(p, base, names[g], start, &res[g], answers)) {
			cJSON_Delete(answers);
			return CLI_USAGE;
		}
		any |= res[g].ok;
	}
	if (ng > 1 && !p->o.quiet)
		print_ranking(p, res, ng);
	int rc = write_plan(p, base, answers);
	return rc == CLI_OK && !any ? CLI_NOT_MET : rc;
}

static int cmd_plan(const struct cli_ctx *cx, int argc, char **argv)
{
	struct plan p;
	memset(&p, 0, sizeof p);
	int end = parse(cx, argc, argv, &p);
	if (end != CLI_END)
		return cli_end_code(end);
	if (check_search(cx->cmd, &p))
		return CLI_USAGE;
	struct scenario base; /* the scenario as given: its rate and its GPU */
	if (cli_load_from_opts(&p.o, &base))
		return CLI_USAGE;
	double start = p.by_rate ? rate_start(&p, &base) : 0;
	int rc = start < 0 ? CLI_USAGE : plan(&p, &base, start);
	cJSON_Delete(p.probes);
	cfg_scenario_free(&base);
	return rc;
}

const struct cli_cmd cli_plan_cmd = {
    .name = "plan",
    .args = "[SCENARIO.json]",
    .summary = "smallest cluster (or highest rate) that meets SLOs",
    .run = cmd_plan,
    .opts = plan_opts,
    .about =
	"Finds the smallest cluster.nodes that meets every SLO at the scenario's load\n"
	"(--search nodes; --min 1, --max 1024), or the highest arrival rate the cluster\n"
	"sustains (--search rate; the workload's rate key, as workload.sessions_per_s for\n"
	"chat or workload.rate_per_s for open, rag and agent, or --rate-key), by an\n"
	"exponential then a binary search, printing each probe (a full run, same seed). A\n"
	"probe passes when TTFT p99 and TPOT p99 are within the SLOs and at most 0.1% of\n"
	"requests were shed or failed. Goodput (DistServe) is the rate of requests that\n"
	"met all SLOs. With --gpus, the node search is repeated for each GPU type\n"
	"(cluster.gpu) and the answers ranked by cost per hour (catalog price_per_hour x\n"
	"GPUs; override with --catalog) and output tokens per dollar. Writes\n"
	"DIR/plan.json (default DIR: out/plan).\n"
	"Exit 0 when a value meets the SLOs, 1 when none in range does, 2 bad input.\n",
    .pos_complete = "@file",
};
