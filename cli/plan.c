/* plan: `kvsim plan`: the smallest cluster, the highest rate, or the best prefill:decode split, that meets the SLOs. */
#include <math.h>
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

enum {
	O_SLO = CLI_OPT_OWN,
	O_SEARCH,
	O_MIN,
	O_MAX,
	O_GPUS,
	O_RATE_KEY,
	O_GPUS_TOTAL,
	O_POOL,
	O_POOL_GPUS
};

static const struct cli_opt plan_opts[] = {
    {O_SLO, "slo", 0, "ttft_p99=S|tpot_p99=S", "a service-level objective, in seconds",
     "ttft_p99= tpot_p99=", CLI_REQUIRED | CLI_REPEAT},
    {O_SEARCH, "search", 0, "nodes|rate|pd_ratio", "what to search", "nodes rate pd_ratio",
     CLI_REQUIRED},
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
    CLI_ROW_POLICY("route with policy P"),
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_CATALOG,
    CLI_ROW_OUT("output directory (default: out/plan)"),
    CLI_ROW_QUIET("print nothing but errors"),
    {0},
};
CLI_TABLE_FITS(plan_opts);

#define MAX_GPUS 32       /* GPU types in a list, and fleets in all */
#define MAX_POOL_AXES 8   /* --pool-gpus options */
#define MAX_RATE_KEY 200  /* the longest --rate-key: probe's PATH=VALUE must hold it */
/* Splits of one GPU count all run when there are at most this many; more
 * are searched coarse to fine (pd_scan). Our choice: a minute or so of
 * small runs, and every split of a 64-GPU budget of tp-1 replicas. */
#define FULL_SCAN 64
#define COARSE_POINTS 32 /* the coarse grid of a larger scan */

/* --pool-gpus POOL=A,B,...: the GPU types tried for one pool. */
struct pool_axis {
	const char *arg; /* as given */
	int pool;        /* its index in cluster.pools */
	char buf[1024];
	const char *gpus[MAX_GPUS];
	int n;
};

/* One fleet: the GPU of every pool (NULL: the scenario's own). */
struct fleet {
	char label[256];
	const char *all;                /* --gpus: every pool's (the cluster's without pools) */
	const char *gpu[MAX_POOL_AXES]; /* axis k's GPU for its pool */
};

/* The figures of one run. */
struct fig {
	int pr, de; /* pd_ratio: the split */
	double gpus, cost, ttft, tpot, lost, attain, goodput, tokens_per_s;
	int pass;
};

struct plan {
	struct cli_common o;
	double slo_ttft, slo_tpot; /* <= 0: not constrained */
	const char *search, *min_arg, *max_arg, *total_arg, *pool_name;
	char gpu_buf[1024]; /* --gpus, split */
	const char *gpus[MAX_GPUS];
	int n_gpus; /* 0: the scenario's own GPU */
	struct pool_axis ax[MAX_POOL_AXES];
	int n_ax;
	int by_rate, pd, pooled;
	double min, max;
	long total;       /* --gpus-total; 0: search it */
	int pool;         /* --search nodes: the pool searched, -1 for cluster.nodes */
	int ip, id;       /* pd_ratio: the prefill and the decode pool */
	int tp_p, tp_d;   /* and their tp */
	char node_path[64];
	const char *rate_key; /* the path probes set */
	char rate_path[128];
	struct fig *cache; /* pd_ratio: the splits run for the fleet searched */
	int n_cache, cap_cache;
	long runs;
	cJSON *probes;
};

/* One fleet's answer. */
struct answer {
	const char *label;
	double value; /* nodes, rate or (pd_ratio) GPUs */
	struct fig f;
	double tokens_per_dollar, good_per_dollar;
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

/* --pool-gpus POOL=A,B,...: the list split now, the pool named later
 * (pool_axes, once the scenario is read). */
static int parse_pool_gpus(const struct cli_cmd *cmd, struct plan *p, const char *v)
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
		case O_POOL_GPUS:
			if (parse_pool_gpus(cx->cmd, p, v))
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

/* --search, --slo, --min, --max, --gpus-total and --pool make sense
 * together; 0, or -1 after reporting. */
static int check_search(const struct cli_cmd *cmd, struct plan *p)
{
	if (!p->search || (strcmp(p->search, "nodes") && strcmp(p->search, "rate") &&
			   strcmp(p->search, "pd_ratio"))) {
		cli_misuse(cmd, "give --search nodes or --search rate (or --search pd_ratio, for a "
				"cluster of a prefill and a decode pool)");
		return -1;
	}
	if (p->slo_ttft <= 0 && p->slo_tpot <= 0) {
		fprintf(stderr, "kvsim plan: give at least one --slo ttft_p99=S or tpot_p99=S\n");
		return -1;
	}
	p->by_rate = !strcmp(p->search, "rate");
	p->pd = !strcmp(p->search, "pd_ratio");
	if (p->total_arg && !p->pd) {
		fprintf(stderr, "kvsim plan: --gpus-total goes with --search pd_ratio\n");
		return -1;
	}
	if (p->pool_name && strcmp(p->search, "nodes")) {
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

/* Whether the scenario as the options give it has cluster.pools; -1 after
 * reporting. */
static int has_pools(const struct plan *p)
{
	cJSON *root = cli_load_tree_with_policy(&p->o);
	if (!root)
		return -1;
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "cluster");
	int has = cJSON_GetObjectItemCaseSensitive(cl, "pools") != NULL;
	cJSON_Delete(root);
	return has;
}

/* The index of the pool named name, or -1 after reporting (opt: the
 * option that named it). */
static int pool_index(const struct scenario *base, const char *opt, const char *name)
{
	for (int i = 0; i < base->n_pools; i++)
		if (!strcmp(base->pools[i].name, name))
			return i;
	char known[512] = "";
	for (int i = 0; i < base->n_pools; i++) {
		size_t l = strlen(known);
		snprintf(known + l, sizeof known - l, "%s%s", i ? ", " : "", base->pools[i].name);
	}
	fprintf(stderr, "kvsim plan: %s: no pool \"%s\" in cluster.pools (its pools: %s)\n", opt,
		name, known);
	return -1;
}

static const char *const role_names[] = {"mixed", "prefill", "decode"};

/* What the search needs of the scenario's pools: --pool, --pool-gpus and
 * pd_ratio's two pools checked and found. 0, or -1 after reporting. */
static int check_pools(struct plan *p, const struct scenario *base)
{
	int pooled = has_pools(p);
	if (pooled < 0)
		return -1;
	p->pooled = pooled;
	p->pool = -1;
	snprintf(p->node_path, sizeof p->node_path, "cluster.nodes");
	if (!pooled && (p->pool_name || p->n_ax || p->pd)) {
		fprintf(stderr, "kvsim plan: %s: the scenario has no cluster.pools (one mixed pool of "
				"cluster.nodes nodes)%s\n",
			p->pd ? "--search pd_ratio" : p->pool_name ? "--pool" : "--pool-gpus",
			p->pd ? "; pd_ratio splits GPUs between a prefill and a decode pool"
			      : "; search and rank it with --gpus");
		return -1;
	}
	if (pooled && !p->pd && !p->by_rate) {
		if (!p->pool_name && base->n_pools > 1) {
			fprintf(stderr, "kvsim plan: --search nodes on a cluster of %d pools: give --pool "
					"NAME, the pool whose nodes to search (the others keep theirs), "
					"or --search pd_ratio\n", base->n_pools);
			return -1;
		}
		p->pool = p->pool_name ? pool_index(base, "--pool", p->pool_name) : 0;
		if (p->pool < 0)
			return -1;
		snprintf(p->node_path, sizeof p->node_path, "cluster.pools[%d].nodes", p->pool);
	}
	for (int k = 0; k < p->n_ax; k++) {
		struct pool_axis *a = &p->ax[k];
		char name[64];
		size_t len = (size_t)(strchr(a->arg, '=') - a->arg);
		snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), a->arg);
		if ((a->pool = pool_index(base, "--pool-gpus", name)) < 0)
			return -1;
		for (int j = 0; j < k; j++)
			if (p->ax[j].pool == a->pool) {
				fprintf(stderr, "kvsim plan: --pool-gpus: pool \"%s\" given twice; list its "
						"GPU types in one --pool-gpus\n", name);
				return -1;
			}
	}
	if (!p->pd)
		return 0;
	int n_p = 0, n_d = 0;
	for (int i = 0; i < base->n_pools; i++) {
		if (base->pools[i].role == POOL_PREFILL)
			p->ip = i, n_p++;
		if (base->pools[i].role == POOL_DECODE)
			p->id = i, n_d++;
	}
	if (n_p != 1 || n_d != 1 || base->n_pools != 2) {
		char have[512] = "";
		for (int i = 0; i < base->n_pools; i++) {
			size_t l = strlen(have);
			snprintf(have + l, sizeof have - l, "%s%s (%s)", i ? ", " : "",
				 base->pools[i].name, role_names[base->pools[i].role]);
		}
		fprintf(stderr, "kvsim plan: --search pd_ratio: expected cluster.pools to hold exactly "
				"one prefill pool and one decode pool; the scenario's: %s\n", have);
		return -1;
	}
	p->tp_p = base->pools[p->ip].cl.tp;
	p->tp_d = base->pools[p->id].cl.tp;
	long least = p->tp_p + p->tp_d;
	if (p->total_arg && p->total < least) {
		fprintf(stderr, "kvsim plan: --gpus-total %ld: fewer than the smallest split, 1 prefill "
				"replica (tp %d) + 1 decode replica (tp %d) = %ld GPUs\n",
			p->total, p->tp_p, p->tp_d, least);
		return -1;
	}
	if (!p->total_arg) {
		if (!p->min_arg || p->min < least)
			p->min = (double)least;
		if (p->max < p->min) {
			fprintf(stderr, "kvsim plan: --max %g: fewer than the smallest split, 1 prefill "
					"replica (tp %d) + 1 decode replica (tp %d) = %ld GPUs\n",
				p->max, p->tp_p, p->tp_d, least);
			return -1;
		}
	}
	return 0;
}

/* A GPU name checked against the catalog; 0, or -1 after reporting. */
static int known_gpu(const struct scenario *base, const char *opt, const char *name)
{
	if (catalog_gpu(&base->cat, name))
		return 0;
	char known[512];
	catalog_names(&base->cat, "gpus", known, sizeof known);
	fprintf(stderr, "kvsim plan: %s: unknown GPU \"%s\" (known: %s)\n", opt, name, known);
	return -1;
}

/* The GPU of pool i in fleet fl. */
static const char *fleet_gpu(const struct plan *p, const struct scenario *base,
			     const struct fleet *fl, int i)
{
	for (int k = 0; k < p->n_ax; k++)
		if (p->ax[k].pool == i)
			return fl->gpu[k];
	return fl->all ? fl->all : base->pools[i].cl.gpu->name;
}

/* The fleets to search: every --gpus type (default: the scenario's) times
 * every combination of the --pool-gpus lists, the last varying fastest.
 * Their count, or -1 after reporting. */
static int fleets(const struct plan *p, const struct scenario *base, struct fleet *fl)
{
	for (int g = 0; g < p->n_gpus; g++)
		if (known_gpu(base, "--gpus", p->gpus[g]))
			return -1;
	long n = p->n_gpus ? p->n_gpus : 1;
	for (int k = 0; k < p->n_ax; k++) {
		for (int g = 0; g < p->ax[k].n; g++)
			if (known_gpu(base, "--pool-gpus", p->ax[k].gpus[g]))
				return -1;
		n *= p->ax[k].n;
		if (n > MAX_GPUS) {
			fprintf(stderr, "kvsim plan: --gpus and --pool-gpus make more than %d fleets; "
					"search fewer at a time\n", MAX_GPUS);
			return -1;
		}
	}
	for (long f = 0; f < n; f++) {
		struct fleet *x = &fl[f];
		memset(x, 0, sizeof *x);
		long rest = f;
		for (int k = p->n_ax - 1; k >= 0; k--) {
			x->gpu[k] = p->ax[k].gpus[rest % p->ax[k].n];
			rest /= p->ax[k].n;
		}
		/* Without pools the scenario's own GPU is named, as --gpus would. */
		x->all = p->n_gpus ? p->gpus[rest] : p->pooled ? NULL : base->cluster.gpu->name;
		if (!p->pooled) {
			snprintf(x->label, sizeof x->label, "%s", x->all);
			continue;
		}
		for (int i = 0; i < base->n_pools; i++) {
			size_t l = strlen(x->label);
			snprintf(x->label + l, sizeof x->label - l, "%s%s", i ? "/" : "",
				 fleet_gpu(p, base, x, i));
		}
	}
	return (int)n;
}

/* Sets key of object o to a string. 0, or -1 when out of memory. */
static int put_string(cJSON *o, const char *key, const char *s)
{
	cJSON *v = cJSON_CreateString(s);
	if (!v)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(o, key))
		cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
	else
		cJSON_AddItemToObject(o, key, v);
	return 0;
}

/* Points the tree at fleet fl's GPUs: cluster.gpu without pools; with
 * pools each pool's own gpu, and cluster.gpu removed once every pool has
 * its own (the scenario rejects a default no pool reads). 0, or -1 with
 * err. */
static int apply_fleet(const struct plan *p, cJSON *root, const struct fleet *fl, char *err,
		       size_t errlen)
{
	cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "cluster");
	cJSON *pools = cJSON_GetObjectItemCaseSensitive(cl, "pools");
	if (!p->pooled) {
		if (fl->all && (!cJSON_IsObject(cl) || put_string(cl, "gpu", fl->all)))
			goto bad;
		return 0;
	}
	int i = 0, all_own = 1;
	for (cJSON *pl = cJSON_IsArray(pools) ? pools->child : NULL; pl; pl = pl->next, i++) {
		const char *g = fl->all;
		for (int k = 0; k < p->n_ax; k++)
			if (p->ax[k].pool == i)
				g = fl->gpu[k];
		if (g && (!cJSON_IsObject(pl) || put_string(pl, "gpu", g)))
			goto bad;
		all_own &= cJSON_GetObjectItemCaseSensitive(pl, "gpu") != NULL;
	}
	if (all_own && (fl->all || p->n_ax))
		cJSON_DeleteItemFromObjectCaseSensitive(cl, "gpu");
	return 0;
bad:
	snprintf(err, errlen, "cannot set the fleet's GPUs (%s) in cluster", fl->label);
	return -1;
}

/* Runs the scenario as fleet fl with the assignments sets, the SLOs as its
 * slo (so that goodput counts the requests within them), into *f; its
 * record is j's fields (taken) with the figures added. Returns 1 pass, 0
 * fail, -1 error (reported). */
static int probe(struct plan *p, const struct fleet *fl, const char *const *sets, int n_sets,
		 cJSON *j, struct fig *f)
{
	cJSON *root = cli_load_tree_with_policy(&p->o);
	if (!root) {
		cJSON_Delete(j);
		return -1;
	}
	char set[64], err[1024];
	int bad = 0;
	if (p->slo_ttft > 0) {
		snprintf(set, sizeof set, "slo.ttft_p99_s=%.10g", p->slo_ttft);
		bad |= cfg_apply_set(root, set, err, sizeof err);
	}
	if (p->slo_tpot > 0 && !bad) {
		snprintf(set, sizeof set, "slo.tpot_p99_s=%.10g", p->slo_tpot);
		bad |= cfg_apply_set(root, set, err, sizeof err);
	}
	bad = bad || apply_fleet(p, root, fl, err, sizeof err);
	for (int k = 0; k < n_sets && !bad; k++)
		bad = cfg_apply_set(root, sets[k], err, sizeof err);
	if (bad) {
		fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(root);
		cJSON_Delete(j);
		return -1;
	}
	struct scenario sc;
	bad = cli_load_scenario(&p->o, root, &sc);
	cJSON_Delete(root);
	if (bad) {
		cJSON_Delete(j);
		return -1;
	}
	f->gpus = f->cost = 0;
	for (int i = 0; i < sc.n_pools; i++) {
		const struct cluster_cfg *c = &sc.pools[i].cl;
		f->gpus += (double)c->nodes * c->tp;
		f->cost += (double)c->nodes * c->tp * c->gpu->price_per_hour;
	}
	struct sim_opts so = {0};
	struct met_summary m;
	int rc = sim_run(&sc, &so, &m, err, sizeof err);
	cfg_scenario_free(&sc);
	p->runs++;
	if (rc) {
		if (rc <= CLI_INTERNAL) /* else interrupted: main says so */
			fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(j);
		return -1;
	}
	uint64_t lost = m.shed + m.failed;
	f->pass = m.completed > 0 && (p->slo_ttft <= 0 || m.ttft.p99 <= p->slo_ttft) &&
		  (p->slo_tpot <= 0 || m.tpot.n == 0 || m.tpot.p99 <= p->slo_tpot) &&
		  (double)lost <= 0.001 * (double)m.arrived;
	f->ttft = m.ttft.p99;
	f->tpot = m.tpot.p99;
	f->lost = (double)lost;
	f->attain = m.slo_attainment;
	f->goodput = m.goodput_rps;
	f->tokens_per_s = m.output_tokens_per_s;
	met_summary_free(&m);
	cJSON_AddNumberToObject(j, "gpus", f->gpus);
	cJSON_AddNumberToObject(j, "cost_per_hour", f->cost);
	cJSON_AddNumberToObject(j, "ttft_p99_s", f->ttft);
	cJSON_AddNumberToObject(j, "tpot_p99_s", f->tpot);
	cJSON_AddNumberToObject(j, "shed_or_failed", f->lost);
	cJSON_AddNumberToObject(j, "slo_attainment", f->attain);
	cJSON_AddNumberToObject(j, "goodput_rps", f->goodput);
	cJSON_AddNumberToObject(j, "output_tokens_per_s", f->tokens_per_s);
	cJSON_AddBoolToObject(j, "pass", f->pass);
	cJSON_AddItemToArray(p->probes, j);
	return f->pass;
}

/* One run of the nodes or rate search: path=value; its line. */
static int probe_value(struct plan *p, const struct fleet *fl, const char *path, double value,
		       struct fig *f)
{
	char set[MAX_RATE_KEY + 32];
	snprintf(set, sizeof set, "%s=%.10g", path, value); /* parse_rate_key bounds path */
	const char *sets[] = {set};
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "gpu", fl->label);
	cJSON_AddStringToObject(j, "path", path);
	cJSON_AddNumberToObject(j, "value", value);
	int r = probe(p, fl, sets, 1, j, f);
	if (r >= 0 && !p->o.quiet)
		printf("  probe %-9s %s=%-10.6g TTFT p99 %8.3f s  TPOT p99 %7.4f s  shed+failed %6.0f  "
		       "goodput %8.2f req/s  %s\n",
		       fl->label, path, value, f->ttft, f->tpot, f->lost, f->goodput,
		       f->pass ? "PASS" : "fail");
	return r;
}

/* Smallest passing node count in [min, max]: doubling, then bisection.
 * Returns it, 0 if none passes, -1 on error; *best gets its figures. */
static long search_nodes(struct plan *p, const struct fleet *fl, struct fig *best)
{
	long lo = (long)p->min - 1, n = (long)p->min, hi = -1;
	struct fig f;
	while (n <= (long)p->max) {
		int r = probe_value(p, fl, p->node_path, (double)n, &f);
		if (r < 0)
			return -1;
		if (r) {
			hi = n;
			*best = f;
			break;
		}
		lo = n;
		if (n == (long)p->max)
			break;
		n = n * 2 > (long)p->max ? (long)p->max : n * 2;
	}
	if (hi < 0)
		return 0;
	while (hi - lo > 1) {
		long mid = lo + (hi - lo) / 2;
		int r = probe_value(p, fl, p->node_path, (double)mid, &f);
		if (r < 0)
			return -1;
		if (r)
			*best = f;
		*(r ? &hi : &lo) = mid;
	}
	return hi;
}

/* Highest passing rate: from the scenario's rate, doubling or halving to a
 * bracket, then bisection to 1%. Returns it, 0 if none, -1 on error. */
static double search_rate(struct plan *p, const struct fleet *fl, double start, struct fig *best)
{
	struct fig f;
	double pass_at = -1, fail_at = -1, r = start;
	int got = probe_value(p, fl, p->rate_key, r, &f);
	if (got < 0)
		return -1;
	if (got) {
		pass_at = r;
		*best = f;
		while (r * 2 <= p->max) {
			r *= 2;
			got = probe_value(p, fl, p->rate_key, r, &f);
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
		while (r / 2 >= p->min) {
			r /= 2;
			got = probe_value(p, fl, p->rate_key, r, &f);
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
		got = probe_value(p, fl, p->rate_key, mid, &f);
		if (got < 0)
			return -1;
		if (got)
			*best = f;
		*(got ? &pass_at : &fail_at) = mid;
	}
	return pass_at;
}

/* --- pd_ratio ----------------------------------------------------------- */

/* The splits of n GPUs: for each prefill count pr from 1, as many decode
 * replicas as the GPUs left hold (so a split's GPUs are n, or fewer when
 * the decode tp does not divide what is left). Their count. */
static int n_splits(const struct plan *p, long n)
{
	long k = (n - p->tp_d) / p->tp_p;
	return k > 0 ? (int)k : 0;
}

static void split_at(const struct plan *p, long n, int k, int *pr, int *de)
{
	*pr = k + 1;
	*de = (int)((n - (long)*pr * p->tp_p) / p->tp_d);
}

/* How far a split's worse p99 is from its SLO: the larger of p99 / SLO. */
static double slo_ratio(const struct plan *p, const struct fig *f)
{
	double r = 0;
	if (p->slo_ttft > 0)
		r = f->ttft / p->slo_ttft;
	if (p->slo_tpot > 0 && f->tpot / p->slo_tpot > r)
		r = f->tpot / p->slo_tpot;
	return r;
}

/* 1 when split a is better than b: one that meets the SLOs over one that
 * does not; then the higher goodput; then the fewer GPUs; then the more
 * room under the SLOs. */
static int split_better(const struct plan *p, const struct fig *a, const struct fig *b)
{
	if (a->pass != b->pass)
		return a->pass;
	if (a->goodput != b->goodput)
		return a->goodput > b->goodput;
	if (a->gpus != b->gpus)
		return a->gpus < b->gpus;
	return slo_ratio(p, a) < slo_ratio(p, b);
}

static void print_split_head(FILE *f)
{
	fprintf(f, "  %7s %7s %5s %11s %11s %12s %11s %14s\n", "prefill", "decode", "GPUs",
		"TTFT p99 s", "TPOT p99 s", "shed+failed", "SLO attain", "goodput req/s");
}

static void print_split(FILE *out, const struct fig *f, const char *mark)
{
	fprintf(out, "  %7d %7d %5.0f %11.3f %11.4f %12.0f %11.4f %14.2f  %s%s\n", f->pr, f->de,
		f->gpus, f->ttft, f->tpot, f->lost, f->attain, f->goodput, f->pass ? "PASS" : "fail",
		mark);
}

/* Split pr:de of fleet fl, run once per fleet (the cache keeps it for
 * every GPU count it belongs to). 1 pass, 0 fail, -1 error. */
static int pd_run(struct plan *p, const struct fleet *fl, int pr, int de, struct fig *out)
{
	for (int c = 0; c < p->n_cache; c++)
		if (p->cache[c].pr == pr && p->cache[c].de == de) {
			*out = p->cache[c];
			return out->pass;
		}
	if (p->n_cache == p->cap_cache) {
		int cap = p->cap_cache ? 2 * p->cap_cache : 64;
		struct fig *nc = realloc(p->cache, (size_t)cap * sizeof *nc);
		if (!nc) {
			fprintf(stderr, "kvsim: out of memory\n");
			return -1;
		}
		p->cache = nc;
		p->cap_cache = cap;
	}
	char s0[96], s1[96];
	snprintf(s0, sizeof s0, "cluster.pools[%d].nodes=%d", p->ip, pr);
	snprintf(s1, sizeof s1, "cluster.pools[%d].nodes=%d", p->id, de);
	const char *sets[] = {s0, s1};
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "gpu", fl->label);
	cJSON_AddNumberToObject(j, "prefill", pr);
	cJSON_AddNumberToObject(j, "decode", de);
	struct fig f;
	memset(&f, 0, sizeof f);
	int r = probe(p, fl, sets, 2, j, &f);
	if (r < 0)
		return -1;
	f.pr = pr;
	f.de = de;
	p->cache[p->n_cache++] = f;
	*out = f;
	if (!p->o.quiet) /* progress: the table comes on stdout once the scan is done */
		fprintf(stderr, "  run %-4ld %s: %d prefill + %d decode (%.0f GPUs): TTFT p99 %.3f s, "
				"TPOT p99 %.4f s, goodput %.2f req/s  %s\n",
			p->runs, fl->label, pr, de, f.gpus, f.ttft, f.tpot, f.goodput,
			f.pass ? "PASS" : "fail");
	return r;
}

/* Every split of n GPUs, or (more than FULL_SCAN of them) a coarse grid
 * of COARSE_POINTS, then every step around the best so far, narrowing
 * four-fold each round to the single splits next to it. *best gets the
 * best split run (split_better); 1 when it meets the SLOs, 0 when none
 * run does, -1 on error. */
static int pd_scan(struct plan *p, const struct fleet *fl, long n, struct fig *best)
{
	int ns = n_splits(p, n), lo = 0, hi = ns - 1, have = 0;
	int step = ns <= FULL_SCAN ? 1 : (ns + COARSE_POINTS - 1) / COARSE_POINTS;
	struct fig f;
	for (;;) {
		int at = -1;
		for (int k = lo; k <= hi; k = k + step > hi && k < hi ? hi : k + step) {
			int pr, de;
			split_at(p, n, k, &pr, &de);
			if (pd_run(p, fl, pr, de, &f) < 0)
				return -1;
			if (!have || split_better(p, &f, best)) {
				*best = f;
				at = k;
				have = 1;
			}
		}
		if (step == 1)
			break;
		if (at >= 0) { /* else the best stays where an earlier round found it */
			lo = at - step > 0 ? at - step : 0;
			hi = at + step < ns - 1 ? at + step : ns - 1;
		}
		step = (step + 3) / 4;
	}
	return have && best->pass;
}

/* Whether some split of n GPUs meets the SLOs: the splits from the middle
 * outward, stopping at the first that does. 1, 0, or -1 on error. */
static int pd_any(struct plan *p, const struct fleet *fl, long n)
{
	int ns = n_splits(p, n), mid = (ns - 1) / 2;
	struct fig f;
	for (int d = 0; d < ns; d++) {
		/* mid, mid + 1, mid - 1, ...: mid has as many or more above it */
		int k = d % 2 ? mid + (d + 1) / 2 : mid - d / 2;
		int pr, de;
		split_at(p, n, k, &pr, &de);
		int r = pd_run(p, fl, pr, de, &f);
		if (r)
			return r;
	}
	return 0;
}

static int by_prefill(const void *a, const void *b)
{
	return ((const struct fig *)a)->pr - ((const struct fig *)b)->pr;
}

/* The table of every split of n GPUs run, in prefill order, the best
 * marked, on stdout; and the same as JSON into splits. The cache is
 * reordered (its entries are what the table lists first). */
static void pd_table(struct plan *p, long n, const struct fig *best, cJSON *splits)
{
	if (!p->o.quiet)
		print_split_head(stdout);
	int m = 0, ns = n_splits(p, n);
	for (int c = 0; c < p->n_cache; c++) { /* n's splits to the front */
		int pr = p->cache[c].pr, de;
		if (pr > ns)
			continue;
		split_at(p, n, pr - 1, &pr, &de);
		if (p->cache[c].de == de) {
			struct fig t = p->cache[m];
			p->cache[m++] = p->cache[c];
			p->cache[c] = t;
		}
	}
	qsort(p->cache, (size_t)m, sizeof *p->cache, by_prefill);
	for (int c = 0; c < m; c++) {
		const struct fig *f = &p->cache[c];
		int is_best = best && f->pr == best->pr && f->de == best->de;
		if (!p->o.quiet)
			print_split(stdout, f, is_best ? "  <- best" : "");
		cJSON *s = cJSON_CreateObject();
		cJSON_AddNumberToObject(s, "prefill", f->pr);
		cJSON_AddNumberToObject(s, "decode", f->de);
		cJSON_AddNumberToObject(s, "gpus", f->gpus);
		cJSON_AddNumberToObject(s, "ttft_p99_s", f->ttft);
		cJSON_AddNumberToObject(s, "tpot_p99_s", f->tpot);
		cJSON_AddNumberToObject(s, "shed_or_failed", f->lost);
		cJSON_AddNumberToObject(s, "slo_attainment", f->attain);
		cJSON_AddNumberToObject(s, "goodput_rps", f->goodput);
		cJSON_AddBoolToObject(s, "pass", f->pass);
		cJSON_AddItemToArray(splits, s);
	}
}

/* pd_ratio for one fleet: the best split of --gpus-total, or the smallest
 * GPU count with a split that meets the SLOs (doubling, then bisection,
 * as the node search) and its best split. Returns the GPU count, 0 when
 * none meets them, -1 on error; *best gets the split, and a the JSON of
 * the splits and the counts tried. */
static long search_pd(struct plan *p, const struct fleet *fl, struct fig *best, cJSON *a)
{
	p->n_cache = 0;
	long n = p->total;
	cJSON *tried = NULL;
	if (!p->total) {
		tried = cJSON_AddArrayToObject(a, "gpus_tried");
		long lo = (long)p->min - 1, hi = -1;
		n = (long)p->min;
		while (n <= (long)p->max) {
			int r = pd_any(p, fl, n);
			if (r < 0)
				return -1;
			cJSON *t = cJSON_CreateObject();
			cJSON_AddNumberToObject(t, "gpus_total", (double)n);
			cJSON_AddBoolToObject(t, "met", r);
			cJSON_AddItemToArray(tried, t);
			if (!p->o.quiet)
				printf("  %ld GPUs: %s\n", n, r ? "a split meets the SLOs" : "no split meets "
											       "the SLOs");
			if (r) {
				hi = n;
				break;
			}
			lo = n;
			if (n == (long)p->max)
				break;
			n = n * 2 > (long)p->max ? (long)p->max : n * 2;
		}
		if (hi < 0) {
			memset(best, 0, sizeof *best);
			return 0;
		}
		while (hi - lo > 1) {
			long mid = lo + (hi - lo) / 2;
			int r = pd_any(p, fl, mid);
			if (r < 0)
				return -1;
			cJSON *t = cJSON_CreateObject();
			cJSON_AddNumberToObject(t, "gpus_total", (double)mid);
			cJSON_AddBoolToObject(t, "met", r);
			cJSON_AddItemToArray(tried, t);
			if (!p->o.quiet)
				printf("  %ld GPUs: %s\n", mid, r ? "a split meets the SLOs" : "no split meets "
												 "the SLOs");
			*(r ? &hi : &lo) = mid;
		}
		n = hi;
		if (!p->o.quiet)
			printf("  the splits of %ld GPUs:\n", n);
	}
	int r = pd_scan(p, fl, n, best);
	if (r < 0)
		return -1;
	cJSON_AddNumberToObject(a, "gpus_total", (double)n);
	pd_table(p, n, r ? best : NULL, cJSON_AddArrayToObject(a, "splits"));
	return r ? n : 0;
}

/* --- each fleet, the ranking, plan.json ---------------------------------- */

static const char *search_name(const struct plan *p)
{
	return p->pd ? "pd_ratio" : p->by_rate ? p->rate_key : p->node_path;
}

/* Fleet fl's pools at its answer (pd_ratio: the split; nodes: the count
 * found) as JSON. */
static cJSON *fleet_pools(const struct plan *p, const struct scenario *base,
			  const struct fleet *fl, const struct answer *res)
{
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < base->n_pools; i++) {
		const struct pool_cfg *pl = &base->pools[i];
		double nodes = p->pd && i == p->ip   ? res->f.pr
			       : p->pd && i == p->id ? res->f.de
			       : !p->by_rate && !p->pd && i == p->pool ? res->value
								       : pl->cl.nodes;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", pl->name);
		cJSON_AddStringToObject(o, "role", role_names[pl->role]);
		cJSON_AddStringToObject(o, "gpu", fleet_gpu(p, base, fl, i));
		cJSON_AddNumberToObject(o, "tp", pl->cl.tp);
		cJSON_AddNumberToObject(o, "nodes", nodes);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* The search on one fleet: its answer into *res and answers (JSON). 0,
 * or -1 after reporting. */
static int search_fleet(struct plan *p, const struct scenario *base, const struct fleet *fl,
			double start, struct answer *res, cJSON *answers)
{
	if (!p->o.quiet) {
		if (p->pd && p->total)
			printf("%s: splitting %ld GPUs between prefill (tp %d) and decode (tp %d) for",
			       fl->label, p->total, p->tp_p, p->tp_d);
		else if (p->pd)
			printf("%s: searching the GPUs of prefill (tp %d) + decode (tp %d) for",
			       fl->label, p->tp_p, p->tp_d);
		else
			printf("%s: searching %s for", fl->label, search_name(p));
		if (p->slo_ttft > 0)
			printf(" TTFT p99 <= %g s", p->slo_ttft);
		if (p->slo_tpot > 0)
			printf("%s TPOT p99 <= %g s", p->slo_ttft > 0 ? "," : "", p->slo_tpot);
		printf("\n");
	}
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "gpu", fl->label);
	memset(res, 0, sizeof *res);
	double v = p->pd ? (double)search_pd(p, fl, &res->f, a)
		   : p->by_rate ? search_rate(p, fl, start, &res->f)
				: (double)search_nodes(p, fl, &res->f);
	if (v < 0) {
		cJSON_Delete(a);
		return -1;
	}
	res->label = fl->label;
	res->value = v;
	res->ok = v > 0;
	res->tokens_per_dollar = res->f.cost > 0 ? res->f.tokens_per_s * 3600 / res->f.cost : 0;
	res->good_per_dollar = res->f.cost > 0 ? res->f.goodput * 3600 / res->f.cost : 0;
	cJSON_AddBoolToObject(a, "met", res->ok);
	if (res->ok) {
		if (p->pd) {
			cJSON_AddNumberToObject(a, "prefill", res->f.pr);
			cJSON_AddNumberToObject(a, "decode", res->f.de);
		} else {
			cJSON_AddNumberToObject(a, p->by_rate ? "rate" : "nodes", v);
		}
		cJSON_AddNumberToObject(a, "gpus", res->f.gpus);
		cJSON_AddNumberToObject(a, "cost_per_hour", res->f.cost);
		cJSON_AddNumberToObject(a, "output_tokens_per_dollar", res->tokens_per_dollar);
		cJSON_AddNumberToObject(a, "goodput_rps", res->f.goodput);
		cJSON_AddNumberToObject(a, "slo_attainment", res->f.attain);
		if (p->pooled)
			cJSON_AddItemToObject(a, "pools", fleet_pools(p, base, fl, res));
	}
	cJSON_AddItemToArray(answers, a);
	if (p->o.quiet)
		return 0;
	if (res->ok && p->pd)
		printf("%s: best split %d prefill + %d decode (%.0f GPUs, $%.2f/h, goodput %.2f req/s, "
		       "SLO attainment %.4f, %.0f output tokens per $)\n\n",
		       fl->label, res->f.pr, res->f.de, res->f.gpus, res->f.cost, res->f.goodput,
		       res->f.attain, res->tokens_per_dollar);
	else if (res->ok)
		printf("%s: %s%s %.6g (%.0f GPUs, $%.2f/h, %.0f output tokens per $)\n\n", fl->label,
		       p->by_rate ? "highest rate" : p->pool >= 0 ? "smallest pool " : "smallest cluster",
		       !p->by_rate && p->pool >= 0 ? base->pools[p->pool].name : "", v, res->f.gpus,
		       res->f.cost, res->tokens_per_dollar);
	else if (p->pd && p->total)
		printf("%s: no split of %ld GPUs meets the SLOs\n\n", fl->label, p->total);
	else
		printf("%s: no %s in [%g, %g] meets the SLOs\n\n", fl->label,
		       p->by_rate ? "rate" : p->pd ? "GPU count" : "node count", p->min, p->max);
	return 0;
}

/* 1 when a ranks below b: answers before misses; then cheapest first
 * (nodes; pd_ratio without --gpus-total), most requests within the SLOs
 * per dollar first (pd_ratio of --gpus-total), most output tokens per
 * dollar first (rate). */
static int ranks_below(const struct plan *p, const struct answer *a, const struct answer *b)
{
	if (a->ok && b->ok)
		return p->by_rate		? a->tokens_per_dollar < b->tokens_per_dollar
		       : p->pd && p->total ? a->good_per_dollar < b->good_per_dollar
					   : a->f.cost > b->f.cost;
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
	int w = 10;
	for (int i = 0; i < n; i++)
		if ((int)strlen(res[i].label) > w)
			w = (int)strlen(res[i].label);
	if (p->pd) {
		printf("%-4s %-*s %7s %6s %5s %10s %16s %14s %12s\n", "rank", w, "gpu", "prefill",
		       "decode", "GPUs", "$/hour", "out tokens / $", "goodput req/s", "SLO req / $");
		for (int i = 0; i < n; i++) {
			const struct answer *r = &res[order[i]];
			if (r->ok)
				printf("%-4d %-*s %7d %6d %5.0f %10.2f %16.0f %14.2f %12.0f\n", i + 1, w,
				       r->label, r->f.pr, r->f.de, r->f.gpus, r->f.cost,
				       r->tokens_per_dollar, r->f.goodput, r->good_per_dollar);
			else
				printf("%-4s %-*s %7s\n", "-", w, r->label, "none");
		}
		return;
	}
	printf("%-4s %-*s %10s %10s %16s %14s\n", "rank", w, "gpu", p->by_rate ? "rate" : "nodes",
	       "$/hour", "out tokens / $", "goodput req/s");
	for (int i = 0; i < n; i++) {
		const struct answer *r = &res[order[i]];
		if (r->ok)
			printf("%-4d %-*s %10.6g %10.2f %16.0f %14.2f\n", i + 1, w, r->label, r->value,
			       r->f.cost, r->tokens_per_dollar, r->f.goodput);
		else
			printf("%-4s %-*s %10s\n", "-", w, r->label, "none");
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
	cJSON_AddStringToObject(j, "search", search_name(p));
	if (p->pd && p->total)
		cJSON_AddNumberToObject(j, "gpus_total", (double)p->total);
	if (p->pooled) {
		cJSON *pools = cJSON_AddArrayToObject(j, "pools");
		for (int i = 0; i < base->n_pools; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", base->pools[i].name);
			cJSON_AddStringToObject(o, "role", role_names[base->pools[i].role]);
			cJSON_AddItemToArray(pools, o);
		}
	}
	cJSON *slo = cJSON_AddObjectToObject(j, "slo");
	if (p->slo_ttft > 0)
		cJSON_AddNumberToObject(slo, "ttft_p99_s", p->slo_ttft);
	if (p->slo_tpot > 0)
		cJSON_AddNumberToObject(slo, "tpot_p99_s", p->slo_tpot);
	cJSON_AddNumberToObject(j, "seed", (double)base->seed);
	cJSON_AddNumberToObject(j, "runs", (double)p->runs);
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

/* Every fleet's search, the ranking, plan.json. */
static int plan(struct plan *p, const struct scenario *base, double start)
{
	struct fleet fl[MAX_GPUS];
	int nf = fleets(p, base, fl);
	if (nf < 0)
		return CLI_USAGE;
	struct answer res[MAX_GPUS];
	cJSON *answers = cJSON_CreateArray();
	p->probes = cJSON_CreateArray();
	int any = 0;
	for (int f = 0; f < nf; f++) {
		if (search_fleet(p, base, &fl[f], start, &res[f], answers)) {
			cJSON_Delete(answers);
			return CLI_USAGE;
		}
		any |= res[f].ok;
	}
	if (nf > 1 && !p->o.quiet) {
		if (p->pooled) {
			printf("fleets: the GPU of ");
			for (int i = 0; i < base->n_pools; i++)
				printf("%s%s", i ? "/" : "", base->pools[i].name);
			printf(", ranked by %s\n", p->by_rate		    ? "output tokens per dollar"
						    : p->pd && p->total ? "requests within the SLOs per "
									  "dollar"
									: "cost per hour");
		}
		print_ranking(p, res, nf);
	}
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
	struct scenario base; /* the scenario as given: its rate, its GPUs and pools */
	if (cli_load_from_opts(&p.o, &base))
		return CLI_USAGE;
	int rc = CLI_USAGE;
	if (!check_pools(&p, &base)) {
		double start = p.by_rate ? rate_start(&p, &base) : 0;
		rc = start < 0 ? CLI_USAGE : plan(&p, &base, start);
	}
	cJSON_Delete(p.probes);
	free(p.cache);
	cfg_scenario_free(&base);
	return rc;
}

const struct cli_cmd cli_plan_cmd = {
    .name = "plan",
    .args = "[SCENARIO.json]",
    .summary = "smallest cluster, highest rate or P:D split for SLOs",
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
	"--search pd_ratio, on a cluster of one prefill and one decode pool: with\n"
	"--gpus-total N, runs every split of N GPUs (p prefill replicas, and as many\n"
	"decode replicas as the GPUs left hold) and picks the one with the highest\n"
	"goodput among those that pass (ties: fewer GPUs, then more room under the SLOs);\n"
	"above 64 splits, a coarse grid of 32 then finer steps around the best. Without\n"
	"--gpus-total, the smallest N (--min, --max) with a passing split, by the same\n"
	"exponential then binary search, and its best split. Progress goes to stderr,\n"
	"the table of splits to stdout.\n"
	"\n"
	"--gpus repeats the search for each GPU type (cluster.gpu, or every pool's) and\n"
	"--pool-gpus POOL=A,B for each GPU of one pool (repeat it for more pools: every\n"
	"combination). The fleets are ranked by cost per hour (the sum over pools of\n"
	"replicas x tp x catalog price_per_hour; override with --catalog); a rate by\n"
	"output tokens per dollar; a split of --gpus-total by requests within the SLOs\n"
	"per dollar.\n"
	"Writes DIR/plan.json (default DIR: out/plan).\n"
	"Exit 0 when a value meets the SLOs, 1 when none in range does, 2 bad input.\n",
    .pos_complete = "@file",
};
