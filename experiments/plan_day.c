/* plan_day: `kvsim plan --search autoscale`: the smallest static fleet against autoscalers over the scenario's whole run. */
#include "experiments/plan_day.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "experiments/plan_pools.h"
#include "experiments/plan_rank.h"
#include "config/cluster_cfg.h"
#include "config/config.h"
#include "config/scale_cfg.h"

/* The default autoscaler when neither --autoscaler nor the scenario gives
 * one: Kubernetes' HPA on the waiting requests per node, target 4, from
 * 1 node to twice the static answer. Our choice, because:
 * - queue_per_node needs no figure of the node's capacity (rps_per_node
 *   does), and keeps rising with overload where kv_util and busy sit near
 *   1 on any loaded LLM node (continuous batching fills both);
 * - 4 waiting per node is small next to a running batch of tens, so a
 *   request waits an iteration or two, and large enough that one burst of
 *   a few requests does not add a node;
 * - min_nodes 1 is the HPA's minReplicas default; max_nodes twice the
 *   static answer leaves room to catch up with the queue built while new
 *   nodes start (the HPA reacts a tick and a start-up late) and bounds
 *   what a runaway costs at twice the static fleet. */
#define DEFAULT_TARGET 4
#define DEFAULT_MAX_FACTOR 2

static const char *const rank_names[] = {"cost", "energy", "gpu_hours", NULL};
static const char *const kind_names[] = {"none", "hpa", "planner"};
static const char *const metric_names[] = {"queue_per_node", "kv_util", "busy", "rps_per_node"};
static const char *const predictor_names[] = {"constant", "moving_average", "holt"};

int plan_day_check_autoscaler(const char *v, char *err, size_t errlen)
{
	/* The whole value, as strictly as cluster.autoscaler in a file: no
	 * text after the object, no key twice. */
	cJSON *j = cJSON_ParseWithOpts(v, NULL, 1);
	int rc = cJSON_IsObject(j) ? 0 : -1;
	if (!rc && cfg_check_unique_keys(j, "cluster.autoscaler", err, errlen))
		rc = -2;
	cJSON_Delete(j);
	return rc;
}

int plan_day_rank(struct plan *p, const char *v)
{
	for (int i = 0; rank_names[i]; i++)
		if (!strcmp(v, rank_names[i])) {
			p->rank = rank_names[i];
			return 0;
		}
	return -1;
}

int plan_day_check(struct plan *p)
{
	const char *alone = p->n_as ? "--autoscaler" : p->rank ? "--rank" : NULL;
	if (!p->day) {
		if (alone) {
			fprintf(stderr, "kvsim plan: %s goes with --search autoscale\n", alone);
			return -1;
		}
		return 0;
	}
	const char *other = p->n_gpus ? "--gpus" : p->n_ax ? "--pool-gpus" : p->rate_key ? "--rate-key"
										       : NULL;
	if (other) {
		fprintf(stderr, "kvsim plan: --search autoscale plans the scenario's own GPUs and "
				"rate; %s does not go with it\n", other);
		return -1;
	}
	if (!p->rank)
		p->rank = rank_names[0];
	return 0;
}

/* --- the rows ----------------------------------------------------------- */

/* One fleet of the table: the static answer or one autoscaler's run. */
struct row {
	char label[96];
	cJSON *as;     /* the autoscaler set (owned), NULL: static or the scenario's */
	int start;     /* the nodes it starts with (static: the answer; 0: none found) */
	struct fig f;
	int ran, order; /* order: the option's position, for ties */
};

/* The autoscaler's one-line name: kind, then metric and target (hpa) or
 * predictor (planner). */
static void describe(const struct autoscaler_cfg *c, const char *who, char *buf, size_t len)
{
	if (c->kind == AS_HPA)
		snprintf(buf, len, "%s %s %s %g", who, kind_names[c->kind], metric_names[c->metric],
			 c->target);
	else
		snprintf(buf, len, "%s %s %s", who, kind_names[c->kind], predictor_names[c->predictor]);
}

/* The autoscaler object a, checked as the scenario would check it at
 * as_path, into *c; its start: the pool's nodes clamped into [min_nodes,
 * max_nodes]. 0, or -1 after reporting (which: "--autoscaler #2"). */
static int check_autoscaler(const cJSON *a, const char *as_path, int nodes, const char *which,
			    struct autoscaler_cfg *c, int *start)
{
	char err[1024];
	const cJSON *mn = cJSON_GetObjectItemCaseSensitive(a, "min_nodes");
	/* checked at min_nodes, so that the pool's own count is not what fails */
	int at = cJSON_IsNumber(mn) && mn->valuedouble >= 1 && mn->valuedouble <= 1e6
		     ? (int)mn->valuedouble
		     : 1;
	if (cfg_autoscaler_load(a, as_path, at, c, err, sizeof err)) {
		fprintf(stderr, "kvsim plan: %s: %s\n", which, err);
		return -1;
	}
	if (c->kind == AS_NONE) {
		fprintf(stderr, "kvsim plan: %s: kind \"none\" is the static fleet, which the search "
				"finds; give \"hpa\" or \"planner\"\n", which);
		return -1;
	}
	*start = nodes < c->min_nodes ? c->min_nodes : nodes > c->max_nodes ? c->max_nodes : nodes;
	return 0;
}

/* The rows of the autoscalers into r (after the static row): every
 * --autoscaler, else the scenario's own, else the default HPA sized from
 * the static answer n. Their count, or -1 after reporting. */
static int autoscaler_rows(const struct plan *p, const struct scenario *base, const char *as_path,
			   long n, struct row *r)
{
	const struct pool_cfg *pl = &base->pools[p->pool >= 0 ? p->pool : 0];
	struct autoscaler_cfg c;
	char which[32];
	for (int i = 0; i < p->n_as; i++) {
		snprintf(which, sizeof which, "--autoscaler #%d", i + 1);
		memset(&r[i], 0, sizeof r[i]);
		r[i].order = i + 1;
		r[i].as = cJSON_ParseWithOpts(p->as_arg[i], NULL, 1);
		if (!r[i].as || check_autoscaler(r[i].as, as_path, pl->nodes0, which, &c, &r[i].start))
			return -1;
		snprintf(which, sizeof which, "#%d", i + 1);
		describe(&c, which, r[i].label, sizeof r[i].label);
	}
	if (p->n_as)
		return p->n_as;
	memset(r, 0, sizeof *r);
	r->order = 1;
	if (pl->as.kind != AS_NONE) { /* the scenario's own, as it is */
		r->start = pl->nodes0;
		describe(&pl->as, "scenario", r->label, sizeof r->label);
		return 1;
	}
	if (n <= 0) {
		if (!p->quiet)
			printf("no static answer to size the default autoscaler from (max_nodes = 2 x "
			       "the static nodes); give --autoscaler\n\n");
		return 0;
	}
	r->as = cJSON_CreateObject();
	cJSON_AddStringToObject(r->as, "kind", "hpa");
	cJSON_AddStringToObject(r->as, "metric", "queue_per_node");
	cJSON_AddNumberToObject(r->as, "target", DEFAULT_TARGET);
	cJSON_AddNumberToObject(r->as, "min_nodes", 1);
	cJSON_AddNumberToObject(r->as, "max_nodes", (double)(DEFAULT_MAX_FACTOR * n));
	if (check_autoscaler(r->as, as_path, pl->nodes0, "the default autoscaler", &c, &r->start))
		return -1;
	describe(&c, "default", r->label, sizeof r->label);
	return 1;
}

/* Runs row r's autoscaler over the scenario's run, its line printed.
 * 0, or -1 on error. */
static int run_autoscaler(struct plan *p, const struct fleet *fl, const char *as_path,
			  struct row *r)
{
	char *as_set = NULL, nodes_set[96];
	const char *sets[2];
	int n_sets = 0;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "gpu", fl->label);
	cJSON_AddStringToObject(j, "fleet", r->label);
	if (r->as) { /* else the scenario's own, as it is */
		char *txt = cJSON_PrintUnformatted(r->as);
		size_t len = strlen(as_path) + (txt ? strlen(txt) : 0) + 2;
		as_set = txt ? malloc(len) : NULL;
		if (!as_set) {
			free(txt);
			cJSON_Delete(j);
			fprintf(stderr, "kvsim: out of memory\n");
			return -1;
		}
		snprintf(as_set, len, "%s=%s", as_path, txt);
		free(txt);
		snprintf(nodes_set, sizeof nodes_set, "%s=%d", p->node_path, r->start);
		sets[n_sets++] = as_set;
		sets[n_sets++] = nodes_set;
		cJSON_AddItemToObject(j, "autoscaler", cJSON_Duplicate(r->as, 1));
	}
	cJSON_AddNumberToObject(j, "start_nodes", r->start);
	int rc = plan_probe(p, fl, sets, n_sets, j, &r->f);
	free(as_set);
	if (rc < 0)
		return -1;
	r->ran = 1;
	if (!p->quiet)
		printf("  run   %-30s from %3d nodes  TTFT p99 %8.3f s  TPOT p99 %7.4f s  "
		       "shed+failed %6.0f  GPU-h %8.3f  %s\n",
		       r->label, r->start, r->f.ttft, r->f.tpot, r->f.lost, r->f.gpu_hours,
		       r->f.pass ? "PASS" : "fail");
	return 0;
}

/* --- the table ---------------------------------------------------------- */

static double rank_key(const struct plan *p, const struct fig *f)
{
	return !strcmp(p->rank, "energy")      ? f->kwh
	       : !strcmp(p->rank, "gpu_hours") ? f->gpu_hours
					       : f->cost_usd;
}

/* 1 when a ranks below b: rows that meet the SLOs first; then the smaller
 * --rank figure, the smaller cost, the fewer GPU-hours; then the static
 * row, then the options' order. */
static int ranks_below(const struct plan *p, const struct row *a, const struct row *b)
{
	if (a->f.pass != b->f.pass)
		return b->f.pass;
	double ka = rank_key(p, &a->f), kb = rank_key(p, &b->f);
	if (ka != kb)
		return ka > kb;
	if (a->f.cost_usd != b->f.cost_usd)
		return a->f.cost_usd > b->f.cost_usd;
	if (a->f.gpu_hours != b->f.gpu_hours)
		return a->f.gpu_hours > b->f.gpu_hours;
	return a->order > b->order;
}

static void print_table(const struct plan *p, const struct row *r, const int *order, int n)
{
	int w = 12;
	for (int i = 0; i < n; i++)
		if ((int)strlen(r[i].label) > w)
			w = (int)strlen(r[i].label);
	printf("ranked by %s among the fleets that meet the SLOs:\n",
	       !strcmp(p->rank, "energy")      ? "energy (kWh)"
	       : !strcmp(p->rank, "gpu_hours") ? "GPU-hours"
					       : "cost (USD)");
	printf("%-4s %-*s %9s %9s %9s %9s %9s %9s %8s %7s %5s\n", "rank", w, "fleet", "SLO att",
	       "goodput", "TTFT p99", "GPU-h", "cost $", "kWh", "J/token", "nodes", "max");
	for (int i = 0; i < n; i++) {
		const struct row *x = &r[order[i]];
		char rank[16] = "-";
		if (x->ran && x->f.pass) /* they come first: i + 1 is the rank */
			snprintf(rank, sizeof rank, "%d", i + 1);
		if (!x->ran) {
			printf("%-4s %-*s  none in [%g, %g] meets the SLOs\n", rank, w, x->label, p->min,
			       p->max);
			continue;
		}
		printf("%-4s %-*s %9.4f %9.2f %9.3f %9.3f %9.2f %9.3f %9.3f %8.2f %5.0f%s\n", rank, w,
		       x->label, x->f.attain, x->f.goodput, x->f.ttft, x->f.gpu_hours, x->f.cost_usd,
		       x->f.kwh, x->f.j_per_token, x->f.nodes_mean, x->f.nodes_max,
		       x->f.pass ? "" : "  misses the SLOs");
	}
}

static cJSON *row_json(const struct row *x, int rank)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "fleet", x->label);
	if (x->as)
		cJSON_AddItemToObject(a, "autoscaler", cJSON_Duplicate(x->as, 1));
	cJSON_AddBoolToObject(a, "met", x->ran && x->f.pass);
	if (rank > 0)
		cJSON_AddNumberToObject(a, "rank", rank);
	if (!x->ran)
		return a;
	cJSON_AddNumberToObject(a, "start_nodes", x->start);
	cJSON_AddNumberToObject(a, "slo_attainment", x->f.attain);
	cJSON_AddNumberToObject(a, "goodput_rps", x->f.goodput);
	cJSON_AddNumberToObject(a, "ttft_p99_s", x->f.ttft);
	cJSON_AddNumberToObject(a, "tpot_p99_s", x->f.tpot);
	cJSON_AddNumberToObject(a, "shed_or_failed", x->f.lost);
	cJSON_AddNumberToObject(a, "gpu_hours", x->f.gpu_hours);
	cJSON_AddNumberToObject(a, "cost_usd", x->f.cost_usd);
	cJSON_AddNumberToObject(a, "kwh", x->f.kwh);
	cJSON_AddNumberToObject(a, "j_per_output_token", x->f.j_per_token);
	cJSON_AddNumberToObject(a, "nodes_mean", x->f.nodes_mean);
	cJSON_AddNumberToObject(a, "nodes_max", x->f.nodes_max);
	return a;
}

/* --- the day ------------------------------------------------------------ */

static void print_slos(const struct plan *p)
{
	if (p->slo_ttft > 0)
		printf(" TTFT p99 <= %g s", p->slo_ttft);
	if (p->slo_tpot > 0)
		printf("%s TPOT p99 <= %g s", p->slo_ttft > 0 ? "," : "", p->slo_tpot);
	printf("\n");
}

int plan_day(struct plan *p, const struct scenario *base, const struct fleet *fl, cJSON *answers)
{
	char as_path[64], none_set[96];
	if (p->pool >= 0)
		snprintf(as_path, sizeof as_path, "cluster.pools[%d].autoscaler", p->pool);
	else
		snprintf(as_path, sizeof as_path, "cluster.autoscaler");
	struct row r[1 + MAX_AUTOSCALERS];
	int n = 1, rc = -1;
	memset(r, 0, sizeof r);
	/* the autoscalers are checked before the static search's runs */
	int n_as = autoscaler_rows(p, base, as_path, 1, r + 1);
	if (n_as < 0)
		goto out;
	for (int i = 1; i <= n_as; i++)
		cJSON_Delete(r[i].as);
	memset(r, 0, sizeof r);

	if (!p->quiet) {
		printf("static: searching %s (%s set to {\"kind\":\"none\"}) for", p->node_path,
		       as_path);
		print_slos(p);
	}
	snprintf(none_set, sizeof none_set, "%s={\"kind\":\"none\"}", as_path);
	p->always_set = none_set;
	memset(&p->bind, 0, sizeof p->bind);
	p->bind_dir = -1;
	long least = plan_least(p, fl, plan_nodes_pass, &r[0].f);
	p->bind_dir = 0;
	p->always_set = NULL;
	if (least < 0)
		goto out;
	struct plan_bind bind = p->bind;
	if (!bind.slo)
		snprintf(bind.none, sizeof bind.none, "--min %g reached", p->min);
	r[0].start = (int)least;
	r[0].ran = least > 0;
	snprintf(r[0].label, sizeof r[0].label, least > 0 ? "static %ld" : "static", least);
	if (!p->quiet && least > 0)
		printf("static: smallest cluster %ld\n", least);
	else if (!p->quiet)
		printf("static: no node count in [%g, %g] meets the SLOs\n", p->min, p->max);
	if (!p->quiet) {
		char text[400];
		plan_bind_text(&bind, text, sizeof text);
		printf("static: %s%s\n\n", bind.slo ? "bound by " : "", text);
	}

	n_as = autoscaler_rows(p, base, as_path, least, r + 1);
	if (n_as < 0)
		goto out;
	n += n_as;
	if (n_as && !p->quiet) {
		printf("autoscaled: the scenario's run, starting from its nodes (clamped to "
		       "[min_nodes, max_nodes]), for");
		print_slos(p);
	}
	for (int i = 1; i < n; i++)
		if (run_autoscaler(p, fl, as_path, &r[i]))
			goto out;

	int order[1 + MAX_AUTOSCALERS];
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) /* insertion sort: stable, n is small */
		for (int j = i; j > 0 && ranks_below(p, &r[order[j - 1]], &r[order[j]]); j--) {
			int t = order[j - 1];
			order[j - 1] = order[j];
			order[j] = t;
		}
	if (!p->quiet) {
		if (n_as)
			printf("\n");
		print_table(p, r, order, n);
	}
	int any = 0;
	for (int i = 0; i < n; i++) {
		const struct row *x = &r[order[i]];
		int met = x->ran && x->f.pass;
		any |= met;
		cJSON *o = row_json(x, met ? i + 1 : 0);
		if (order[i] == 0) /* the static search's */
			cJSON_AddItemToObject(o, "binding", plan_bind_json(&bind));
		cJSON_AddItemToArray(answers, o);
	}
	rc = any;
out:
	for (int i = 1; i <= MAX_AUTOSCALERS; i++) /* unset ones are NULL */
		cJSON_Delete(r[i].as);
	return rc;
}
