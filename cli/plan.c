/* plan: `kvsim plan`: the smallest cluster, the highest rate, or the best prefill:decode split, that meets the SLOs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cells.h"
#include "cli/cli.h"
#include "experiments/plan_day.h"
#include "experiments/plan_pools.h"
#include "experiments/plan_rank.h"
#include "policies/policy.h"
#include "results/writer.h"
#include "sim/sim.h"
#include "workloads/workload.h"

enum {
	O_SLO = CLI_OPT_OWN,
	O_SEARCH,
	O_MIN,
	O_MAX,
	O_GPUS,
	O_RATE_KEY,
	O_GPUS_TOTAL,
	O_POOL,
	O_POOL_GPUS,
	O_AUTOSCALER,
	O_RANK,
	O_SEEDS,
	O_JOBS
};

static const struct cli_opt plan_opts[] = {
    {O_SLO, "slo", 0, "ttft_p99=S|tpot_p99=S", "a service-level objective, in seconds",
     "ttft_p99= tpot_p99=", CLI_REQUIRED | CLI_REPEAT},
    {O_SEARCH, "search", 0, "nodes|rate|pd_ratio|autoscale", "what to search",
     "nodes rate pd_ratio autoscale", CLI_REQUIRED},
    {O_MIN, "min", 0, "X", "the search's lower bound", NULL, 0},
    {O_MAX, "max", 0, "X", "the search's upper bound", NULL, 0},
    {O_GPUS, "gpus", 0, "A,B,...",
     "search each GPU type (every pool's, with pools) and rank them by cost", "@gpu", 0},
    {O_POOL_GPUS, "pool-gpus", 0, "POOL=A,B,...",
     "search each GPU type for pool POOL, the others keeping theirs; repeated for other pools, "
     "every combination; the fleets are ranked by cost",
     NULL, CLI_REPEAT},
    {O_GPUS_TOTAL, "gpus-total", 0, "N",
     "--search pd_ratio: the GPUs to split between the prefill and the decode pool (default: "
     "search the smallest N that meets the SLOs)",
     NULL, 0},
    {O_POOL, "pool", 0, "NAME",
     "--search nodes on a cluster with pools: the pool whose nodes to search", NULL, 0},
    {O_RATE_KEY, "rate-key", 0, "PATH", "the rate to search (default: the workload's)", NULL, 0},
    {O_AUTOSCALER, "autoscaler", 0, "JSON",
     "--search autoscale: an autoscaler to run against the static fleet, as "
     "cluster.autoscaler's object (default: the scenario's own, else an HPA on "
     "queue_per_node, target 4, 1 to twice the static nodes)",
     NULL, CLI_REPEAT},
    {O_RANK, "rank", 0, "cost|energy|gpu_hours",
     "--search autoscale: rank the fleets by cost in USD (default), energy or GPU-hours",
     "cost energy gpu_hours", 0},
    {O_SEEDS, "seeds", 0, "N|a-b|a,b,c",
     "run every probe at each of these seeds (N: seeds 1 to N); a probe passes only when it "
     "passes at every seed, and prints each figure's median with the TTFT and TPOT range",
     NULL, 0},
    CLI_ROW_POLICY("route with policy P"),
    {OPT_POLICIES, "policies", 0, "a,b,c|all",
     "run the search once per policy (all: every one of 'kvsim list policies'), on the same "
     "requests, and rank policy x GPU",
     "@policies", 0},
    {O_JOBS, "jobs", 'j', "N",
     "run the searches (one per policy and GPU fleet) in up to N worker processes, with the "
     "same output (default 1)",
     NULL, 0},
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_CATALOG,
    CLI_ROW_OUT("output directory (default: out/plan)"),
    CLI_ROW_QUIET("print nothing but errors"),
    {0},
};
CLI_TABLE_FITS(plan_opts);

static int parse_slo(const struct cli_cmd *cmd, struct plan *p, const char *v)
{
	double x;
	int ttft = !strncmp(v, "ttft_p99=", 9), tpot = !strncmp(v, "tpot_p99=", 9);
	if ((!ttft && !tpot) || cli_parse_num(v + 9, &x) || x <= 0) {
		cli_bad_value(cmd, "--slo",
			      "ttft_p99=SECONDS or tpot_p99=SECONDS, a number of seconds > 0 with "
			      "no unit (e.g. ttft_p99=1.0)",
			      v);
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

/* --pool-gpus POOL=A,B,...: the list split into p now, the pool named
 * later (plan_check_pools, once the scenario is read). 0, or -1 after
 * reporting as cmd. */
static int pool_gpus_opt(const struct cli_cmd *cmd, struct plan *p, const char *v)
{
	const char *eq = strchr(v, '=');
	if (!eq || eq == v) {
		cli_bad_value(cmd, "--pool-gpus", "POOL=GPU,GPU,... (a pool's name, its GPU types)", v);
		return -1;
	}
	if (p->n_ax == MAX_POOL_AXES) {
		cli_misuse(cmd, "--pool-gpus: at most %d (one per pool)", MAX_POOL_AXES);
		return -1;
	}
	struct pool_axis *a = &p->ax[p->n_ax];
	a->arg = v;
	a->n = cli_list(cmd, "--pool-gpus", "GPU names", eq + 1, a->buf, sizeof a->buf, a->gpus,
			MAX_GPUS);
	if (a->n < 0)
		return -1;
	p->n_ax++;
	return 0;
}

/* --autoscaler JSON, the option's n-th: checked to be a JSON object and
 * kept in p (the keys are checked once the scenario is read). 0, or -1
 * after reporting as cmd. */
static int autoscaler_opt(const struct cli_cmd *cmd, struct plan *p, const char *v)
{
	if (p->n_as == MAX_AUTOSCALERS) {
		cli_misuse(cmd, "--autoscaler: at most %d", MAX_AUTOSCALERS);
		return -1;
	}
	char inner[512];
	int rc = plan_day_check_autoscaler(v, inner, sizeof inner);
	if (rc == -2) {
		cli_misuse(cmd, "--autoscaler #%d: %s", p->n_as + 1, inner);
		return -1;
	}
	if (rc) {
		cli_misuse(cmd, "--autoscaler #%d: expected a JSON object such as '{\"kind\": \"hpa\", "
				"\"metric\": \"queue_per_node\", \"target\": 4, \"max_nodes\": 8}', "
				"got \"%s\"", p->n_as + 1, v);
		return -1;
	}
	p->as_arg[p->n_as++] = v;
	return 0;
}

/* --rank: cost, energy or gpu_hours. 0, or -1 after reporting as cmd. */
static int rank_opt(const struct cli_cmd *cmd, struct plan *p, const char *v)
{
	if (!plan_day_rank(p, v))
		return 0;
	cli_bad_value(cmd, "--rank", "cost, energy or gpu_hours", v);
	return -1;
}

/* The options into p; CLI_END to go on, else cli_next's end. */
static int parse(const struct cli_ctx *cx, int argc, char **argv, struct plan *p,
		 struct cli_common *o, int *jobs)
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
		case O_POOL_GPUS:
			if (pool_gpus_opt(cx->cmd, p, v))
				return CLI_BAD;
			break;
		case O_GPUS_TOTAL: {
			long long n;
			if (cli_parse_int(v, 1, 1000000, &n)) {
				cli_bad_value(cx->cmd, "--gpus-total", "a whole number of GPUs, 2 or more", v);
				return CLI_BAD;
			}
			p->total = (long)n;
			p->total_arg = v;
			break;
		}
		case O_POOL: p->pool_name = v; break;
		case O_AUTOSCALER:
			if (autoscaler_opt(cx->cmd, p, v))
				return CLI_BAD;
			break;
		case O_RANK:
			if (rank_opt(cx->cmd, p, v))
				return CLI_BAD;
			break;
		case O_SEEDS: {
			struct cmp_grid g = {0};
			if (cmp_parse_seeds(&g, v)) {
				cli_bad_value(cx->cmd, "--seeds", "N (1-64), a-b or a,b,c: distinct seeds",
					      v);
				return CLI_BAD;
			}
			for (int k = 0; k < g.n_seeds; k++)
				p->seeds[k] = g.seeds[k];
			p->n_seeds = g.n_seeds;
			break;
		}
		case O_JOBS: {
			long long j;
			if (cli_parse_int(v, 1, 1024, &j)) {
				cli_bad_value(cx->cmd, "--jobs", "1 to 1024 workers", v);
				return CLI_BAD;
			}
			*jobs = (int)j;
			break;
		}
		case O_MIN: p->min_arg = v; break;
		case O_MAX: p->max_arg = v; break;
		case O_RATE_KEY:
			if (parse_rate_key(cx->cmd, p, v))
				return CLI_BAD;
			break;
		default:
			if (cli_common_opt(cx->cmd, o, id, v) < 0)
				return CLI_BAD;
		}
	}
	return id == CLI_END ? cli_scenario_arg(cx, &a, o) : id;
}

/* --search, --slo, --min, --max, --gpus-total and --pool make sense
 * together; 0, or -1 after reporting. */
static int check_search(const struct cli_cmd *cmd, struct plan *p)
{
	if (!p->search || (strcmp(p->search, "nodes") && strcmp(p->search, "rate") &&
			   strcmp(p->search, "pd_ratio") && strcmp(p->search, "autoscale"))) {
		cli_misuse(cmd, "give --search nodes or --search rate (or --search pd_ratio, for a "
				"cluster of a prefill and a decode pool, or --search autoscale, "
				"static against autoscaled fleets)");
		return -1;
	}
	if (p->slo_ttft <= 0 && p->slo_tpot <= 0) {
		fprintf(stderr, "kvsim plan: give at least one --slo ttft_p99=S or tpot_p99=S\n");
		return -1;
	}
	p->by_rate = !strcmp(p->search, "rate");
	p->pd = !strcmp(p->search, "pd_ratio");
	p->day = !strcmp(p->search, "autoscale");
	if (plan_day_check(p))
		return -1;
	if (p->total_arg && !p->pd) {
		fprintf(stderr, "kvsim plan: --gpus-total goes with --search pd_ratio\n");
		return -1;
	}
	if (p->pool_name && strcmp(p->search, "nodes") && !p->day) {
		fprintf(stderr, "kvsim plan: --pool names the pool --search nodes searches; "
				"--search %s does not take it\n", p->search);
		return -1;
	}
	if (p->total_arg && (p->min_arg || p->max_arg)) {
		fprintf(stderr, "kvsim plan: --min and --max bound the GPU count that --search "
				"pd_ratio searches without --gpus-total; give one or the other\n");
		return -1;
	}
	p->min = p->by_rate ? 0 : 1;
	p->max = p->by_rate ? 0 : 1024;
	if ((p->min_arg && (cli_parse_num(p->min_arg, &p->min) || p->min <= 0)) ||
	    (p->max_arg && (cli_parse_num(p->max_arg, &p->max) || p->max <= 0)) ||
	    (!p->by_rate && (p->min != (long)p->min || p->max != (long)p->max)) ||
	    (p->max && p->min > p->max)) {
		fprintf(stderr, "kvsim plan: --min/--max: expected positive numbers, min <= max "
				"(whole numbers for nodes and GPUs)\n");
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

/* --- the nodes and rate searches ---------------------------------------- */

/* Highest passing rate: from the scenario's rate, doubling or halving to a
 * bracket, then bisection to 1%. Returns it, 0 if none, -1 on error. */
static double search_rate(struct plan *p, const struct fleet *fl, double start, struct fig *best)
{
	struct fig f;
	double pass_at = -1, fail_at = -1, r = start;
	int got = plan_probe_value(p, fl, p->rate_key, r, &f);
	if (got < 0)
		return -1;
	if (got) {
		pass_at = r;
		*best = f;
		while (r < p->max) { /* doubling, and --max itself last */
			r = r * 2 <= p->max ? r * 2 : p->max;
			got = plan_probe_value(p, fl, p->rate_key, r, &f);
			if (got < 0)
				return -1;
			if (!got) {
				fail_at = r;
				break;
			}
			pass_at = r;
			*best = f;
		}
		if (fail_at < 0)
			return pass_at; /* passes up to --max */
	} else {
		fail_at = r;
		while (r > p->min) { /* halving, and --min itself last */
			r = r / 2 >= p->min ? r / 2 : p->min;
			got = plan_probe_value(p, fl, p->rate_key, r, &f);
			if (got < 0)
				return -1;
			if (got) {
				pass_at = r;
				*best = f;
				break;
			}
			fail_at = r;
		}
		if (pass_at < 0)
			return 0;
	}
	while ((fail_at - pass_at) / pass_at > 0.01) {
		double mid = (pass_at + fail_at) / 2;
		got = plan_probe_value(p, fl, p->rate_key, mid, &f);
		if (got < 0)
			return -1;
		if (got)
			*best = f;
		*(got ? &pass_at : &fail_at) = mid;
	}
	return pass_at;
}

/* --- each fleet, the ranking, plan.json --------------------------------- */

static const char *search_name(const struct plan *p)
{
	return p->day ? "autoscale" : p->pd ? "pd_ratio" : p->by_rate ? p->rate_key : p->node_path;
}


/* Answer res of the search: label, value v (0: none met), figures f,
 * the binding SLO p->bind (none: why, when nothing failed). */
static void fill_answer(const struct plan *p, const char *label, double v, const struct fig *f,
			struct answer *res)
{
	memset(res, 0, sizeof *res);
	res->label = label;
	res->value = v;
	res->ok = v > 0;
	res->f = *f;
	res->tokens_per_dollar = f->cost > 0 ? f->tokens_per_s * 3600 / f->cost
			       : isnan(f->cost) ? NAN
						: 0;
	res->good_per_dollar = f->cost > 0 ? f->goodput * 3600 / f->cost
			     : isnan(f->cost) ? NAN
					      : 0;
	res->bind = p->bind;
	res->policy = p->policy;
	if (!res->bind.slo && !res->bind.none[0]) /* a count from --min, a rate to --max */
		snprintf(res->bind.none, sizeof res->bind.none, "--%s %g reached",
			 p->by_rate ? "max" : "min", p->by_rate ? p->max : p->min);
}

/* Answer res's fields of plan.json into a. */
static void answer_json(const struct plan *p, const struct scenario *base, const struct fleet *fl,
			const struct answer *res, cJSON *a)
{
	cJSON_AddBoolToObject(a, "met", res->ok);
	if (res->ok) {
		if (p->pd && !res->coloc) {
			cJSON_AddNumberToObject(a, "prefill", res->f.pr);
			cJSON_AddNumberToObject(a, "decode", res->f.de);
		} else {
			cJSON_AddNumberToObject(a, p->by_rate ? "rate" : "nodes",
						res->coloc ? res->f.gpus / p->tp_d : res->value);
		}
		cJSON_AddNumberToObject(a, "gpus", res->f.gpus);
		cJSON_AddNumberToObject(a, "cost_per_hour", res->f.cost);
		cJSON_AddNumberToObject(a, "output_tokens_per_dollar", res->tokens_per_dollar);
		cJSON_AddNumberToObject(a, "goodput_rps", res->f.goodput);
		cJSON_AddNumberToObject(a, "slo_attainment", res->f.attain);
		if (p->pooled && !res->coloc)
			cJSON_AddItemToObject(a, "pools", plan_fleet_pools(p, base, fl, res));
	}
	cJSON_AddItemToObject(a, "binding", plan_bind_json(&res->bind));
}

/* The line of answer res (name: its fleet, after its policy), and of its
 * binding SLO. */
static void print_answer(const struct plan *p, const struct scenario *base, const char *name,
			 const struct answer *res)
{
	/* an unpriced GPU (plan alone, so unranked) has no cost: n/a */
	char cost[32], per[32], bind[400];
	snprintf(cost, sizeof cost, isnan(res->f.cost) ? "n/a" : "$%.2f/h", res->f.cost);
	snprintf(per, sizeof per, isnan(res->f.cost) ? "n/a" : "%.0f", res->tokens_per_dollar);
	if (res->ok && res->coloc)
		printf("%s: %s %.0f GPUs (%.0f nodes, %s, goodput %.2f req/s, SLO attainment %.4f, "
		       "%s output tokens per $)\n",
		       name, p->total ? "meets the SLOs on" : "smallest colocated cluster",
		       res->f.gpus, res->f.gpus / p->tp_d, cost, res->f.goodput, res->f.attain, per);
	else if (res->ok && p->pd)
		printf("%s: best split %d prefill + %d decode (%.0f GPUs, %s, goodput %.2f req/s, "
		       "SLO attainment %.4f, %s output tokens per $)\n",
		       name, res->f.pr, res->f.de, res->f.gpus, cost, res->f.goodput, res->f.attain,
		       per);
	else if (res->ok)
		printf("%s: %s%s %.6g (%.0f GPUs, %s, %s output tokens per $)\n", name,
		       p->by_rate ? "highest rate" : p->pool >= 0 ? "smallest pool " : "smallest cluster",
		       !p->by_rate && p->pool >= 0 ? base->pools[p->pool].name : "", res->value,
		       res->f.gpus, cost, per);
	else if (res->coloc && p->total)
		printf("%s: %ld GPUs colocated miss the SLOs\n", name, p->total);
	else if (p->pd && p->total)
		printf("%s: no split of %ld GPUs meets the SLOs\n", name, p->total);
	else
		printf("%s: no %s in [%g, %g] meets the SLOs\n", name,
		       p->by_rate ? "rate" : p->pd ? "GPU count" : "node count", p->min, p->max);
	plan_bind_text(&res->bind, bind, sizeof bind);
	printf("%s: %s%s\n", name, res->bind.slo ? "bound by " : "", bind);
}

/* The search on one fleet: its answers into res (pd_ratio: the best split
 * and, when the fleet has one, the colocated layout's) and answers (JSON).
 * How many, or -1 after reporting. */
static int search_fleet(struct plan *p, const struct scenario *base, const struct fleet *fl,
			double start, struct answer *res, cJSON *answers)
{
	char name[400];
	snprintf(name, sizeof name, "%s%s%s", p->policy ? p->policy : "", p->policy ? ", " : "",
		 fl->label);
	if (!p->quiet) {
		if (p->pd && p->total)
			printf("%s: splitting %ld GPUs between prefill (tp %d) and decode (tp %d) for",
			       name, p->total, p->tp_p, p->tp_d);
		else if (p->pd)
			printf("%s: searching the GPUs of prefill (tp %d) + decode (tp %d) for", name,
			       p->tp_p, p->tp_d);
		else
			printf("%s: searching %s for", name, search_name(p));
		if (p->slo_ttft > 0)
			printf(" TTFT p99 <= %g s", p->slo_ttft);
		if (p->slo_tpot > 0)
			printf("%s TPOT p99 <= %g s", p->slo_ttft > 0 ? "," : "", p->slo_tpot);
		printf("\n");
	}
	cJSON *a = cJSON_CreateObject();
	if (p->policy)
		cJSON_AddStringToObject(a, "policy", p->policy);
	cJSON_AddStringToObject(a, "gpu", fl->label);
	struct fig f;
	memset(&f, 0, sizeof f);
	memset(&p->bind, 0, sizeof p->bind);
	p->bind_dir = p->by_rate ? 1 : -1;
	double v = p->pd ? (double)plan_search_pd(p, fl, &f, a)
		   : p->by_rate ? search_rate(p, fl, start, &f)
				: (double)plan_least(p, fl, plan_nodes_pass, &f);
	p->bind_dir = 0;
	if (v < 0) {
		cJSON_Delete(a);
		return -1;
	}
	fill_answer(p, fl->label, v, &f, &res[0]);
	answer_json(p, base, fl, &res[0], a);
	cJSON_AddItemToArray(answers, a);
	if (!p->quiet)
		print_answer(p, base, name, &res[0]);
	if (!p->pd || !fl->coloc_gpu) {
		if (!p->quiet && p->pd)
			printf("%s: no colocated layout to compare: the pools differ in GPU or tp\n", name);
		if (!p->quiet)
			printf("\n");
		return 1;
	}
	snprintf(name + strlen(name), sizeof name - strlen(name), " colocated");
	if (!p->quiet)
		printf("%s: the same GPUs in one mixed pool (no cluster.pools; cluster.gpu %s, tp %d)\n",
		       name, fl->coloc_gpu, p->tp_d);
	v = (double)plan_colocated(p, fl, &f);
	p->bind_dir = 0;
	if (v < 0)
		return -1;
	fill_answer(p, fl->coloc_label, v, &f, &res[1]);
	res[1].coloc = 1;
	cJSON *c = cJSON_AddObjectToObject(a, "colocated");
	answer_json(p, base, fl, &res[1], c);
	if (!p->quiet)
		print_answer(p, base, name, &res[1]);
	plan_pd_verdict(p, &res[0], &res[1], a, p->quiet ? NULL : stdout);
	if (!p->quiet)
		printf("\n");
	return 2;
}

/* The ranking without --policies: a row per fleet, as ranked. */
static void print_ranking(const struct plan *p, const struct answer *res, int n)
{
	int *order = malloc((size_t)n * sizeof *order);
	if (!order)
		return;
	plan_rank_order(p, res, n, order);
	int w = 10;
	for (int i = 0; i < n; i++)
		if ((int)strlen(res[i].label) > w)
			w = (int)strlen(res[i].label);
	if (p->pd)
		printf("%-4s %-*s %7s %6s %5s %10s %16s %14s %12s\n", "rank", w, "gpu", "prefill",
		       "decode", "GPUs", "$/hour", "out tokens / $", "goodput req/s", "SLO req / $");
	else
		printf("%-4s %-*s %10s %10s %16s %14s\n", "rank", w, "gpu",
		       p->by_rate ? "rate" : "nodes", "$/hour", "out tokens / $", "goodput req/s");
	for (int i = 0; i < n; i++) {
		const struct answer *r = &res[order[i]];
		char pr[16], de[16];
		snprintf(pr, sizeof pr, r->coloc ? "-" : "%d", r->f.pr);
		snprintf(de, sizeof de, r->coloc ? "-" : "%d", r->f.de);
		if (r->ok && p->pd)
			printf("%-4d %-*s %7s %6s %5.0f %10.2f %16.0f %14.2f %12.0f\n", i + 1, w,
			       r->label, pr, de, r->f.gpus, r->f.cost, r->tokens_per_dollar,
			       r->f.goodput, r->good_per_dollar);
		else if (r->ok)
			printf("%-4d %-*s %10.6g %10.2f %16.0f %14.2f\n", i + 1, w, r->label, r->value,
			       r->f.cost, r->tokens_per_dollar, r->f.goodput);
		else
			printf("%-4s %-*s %*s\n", "-", w, r->label, p->pd ? 7 : 10, "none");
	}
	free(order);
}

/* DIR/plan.json: the question, the answers, the ranking (NULL: none) and
 * every probe. Takes answers, ranking and p->probes. */
static int write_plan(struct plan *p, const struct scenario *base, cJSON *answers,
		      cJSON *ranking)
{
	const char *out = p->out ? p->out : "out/plan";
	char path[4200], err[1024];
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "scenario", base->name);
	cJSON_AddStringToObject(j, "search", search_name(p));
	if (p->pd && p->total)
		cJSON_AddNumberToObject(j, "gpus_total", (double)p->total);
	if (p->pooled)
		cJSON_AddItemToObject(j, "pools", plan_pools_json(base));
	if (p->day) {
		cJSON_AddStringToObject(j, "nodes_path", p->node_path);
		cJSON_AddStringToObject(j, "rank_by", p->rank);
	}
	cJSON *slo = cJSON_AddObjectToObject(j, "slo");
	if (p->slo_ttft > 0)
		cJSON_AddNumberToObject(slo, "ttft_p99_s", p->slo_ttft);
	if (p->slo_tpot > 0)
		cJSON_AddNumberToObject(slo, "tpot_p99_s", p->slo_tpot);
	cJSON_AddNumberToObject(j, "seed", (double)base->seed);
	if (p->n_seeds > 0) {
		cJSON *sd = cJSON_AddArrayToObject(j, "seeds");
		for (int k = 0; k < p->n_seeds; k++)
			cJSON_AddItemToArray(sd, cJSON_CreateNumber((double)p->seeds[k]));
	}
	cJSON_AddNumberToObject(j, "runs", (double)p->runs);
	cJSON_AddStringToObject(j, "kvsim_version", kvsim_version());
	cJSON_AddItemToObject(j, "answers", answers);
	if (ranking)
		cJSON_AddItemToObject(j, "ranking", ranking);
	cJSON_AddItemToObject(j, "probes", p->probes);
	p->probes = NULL;
	snprintf(path, sizeof path, "%s/plan.json", out);
	int rc = CLI_OK;
	if (res_mkdirs(out, err, sizeof err) || res_write_json(path, j, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		rc = CLI_INTERNAL;
	} else if (!p->quiet) {
		printf("wrote %s\n", path);
	}
	cJSON_Delete(j);
	return rc;
}

/* A GPU's price, or -1 after naming its missing catalog key: plans that
 * rank fleets by cost (several GPUs, --search autoscale) cannot rank a
 * GPU of no price, and an unpriced GPU is never free. */
static int priced(const struct scenario *base, const char *name)
{
	const struct cat_gpu *g = name ? catalog_gpu(&base->cat, name) : NULL;
	if (!g || !isnan(g->price_per_hour))
		return 0;
	fprintf(stderr,
		"kvsim plan: catalog.gpus.%s.price_per_hour: missing; plan ranks the fleets by "
		"cost, so every GPU needs a price (USD per GPU-hour)\n",
		name);
	return -1;
}

static int check_prices(const struct plan *p, const struct scenario *base,
			const struct fleet *fl, int nf)
{
	if (nf < 2 && !p->day)
		return 0;
	for (int i = 0; i < base->n_pools; i++)
		if (priced(base, base->pools[i].cl.gpu->name))
			return -1;
	for (int f = 0; f < nf; f++) {
		if (priced(base, fl[f].all))
			return -1;
		for (int k = 0; k < MAX_POOL_AXES; k++)
			if (priced(base, fl[f].gpu[k]))
				return -1;
	}
	return 0;
}

/* The searches as tasks: task i is policy i / nf (with --policies) on
 * fleet i % nf. */
struct tasks {
	struct plan *p;
	const struct scenario *base;
	const struct fleet *fl;
	int nf;
	double start;
	struct cli_common *o;
	const char *const *pols; /* --policies; NULL: none */
};

/* Task i: the search, its answers (binary: they hold pointers into the
 * fleets and the policy list, the same in a worker), then its answers'
 * and probes' JSON and its run count, into out. */
static int search_task(void *ctx, int i, FILE *out)
{
	struct tasks *t = ctx;
	struct plan *p = t->p;
	if (t->pols)
		t->o->policy = p->policy = t->pols[i / t->nf];
	cJSON *j = cJSON_CreateObject(), *answers = cJSON_AddArrayToObject(j, "answers");
	long runs = p->runs;
	cJSON *probes = p->probes; /* plan's, which take_result fills */
	p->probes = cJSON_AddArrayToObject(j, "probes");
	struct answer res[2];
	int n = search_fleet(p, t->base, &t->fl[i % t->nf], t->start, res, answers);
	p->probes = probes;
	cJSON_AddNumberToObject(j, "runs", (double)(p->runs - runs));
	p->runs = runs;
	char *txt = n < 0 ? NULL : cJSON_PrintUnformatted(j);
	int rc = n < 0 ? CLI_USAGE
		 : txt && fwrite(&n, sizeof n, 1, out) == 1 &&
			   fwrite(res, sizeof *res, (size_t)n, out) == (size_t)n && fputs(txt, out) >= 0
		     ? CLI_OK
		     : CLI_INTERNAL;
	free(txt);
	cJSON_Delete(j);
	return rc;
}

/* Task result f into res (its count added to *n), answers and p->probes. */
static int take_result(struct plan *p, FILE *f, struct answer *res, int *n, cJSON *answers)
{
	int k;
	if (fread(&k, sizeof k, 1, f) != 1 || k < 1 || k > 2 ||
	    fread(res + *n, sizeof *res, (size_t)k, f) != (size_t)k)
		return -1;
	*n += k;
	char *txt = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&txt, &len);
	char buf[8192];
	size_t got;
	while (m && (got = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, got, m);
	if (!m || fclose(m))
		return -1;
	cJSON *j = cJSON_Parse(txt);
	free(txt);
	cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(j, "answers");
	cJSON *pr = cJSON_DetachItemFromObjectCaseSensitive(j, "probes");
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
	int bad = !cJSON_IsArray(a) || !cJSON_IsArray(pr) || !cJSON_IsNumber(runs);
	if (!bad) {
		p->runs += (long)runs->valuedouble;
		while (a->child)
			cJSON_AddItemToArray(answers, cJSON_DetachItemViaPointer(a, a->child));
		while (pr->child)
			cJSON_AddItemToArray(p->probes, cJSON_DetachItemViaPointer(pr, pr->child));
	}
	cJSON_Delete(a);
	cJSON_Delete(pr);
	cJSON_Delete(j);
	return bad ? -1 : 0;
}

/* Every search (policy x fleet) in up to jobs workers; their answers into
 * res (*n of them), answers and p->probes. A CLI_* code. */
static int run_searches(struct tasks *t, int n_pol, int jobs, struct answer *res, int *n,
			cJSON *answers)
{
	int nt = (n_pol ? n_pol : 1) * t->nf, rc;
	FILE **out = calloc((size_t)nt, sizeof *out);
	if (!out)
		return CLI_INTERNAL;
	rc = plan_run_tasks(nt, jobs, search_task, t, out);
	for (int i = 0; rc == CLI_OK && i < nt; i++)
		if (take_result(t->p, out[i], res, n, answers)) {
			fprintf(stderr, "kvsim: a search's result was lost\n");
			rc = CLI_INTERNAL;
		}
	for (int i = 0; i < nt; i++)
		if (out[i])
			fclose(out[i]);
	free(out);
	t->o->policy = t->p->policy = NULL;
	return rc;
}

/* The fleets' line over the ranking: what the columns rank by. */
static void print_rank_head(const struct plan *p, const struct scenario *base, int policies)
{
	const char *by = p->by_rate ? "output tokens per dollar"
			 : p->pd && p->total ? "requests within the SLOs per dollar"
					     : "cost per hour";
	if (policies) {
		printf("policy x GPU, ranked by %s:\n", by);
		return;
	}
	if (!p->pooled)
		return;
	printf("fleets: the GPU of ");
	for (int i = 0; i < base->n_pools; i++)
		printf("%s%s", i ? "/" : "", base->pools[i].name);
	printf(", ranked by %s\n", by);
}

/* Every search, the ranking, plan.json. */
static int plan(struct plan *p, const struct scenario *base, double start, struct cli_common *o,
		const char *const *pols, int n_pol, int jobs)
{
	struct fleet fl[MAX_GPUS];
	int nf = plan_fleets(p, base, fl);
	if (nf < 0 || check_prices(p, base, fl, nf))
		return CLI_USAGE;
	struct answer *res = calloc((size_t)(2 * (n_pol ? n_pol : 1) * nf), sizeof *res);
	cJSON *answers = cJSON_CreateArray(), *ranking = NULL;
	p->probes = cJSON_CreateArray();
	int any = 0, n = 0, rc = res ? CLI_OK : CLI_INTERNAL;
	if (p->day && rc == CLI_OK) {
		any = plan_day(p, base, &fl[0], answers);
		rc = any < 0 ? CLI_USAGE : CLI_OK;
	} else if (rc == CLI_OK) {
		struct tasks t = {p, base, fl, nf, start, o, n_pol ? pols : NULL};
		rc = run_searches(&t, n_pol, jobs, res, &n, answers);
	}
	for (int i = 0; i < n; i++)
		any |= res[i].ok;
	if (rc == CLI_OK && (n > 1 || n_pol)) {
		if (!p->quiet)
			print_rank_head(p, base, n_pol > 0);
		if (n_pol == 0 && !p->quiet)
			print_ranking(p, res, n);
		ranking = plan_ranking(p, res, n, n_pol && !p->quiet);
	}
	free(res);
	if (rc != CLI_OK) {
		cJSON_Delete(answers);
		return rc;
	}
	rc = write_plan(p, base, answers, ranking);
	return rc == CLI_OK && !any ? CLI_NOT_MET : rc;
}

/* The plan's loader: the scenario as the options give it. */
static cJSON *load_tree(void *o)
{
	return cli_load_tree_with_policy(o);
}

static int load_scenario(void *o, const cJSON *root, struct scenario *s)
{
	return cli_load_scenario(o, root, s);
}

/* --policies into names (pointing into buf), each policy's scenario
 * loaded once to check it; their count, or -1 after reporting. */
static int policy_list(const struct cli_cmd *cmd, struct cli_common *o, char *buf, size_t len,
		       const char **names, int cap)
{
	char all[1024];
	if (o->policy) {
		cli_misuse(cmd, "give --policy P or --policies a,b,c, not both");
		return -1;
	}
	if (!strcmp(o->policies, "all"))
		pol_names(all, sizeof all); /* "a, b, c": cli_list drops the blanks */
	int n = cli_list(cmd, "--policies", "policy names", strcmp(o->policies, "all") ? o->policies
										     : all,
			 buf, len, names, cap);
	for (int i = 0; i < n; i++) {
		if (!pol_find(names[i])) {
			char known[512];
			pol_names(known, sizeof known);
			fprintf(stderr, "kvsim plan: --policies: unknown policy \"%s\" (known: %s)\n",
				names[i], known);
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (!strcmp(names[j], names[i])) {
				fprintf(stderr, "kvsim plan: --policies: \"%s\" given twice\n", names[i]);
				return -1;
			}
		struct scenario s;
		o->policy = names[i];
		int bad = cli_load_from_opts(o, &s);
		o->policy = NULL;
		if (bad)
			return -1;
		cfg_scenario_free(&s);
	}
	return n;
}

static int cmd_plan(const struct cli_ctx *cx, int argc, char **argv)
{
	struct plan p;
	struct cli_common o;
	int jobs = 1, n_pol = 0;
	memset(&p, 0, sizeof p);
	memset(&o, 0, sizeof o);
	int end = parse(cx, argc, argv, &p, &o, &jobs);
	if (end != CLI_END)
		return cli_end_code(end);
	p.load = (struct plan_loader){load_tree, load_scenario, &o};
	p.quiet = o.quiet;
	p.out = o.out;
	if (check_search(cx->cmd, &p))
		return CLI_USAGE;
	if (o.policies && p.day) {
		fprintf(stderr, "kvsim plan: --policies goes with --search nodes, rate or pd_ratio\n");
		return CLI_USAGE;
	}
	char pol_buf[1024];
	const char *pols[64];
	if (o.policies && (n_pol = policy_list(cx->cmd, &o, pol_buf, sizeof pol_buf, pols, 64)) < 0)
		return CLI_USAGE;
	struct scenario base; /* the scenario as given: its rate, its GPUs and pools */
	if (cli_load_from_opts(&o, &base))
		return CLI_USAGE;
	int rc = CLI_USAGE;
	if (!plan_check_pools(&p, &base)) {
		double start = p.by_rate ? rate_start(&p, &base) : 0;
		rc = start < 0 ? CLI_USAGE : plan(&p, &base, start, &o, pols, n_pol, jobs);
	}
	cJSON_Delete(p.probes);
	free(p.cache);
	cfg_scenario_free(&base);
	return rc;
}

const struct cli_cmd cli_plan_cmd = {
    .name = "plan",
    .args = "[SCENARIO.json]",
    .summary = "smallest cluster, highest rate, P:D split or autoscaler for SLOs",
    .run = cmd_plan,
    .opts = plan_opts,
    .about =
	"Finds the smallest cluster.nodes that meets every SLO at the scenario's load\n"
	"(--search nodes; --min 1, --max 1024; with cluster.pools, the nodes of the pool\n"
	"--pool names), or the highest arrival rate the cluster sustains (--search rate;\n"
	"the workload's rate key, as workload.sessions_per_s for chat or\n"
	"workload.rate_per_s for open, rag and agent, or --rate-key), by an exponential\n"
	"then a binary search, printing each probe (a full run, same seed). A probe\n"
	"passes when TTFT p99 and TPOT p99 are within the SLOs and at most 0.1% of\n"
	"requests were shed or failed. Goodput (DistServe) is the rate of requests whose\n"
	"own TTFT and TPOT are within the SLOs (probes run with them as the scenario's\n"
	"slo).\n"
	"\n"
	"Every answer names its binding SLO: at the failing probe next to it (the\n"
	"largest count, the smallest rate, the failing split nearest the best), the part\n"
	"of the test furthest past its limit (value / limit: TTFT p99, TPOT p99, the\n"
	"share shed or failed against 0.1%; a run with no completed request first, not\n"
	"steady only when nothing else failed), with its value, limit and probe; or\n"
	"\"no SLO bound within the range\" when no probe failed.\n"
	"\n"
	"--policies a,b,c (or all) runs the search once per policy, times each GPU\n"
	"fleet, on the same requests (the scenario's seed), and ranks policy x GPU as\n"
	"--gpus ranks fleets, with cost per million output tokens and the binding SLO;\n"
	"-j N runs these searches in N worker processes with the same output.\n"
	"\n"
	"--search pd_ratio, on a cluster of one prefill and one decode pool: with\n"
	"--gpus-total N, runs every split of N GPUs (p prefill replicas, and as many\n"
	"decode replicas as the GPUs left hold) and picks the one with the highest\n"
	"goodput among those that pass (ties: fewer GPUs, then more room under the SLOs);\n"
	"above 64 splits, a coarse grid of 32 then finer steps around the best. Without\n"
	"--gpus-total, the smallest N (--min, --max) with a passing split, by the same\n"
	"exponential then binary search, and its best split. Progress goes to stderr,\n"
	"the table of splits to stdout.\n"
	"Beside the splits, the colocated layout of the same GPUs (no cluster.pools:\n"
	"cluster.gpu and cluster.tp those of both pools, cluster.nodes = N / tp) is run\n"
	"and ranked with them: on --gpus-total's GPUs by goodput, else by its smallest\n"
	"count's cost, with a line saying whether P/D pays and by how much.\n"
	"\n"
	"--gpus repeats the search for each GPU type (cluster.gpu, or every pool's) and\n"
	"--pool-gpus POOL=A,B for each GPU of one pool (repeat it for more pools: every\n"
	"combination). The fleets are ranked by cost per hour (the sum over pools of\n"
	"replicas x tp x catalog price_per_hour; override with --catalog); a rate by\n"
	"output tokens per dollar; a split of --gpus-total by requests within the SLOs\n"
	"per dollar.\n"
	"\n"
	"--search autoscale compares static provisioning with autoscaling over the\n"
	"scenario's whole run (its duration and rate schedule, or its trace): first the\n"
	"smallest static cluster that meets the SLOs (the node search, with the\n"
	"autoscaler of the pool searched set to {\"kind\":\"none\"}), then one run per\n"
	"--autoscaler JSON (it replaces cluster.autoscaler, or with pools that of the\n"
	"--pool searched; the run starts from the scenario's nodes clamped to its\n"
	"[min_nodes, max_nodes]). Without --autoscaler: the scenario's own autoscaler,\n"
	"else an HPA on queue_per_node, target 4, min_nodes 1, max_nodes twice the\n"
	"static answer. A table lists every fleet with SLO attainment, goodput, TTFT\n"
	"p99, GPU-hours, cost, kWh, J per output token and nodes held (mean, most),\n"
	"those that meet the SLOs (the probes' test) ranked by --rank (cost, energy or\n"
	"gpu_hours; default cost), the others after them, marked.\n"
	"Writes DIR/plan.json (default DIR: out/plan).\n"
	"Exit 0 when a value meets the SLOs, 1 when none in range does, 2 bad input.\n",
    .pos_complete = "@file",
};
