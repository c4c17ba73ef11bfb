/* plan_pools: `kvsim plan` on pools and fleets: --pool, --pool-gpus, the fleets, one probe run, the count search, the pd_ratio splits. */
#include "experiments/plan_pools.h"
#include "experiments/capacity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"
#include "model/catalog.h"
#include "config/cfg.h"
#include "config/config.h"
#include "sim/sim.h"

/* --- pools and fleets --------------------------------------------------- */

/* Whether the scenario as the options give it has cluster.pools; -1 after
 * reporting. */
static int has_pools(const struct plan *p)
{
	cJSON *root = p->load.tree(p->load.ctx);
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

int plan_check_pools(struct plan *p, const struct scenario *base)
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
			fprintf(stderr, "kvsim plan: --search %s on a cluster of %d pools: give --pool "
					"NAME, the pool whose nodes to search (the others keep theirs)%s\n",
				p->search, base->n_pools, p->day ? "" : ", or --search pd_ratio");
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

int plan_fleets(const struct plan *p, const struct scenario *base, struct fleet *fl)
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
		if (p->pd && p->tp_p == p->tp_d &&
		    !strcmp(fleet_gpu(p, base, x, p->ip), fleet_gpu(p, base, x, p->id)))
			x->coloc_gpu = fleet_gpu(p, base, x, p->id);
		if (x->coloc_gpu)
			snprintf(x->coloc_label, sizeof x->coloc_label, "%s colocated", x->coloc_gpu);
		for (int i = 0; i < base->n_pools; i++) {
			size_t l = strlen(x->label);
			snprintf(x->label + l, sizeof x->label - l, "%s%s", i ? "/" : "",
				 fleet_gpu(p, base, x, i));
		}
	}
	return (int)n;
}

/* --- a probe: one run of a fleet ---------------------------------------- */

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
	if (p->coloc_nodes > 0) { /* one mixed pool of the cluster's: no pools */
		cJSON *tp = cJSON_CreateNumber(p->tp_d);
		cJSON_DeleteItemFromObjectCaseSensitive(cl, "pools");
		cJSON_DeleteItemFromObjectCaseSensitive(cl, "tp");
		cJSON_AddItemToObject(cl, "tp", tp);
		if (!tp || !fl->coloc_gpu || put_string(cl, "gpu", fl->coloc_gpu))
			goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "cannot set the fleet's GPUs (%s) in cluster", fl->label);
	return -1;
}

int plan_fails(const struct plan *p, double completed, double ttft, double tpot, double tpot_n,
	       double lost, double arrived, int steady)
{
	int m = 0;
	if (completed <= 0)
		m |= PLAN_FAIL_NONE_DONE;
	if (p->slo_ttft > 0 && !(ttft <= p->slo_ttft))
		m |= PLAN_FAIL_TTFT;
	if (p->slo_tpot > 0 && tpot_n > 0 && !(tpot <= p->slo_tpot))
		m |= PLAN_FAIL_TPOT;
	if (lost > PLAN_MAX_LOST * arrived)
		m |= PLAN_FAIL_LOST;
	if (!p->day && !steady)
		m |= PLAN_FAIL_UNSTEADY;
	return m;
}

int plan_binding(const struct plan *p, const struct fig *f, struct plan_bind *b)
{
	const struct {
		int bit;
		const char *slo;
		double value, limit;
	} part[] = {{PLAN_FAIL_TTFT, "ttft_p99", f->ttft_hi, p->slo_ttft},
		    {PLAN_FAIL_TPOT, "tpot_p99", f->tpot_hi, p->slo_tpot},
		    {PLAN_FAIL_LOST, "shed_or_failed", f->share_hi, PLAN_MAX_LOST}};
	memset(b, 0, sizeof *b);
	int chosen = 0;
	if (f->fails & PLAN_FAIL_NONE_DONE) {
		*b = (struct plan_bind){.slo = "completed", .ratio = INFINITY};
		chosen = PLAN_FAIL_NONE_DONE;
	}
	for (int k = 0; !chosen && k < 3; k++) /* the furthest past its limit; ties: this order */
		if ((f->fails & part[k].bit) && part[k].value / part[k].limit > b->ratio) {
			b->slo = part[k].slo;
			b->value = part[k].value;
			b->limit = part[k].limit;
			b->ratio = part[k].value / part[k].limit;
		}
	for (int k = 0; !chosen && k < 3; k++)
		if (b->slo == part[k].slo)
			chosen = part[k].bit;
	if (!chosen && (f->fails & PLAN_FAIL_UNSTEADY)) {
		*b = (struct plan_bind){.slo = "steady", .value = f->unsteady, .ratio = 1};
		chosen = PLAN_FAIL_UNSTEADY;
	}
	b->also = f->fails & ~chosen;
	return chosen != 0;
}

void plan_bind_note(struct plan *p, const struct fig *f, double v, const char *at)
{
	if (f->pass || !p->bind_dir ||
	    (p->bind.slo && (p->bind_dir < 0 ? v <= p->bind_at : v >= p->bind_at)))
		return;
	plan_binding(p, f, &p->bind);
	snprintf(p->bind.at, sizeof p->bind.at, "%s", at);
	p->bind_at = v;
}

/* The probe's scenario tree: the SLOs, the fleet and the sets applied
 * (NULL, said on stderr, when one does not apply). Caller frees. */
static cJSON *probe_tree(struct plan *p, const struct fleet *fl, const char *const *sets,
			 int n_sets)
{
	cJSON *root = p->load.tree(p->load.ctx);
	if (!root)
		return NULL;
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
	if (p->always_set && !bad)
		bad = cfg_apply_set(root, p->always_set, err, sizeof err);
	if (bad) {
		fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

int plan_probe(struct plan *p, const struct fleet *fl, const char *const *sets, int n_sets,
	       cJSON *j, struct fig *f)
{
	cJSON *root = probe_tree(p, fl, sets, n_sets);
	if (!root) {
		cJSON_Delete(j);
		return -1;
	}
	char set[64], err[1024];
	/* every seed of --seeds (none: the scenario's), each a run */
	int ns = p->n_seeds > 0 ? p->n_seeds : 1, pass = 1, unsteady = 0;
	double v[11][PLAN_MAX_SEEDS];
	f->fails = 0;
	for (int k = 0; k < ns; k++) {
		if (p->n_seeds > 0) {
			snprintf(set, sizeof set, "seed=%lld", p->seeds[k]);
			if (cfg_apply_set(root, set, err, sizeof err)) {
				fprintf(stderr, "kvsim: %s\n", err);
				cJSON_Delete(root);
				cJSON_Delete(j);
				return -1;
			}
		}
		struct scenario sc;
		if (p->load.scenario(p->load.ctx, root, &sc)) {
			cJSON_Delete(root);
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
		if (rc == 0 && m.warning[0] && !p->warned) {
			fprintf(stderr, "kvsim: warning: %s\n", m.warning);
			p->warned = 1;
		}
		if (rc) {
			if (rc <= 3) /* 2 or 3 (sim_run); else interrupted: main says so */
				fprintf(stderr, "kvsim: %s\n", err);
			cJSON_Delete(root);
			cJSON_Delete(j);
			return -1;
		}
		/* the probe's test (docs/planning.md): within the SLOs, at most
		 * 0.1% shed or failed, and steady (a run that drifts upward has
		 * not shown what it sustains; not asked of --search autoscale's
		 * day, whose load changes by design); with seeds, at every seed */
		uint64_t lost = m.shed + m.failed;
		int fails = plan_fails(p, (double)m.completed, m.ttft.p99, m.tpot.p99,
				       (double)m.tpot.n, (double)lost, (double)m.arrived,
				       !m.steadiness.unsteady);
		f->fails |= fails;
		pass &= !fails;
		unsteady += m.steadiness.unsteady != 0;
		const double x[11] = {m.ttft.p99,	 m.tpot.p99,	    (double)lost,
				      m.slo_attainment,	 m.goodput_rps,	    m.output_tokens_per_s,
				      m.gpu_hours,	 m.cost_usd,	    m.energy_kwh,
				      m.energy_j_per_out,
				      m.arrived ? (double)lost / (double)m.arrived : 0};
		for (int q = 0; q < 11; q++)
			v[q][k] = x[q];
		if (k == 0) {
			f->nodes_mean = m.nodes_mean;
			f->nodes_max = m.nodes_max;
		}
		met_summary_free(&m);
	}
	cJSON_Delete(root);
	double lo[11], med[11], hi[11];
	for (int q = 0; q < 11; q++)
		cap_spread(v[q], (size_t)ns, &lo[q], &med[q], &hi[q]);
	f->pass = pass;
	f->unsteady = unsteady;
	f->ttft = med[0];
	f->tpot = med[1];
	f->lost = med[2];
	f->attain = med[3];
	f->goodput = med[4];
	f->tokens_per_s = med[5];
	f->gpu_hours = med[6];
	f->cost_usd = med[7];
	f->kwh = med[8];
	f->j_per_token = med[9];
	f->ttft_lo = lo[0];
	f->ttft_hi = hi[0];
	f->tpot_lo = lo[1];
	f->tpot_hi = hi[1];
	f->share = med[10];
	f->share_hi = hi[10];
	if (p->n_seeds > 1) {
		cJSON *sd = cJSON_AddArrayToObject(j, "seeds");
		for (int k = 0; k < ns; k++)
			cJSON_AddItemToArray(sd, cJSON_CreateNumber((double)p->seeds[k]));
		cJSON *r = cJSON_AddObjectToObject(j, "range");
		static const char *const names[10] = {
		    "ttft_p99_s", "tpot_p99_s", "shed_or_failed", "slo_attainment", "goodput_rps",
		    "output_tokens_per_s", "gpu_hours", "cost_usd", "kwh", "j_per_output_token"};
		for (int q = 0; q < 10; q++) {
			cJSON *a = cJSON_AddArrayToObject(r, names[q]);
			cJSON_AddItemToArray(a, cJSON_CreateNumber(lo[q]));
			cJSON_AddItemToArray(a, cJSON_CreateNumber(hi[q]));
		}
	}
	cJSON_AddBoolToObject(j, "steady", unsteady == 0);
	cJSON_AddNumberToObject(j, "gpus", f->gpus);
	cJSON_AddNumberToObject(j, "cost_per_hour", f->cost);
	cJSON_AddNumberToObject(j, "ttft_p99_s", f->ttft);
	cJSON_AddNumberToObject(j, "tpot_p99_s", f->tpot);
	cJSON_AddNumberToObject(j, "shed_or_failed", f->lost);
	cJSON_AddNumberToObject(j, "slo_attainment", f->attain);
	cJSON_AddNumberToObject(j, "goodput_rps", f->goodput);
	cJSON_AddNumberToObject(j, "output_tokens_per_s", f->tokens_per_s);
	cJSON_AddNumberToObject(j, "gpu_hours", f->gpu_hours);
	cJSON_AddNumberToObject(j, "cost_usd", f->cost_usd);
	cJSON_AddNumberToObject(j, "kwh", f->kwh);
	cJSON_AddNumberToObject(j, "j_per_output_token", f->j_per_token);
	cJSON_AddNumberToObject(j, "nodes_mean", f->nodes_mean);
	cJSON_AddNumberToObject(j, "nodes_max", f->nodes_max);
	cJSON_AddBoolToObject(j, "pass", f->pass);
	if (p->policy)
		cJSON_AddStringToObject(j, "policy", p->policy);
	if (p->coloc_nodes > 0)
		cJSON_AddStringToObject(j, "layout", "colocated");
	cJSON_AddItemToArray(p->probes, j);
	return f->pass;
}

int plan_probe_value(struct plan *p, const struct fleet *fl, const char *path, double value,
		     struct fig *f)
{
	char set[MAX_RATE_KEY + 32];
	snprintf(set, sizeof set, "%s=%.10g", path, value); /* --rate-key's check bounds path */
	const char *sets[] = {set};
	const char *label = p->coloc_nodes > 0 ? fl->coloc_label : fl->label;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "gpu", label);
	cJSON_AddStringToObject(j, "path", path);
	cJSON_AddNumberToObject(j, "value", value);
	int r = plan_probe(p, fl, sets, 1, j, f);
	if (r >= 0 && !p->quiet && p->n_seeds > 1)
		printf("  probe %-9s %s=%-10.6g TTFT p99 %8.3f s (%.3f-%.3f)  TPOT p99 %7.4f s "
		       "(%.4f-%.4f)  shed+failed %6.0f  goodput %8.2f req/s  %s%s\n",
		       label, path, value, f->ttft, f->ttft_lo, f->ttft_hi, f->tpot, f->tpot_lo,
		       f->tpot_hi, f->lost, f->goodput, f->pass ? "PASS" : "fail",
		       f->unsteady && !p->day ? "  (not steady at some seed)" : "");
	else if (r >= 0 && !p->quiet)
		printf("  probe %-9s %s=%-10.6g TTFT p99 %8.3f s  TPOT p99 %7.4f s  shed+failed %6.0f  "
		       "goodput %8.2f req/s  %s%s\n",
		       label, path, value, f->ttft, f->tpot, f->lost, f->goodput,
		       f->pass ? "PASS" : "fail", f->unsteady && !p->day ? "  (not steady)" : "");
	if (r == 0) {
		snprintf(set + strlen(set), sizeof set - strlen(set), "%s",
			 p->coloc_nodes > 0 ? " (colocated)" : "");
		plan_bind_note(p, f, value, set);
	}
	return r;
}

/* --- the smallest count that passes ------------------------------------- */

int plan_nodes_pass(struct plan *p, const struct fleet *fl, long n, void *best)
{
	struct fig f;
	int r = plan_probe_value(p, fl, p->node_path, (double)n, &f);
	if (r > 0)
		*(struct fig *)best = f;
	return r;
}

long plan_least(struct plan *p, const struct fleet *fl, plan_test_fn *pass, void *ctx)
{
	long lo = (long)p->min - 1, n = (long)p->min, hi = -1;
	while (n <= (long)p->max) {
		int r = pass(p, fl, n, ctx);
		if (r < 0)
			return -1;
		if (r) {
			hi = n;
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
		int r = pass(p, fl, mid, ctx);
		if (r < 0)
			return -1;
		*(r ? &hi : &lo) = mid;
	}
	return hi;
}

/* --- pd_ratio ----------------------------------------------------------- */

/* Splits of one GPU count all run when there are at most this many; more
 * are searched coarse to fine (pd_scan). Our choice: a minute or so of
 * small runs, and every split of a 64-GPU budget of tp-1 replicas. */
#define FULL_SCAN 64
#define COARSE_POINTS 32 /* the coarse grid of a larger scan */

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
	int r = plan_probe(p, fl, sets, 2, j, &f);
	if (r < 0)
		return -1;
	f.pr = pr;
	f.de = de;
	p->cache[p->n_cache++] = f;
	*out = f;
	if (!p->quiet) /* progress: the table comes on stdout once the scan is done */
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

/* plan_least's test for the GPU count without --gpus-total: pd_any, its
 * line, and its record in the array tried. 1, 0, or -1 on error. */
static int pd_try(struct plan *p, const struct fleet *fl, long n, void *tried)
{
	int r = pd_any(p, fl, n);
	if (r < 0)
		return -1;
	cJSON *t = cJSON_CreateObject();
	cJSON_AddNumberToObject(t, "gpus_total", (double)n);
	cJSON_AddBoolToObject(t, "met", r);
	cJSON_AddItemToArray(tried, t);
	if (!p->quiet)
		printf("  %ld GPUs: %s\n", n, r ? "a split meets the SLOs" : "no split meets the SLOs");
	return r;
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
	if (!p->quiet)
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
		if (!p->quiet)
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

/* The binding SLO of a split search into p->bind: among the failing
 * splits of n GPUs, the one nearest the best in prefill replicas (best
 * NULL: the nearest miss, by plan_binding's ratio); ties to the nearer
 * miss, then the fewer prefill replicas. none says why when none fails. */
static void pd_bind(struct plan *p, long n, const struct fig *best, const char *none)
{
	int ns = n_splits(p, n), got = 0;
	struct plan_bind b;
	double dist = 0;
	memset(&p->bind, 0, sizeof p->bind);
	for (int c = 0; c < p->n_cache; c++) {
		const struct fig *f = &p->cache[c];
		int pr, de;
		if (f->pass || f->pr > ns)
			continue;
		split_at(p, n, f->pr - 1, &pr, &de);
		if (de != f->de || !plan_binding(p, f, &b))
			continue;
		double d = best ? fabs((double)(f->pr - best->pr)) : 0;
		if (got && (d > dist || (d == dist && (b.ratio > p->bind.ratio ||
						       (b.ratio == p->bind.ratio &&
							f->pr > p->bind_at)))))
			continue;
		p->bind = b;
		p->bind_at = f->pr;
		dist = d;
		got = 1;
		snprintf(p->bind.at, sizeof p->bind.at, "%d prefill + %d decode (%ld GPUs)", f->pr,
			 f->de, n);
	}
	if (!got)
		snprintf(p->bind.none, sizeof p->bind.none, "%s", none);
}

/* The largest count in tried (gpus_tried) that no split met, 0 if none. */
static long pd_last_miss(const cJSON *tried)
{
	long n = 0;
	for (const cJSON *t = tried ? tried->child : NULL; t; t = t->next) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(t, "gpus_total");
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(t, "met")) && c->valuedouble > n)
			n = (long)c->valuedouble;
	}
	return n;
}

long plan_search_pd(struct plan *p, const struct fleet *fl, struct fig *best, cJSON *a)
{
	p->n_cache = 0;
	p->bind_dir = 0;
	long n = p->total;
	if (!p->total) {
		cJSON *tried = cJSON_AddArrayToObject(a, "gpus_tried");
		n = plan_least(p, fl, pd_try, tried);
		if (n < 0)
			return -1;
		long miss = pd_last_miss(tried);
		if (!n) {
			memset(best, 0, sizeof *best);
			pd_bind(p, miss, NULL, "");
			return 0;
		}
		if (miss)
			pd_bind(p, miss, NULL, "");
		else
			snprintf(p->bind.none, sizeof p->bind.none, "--min %g reached", p->min);
		if (!p->quiet)
			printf("  the splits of %ld GPUs:\n", n);
	}
	int r = pd_scan(p, fl, n, best);
	if (r < 0)
		return -1;
	if (p->total)
		pd_bind(p, n, r ? best : NULL, "every split meets the SLOs");
	cJSON_AddNumberToObject(a, "gpus_total", (double)n);
	pd_table(p, n, r ? best : NULL, cJSON_AddArrayToObject(a, "splits"));
	return r ? n : 0;
}

/* plan_least's test for the colocated layout: n nodes. */
static int coloc_pass(struct plan *p, const struct fleet *fl, long n, void *best)
{
	struct fig f;
	p->coloc_nodes = n;
	int r = plan_probe_value(p, fl, "cluster.nodes", (double)n, &f);
	p->coloc_nodes = 0;
	f.pr = f.de = 0;
	if (r > 0)
		*(struct fig *)best = f;
	return r;
}

long plan_colocated(struct plan *p, const struct fleet *fl, struct fig *best)
{
	long tp = p->tp_d;
	memset(best, 0, sizeof *best);
	memset(&p->bind, 0, sizeof p->bind);
	p->bind_dir = -1;
	if (p->total) {
		struct fig f;
		int r = coloc_pass(p, fl, p->total / tp, &f);
		if (r < 0)
			return -1;
		*best = f; /* its figures, met or not: the row beside the splits */
		if (r)
			snprintf(p->bind.none, sizeof p->bind.none, "--gpus-total %ld meets the SLOs",
				 p->total);
		return r ? p->total / tp * tp : 0;
	}
	/* from one replica (or --min): a split needs two, one layout need not */
	double min = p->min, max = p->max, lo = p->min_arg ? atof(p->min_arg) : (double)tp;
	p->min = ceil(lo / (double)tp);
	p->max = floor(max / (double)tp);
	long n = p->max >= p->min ? plan_least(p, fl, coloc_pass, best) : 0;
	if (n > 0 && !p->bind.slo)
		snprintf(p->bind.none, sizeof p->bind.none, "--min %g reached", lo);
	p->min = min;
	p->max = max;
	return n > 0 ? n * tp : n;
}

/* --- the pools in plan.json --------------------------------------------- */

/* Pool pl's name and role, the head of its object in plan.json. */
static cJSON *pool_json(const struct pool_cfg *pl)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", pl->name);
	cJSON_AddStringToObject(o, "role", role_names[pl->role]);
	return o;
}

cJSON *plan_pools_json(const struct scenario *base)
{
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < base->n_pools; i++)
		cJSON_AddItemToArray(arr, pool_json(&base->pools[i]));
	return arr;
}

cJSON *plan_fleet_pools(const struct plan *p, const struct scenario *base,
			const struct fleet *fl, const struct answer *res)
{
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < base->n_pools; i++) {
		const struct pool_cfg *pl = &base->pools[i];
		double nodes = p->pd && i == p->ip   ? res->f.pr
			       : p->pd && i == p->id ? res->f.de
			       : !p->by_rate && !p->pd && i == p->pool ? res->value
								       : pl->cl.nodes;
		cJSON *o = pool_json(pl);
		cJSON_AddStringToObject(o, "gpu", fleet_gpu(p, base, fl, i));
		cJSON_AddNumberToObject(o, "tp", pl->cl.tp);
		cJSON_AddNumberToObject(o, "nodes", nodes);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}
