/* plan_rank: kvsim plan's searches in worker processes, the binding SLO as text and JSON, the ranking of the answers. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "experiments/plan_rank.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/interrupt.h"

/* --- the binding SLO ---------------------------------------------------- */

static const struct {
	int bit;
	const char *slo, *text;
} parts[] = {{PLAN_FAIL_NONE_DONE, "completed", "no request completed"},
	     {PLAN_FAIL_TTFT, "ttft_p99", "TTFT p99"},
	     {PLAN_FAIL_TPOT, "tpot_p99", "TPOT p99"},
	     {PLAN_FAIL_LOST, "shed_or_failed", "shed+failed"},
	     {PLAN_FAIL_UNSTEADY, "steady", "not steady"}};
#define N_PARTS (int)(sizeof parts / sizeof *parts)

void plan_bind_text(const struct plan_bind *b, char *buf, size_t len)
{
	if (!b->slo) {
		snprintf(buf, len, "no SLO bound within the range (%s)", b->none);
		return;
	}
	size_t l;
	if (!strcmp(b->slo, "ttft_p99") || !strcmp(b->slo, "tpot_p99"))
		snprintf(buf, len, "%s p99 %.4g s > %g s at %s", b->slo[1] == 't' ? "TTFT" : "TPOT",
			 b->value, b->limit, b->at);
	else if (!strcmp(b->slo, "shed_or_failed"))
		snprintf(buf, len, "shed+failed %.3g%% > %g%% of requests at %s", 100 * b->value,
			 100 * b->limit, b->at);
	else
		snprintf(buf, len, "%s at %s", !strcmp(b->slo, "steady") ? "not steady"
								: "no request completed",
			 b->at);
	for (int k = 0, first = 1; k < N_PARTS; k++)
		if ((b->also & parts[k].bit) && (l = strlen(buf)) < len) {
			snprintf(buf + l, len - l, "%s%s", first ? " (also " : ", ", parts[k].text);
			first = 0;
		}
	if (b->also && (l = strlen(buf)) < len)
		snprintf(buf + l, len - l, ")");
}

cJSON *plan_bind_json(const struct plan_bind *b)
{
	cJSON *j = cJSON_CreateObject();
	if (!b->slo) {
		cJSON_AddNullToObject(j, "slo");
		char t[160];
		plan_bind_text(b, t, sizeof t);
		cJSON_AddStringToObject(j, "note", t);
		return j;
	}
	cJSON_AddStringToObject(j, "slo", b->slo);
	if (!strcmp(b->slo, "steady")) {
		cJSON_AddBoolToObject(j, "value", 0);
		cJSON_AddBoolToObject(j, "limit", 1);
	} else if (!strcmp(b->slo, "completed")) {
		cJSON_AddNumberToObject(j, "value", 0);
		cJSON_AddNumberToObject(j, "limit", 1);
	} else {
		cJSON_AddNumberToObject(j, "value", b->value);
		cJSON_AddNumberToObject(j, "limit", b->limit);
	}
	cJSON_AddStringToObject(j, "at", b->at);
	cJSON *also = cJSON_AddArrayToObject(j, "also");
	for (int k = 0; k < N_PARTS; k++)
		if (b->also & parts[k].bit)
			cJSON_AddItemToArray(also, cJSON_CreateString(parts[k].slo));
	return j;
}

/* --- the searches in worker processes ----------------------------------- */

/* A worker takes the next task not yet taken (next: shared by the
 * workers), its stdout going to cap[i]. Exits with the first failure's
 * code, else 0. */
static void worker(int n, plan_task_fn fn, void *ctx, FILE **cap, FILE **out, int *next)
{
	int rc = 0;
	for (int i; !rc && !intr_caught() && (i = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED)) < n;) {
		fflush(stdout);
		if (dup2(fileno(cap[i]), STDOUT_FILENO) < 0) {
			fprintf(stderr, "kvsim: dup2: %s\n", strerror(errno));
			rc = 3;
			break;
		}
		rc = fn(ctx, i, out[i]);
		if (fflush(stdout) || fflush(out[i]))
			rc = rc ? rc : 3;
	}
	fflush(stderr);
	_exit(intr_caught() ? 128 + intr_caught() : rc);
}

/* Copies f from its start to stdout. */
static void replay(FILE *f)
{
	char buf[8192];
	size_t k;
	rewind(f);
	while ((k = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, k, stdout);
}

/* The tasks in workers: cap[i] their stdout, shown in order after. */
static int run_workers(int n, int jobs, plan_task_fn fn, void *ctx, FILE **out)
{
	int rc = 0, started = 0;
	FILE **cap = calloc((size_t)n, sizeof *cap);
	pid_t *pids = calloc((size_t)jobs, sizeof *pids), parent = getpid();
	int *next = mmap(NULL, sizeof *next, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			 -1, 0);
	if (next == MAP_FAILED)
		next = NULL;
	else
		*next = 0;
	for (int i = 0; cap && i < n; i++)
		if (!(cap[i] = tmpfile()))
			rc = 3;
	if (!cap || !pids || !next)
		rc = 3;
	fflush(stdout);
	fflush(stderr);
	for (; !rc && started < jobs; started++) {
		pids[started] = fork();
		if (pids[started] < 0) {
			fprintf(stderr, "kvsim: fork: %s\n", strerror(errno));
			rc = 3;
			break;
		}
		if (pids[started] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM); /* a worker ends with the plan */
			if (getppid() != parent)
				_exit(128 + SIGTERM);
			worker(n, fn, ctx, cap, out, next);
		}
	}
	for (int k = 0; k < started; k++) {
		int st;
		while (waitpid(pids[k], &st, 0) < 0 && errno == EINTR)
			for (int j = k; j < started; j++)
				kill(pids[j], SIGTERM);
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 3;
		if (code && !rc)
			rc = code;
	}
	for (int i = 0; !rc && i < n; i++)
		replay(cap[i]);
	fflush(stdout);
	for (int i = 0; cap && i < n; i++)
		if (cap[i])
			fclose(cap[i]);
	free(cap);
	free(pids);
	if (next)
		munmap(next, sizeof *next);
	return intr_caught() ? 128 + intr_caught() : rc;
}

int plan_run_tasks(int n, int jobs, plan_task_fn fn, void *ctx, FILE **out)
{
	int rc = 0;
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	for (int i = 0; i < n; i++)
		if (!(out[i] = tmpfile())) {
			fprintf(stderr, "kvsim: tmpfile: %s\n", strerror(errno));
			return 3;
		}
	if (jobs > n)
		jobs = n;
	if (jobs > 1)
		rc = run_workers(n, jobs, fn, ctx, out);
	else
		for (int i = 0; !rc && i < n; i++)
			rc = fn(ctx, i, out[i]);
	for (int i = 0; i < n; i++)
		if (fflush(out[i]) == 0)
			rewind(out[i]);
	return rc;
}

/* --- does P/D pay? ------------------------------------------------------ */

void plan_pd_verdict(const struct plan *p, const struct answer *split,
		     const struct answer *coloc, cJSON *a, FILE *out)
{
	const struct fig *s = &split->f, *c = &coloc->f;
	if (!split->ok && !coloc->ok) {
		cJSON_AddNullToObject(a, "pd_pays");
		if (out)
			fprintf(out, "P/D or colocated: neither meets the SLOs\n");
		return;
	}
	if (!split->ok || !coloc->ok) {
		cJSON_AddBoolToObject(a, "pd_pays", split->ok);
		if (out)
			fprintf(out, "%s: %s meets the SLOs, %s does not\n",
				split->ok ? "P/D pays" : "P/D does not pay",
				split->ok ? "a split" : "the colocated layout",
				split->ok ? "the colocated layout" : "any split");
		return;
	}
	/* both meet them: on --gpus-total's GPUs the goodput, else the cost */
	double gain = 0;
	int pays;
	if (p->total || s->cost == c->cost) {
		gain = c->goodput > 0 ? (s->goodput - c->goodput) / c->goodput : 0;
		pays = s->goodput > c->goodput;
		if (out)
			fprintf(out, "%s: goodput %.2f req/s split against %.2f colocated%s (%+.1f%%)\n",
				pays ? "P/D pays" : "P/D does not pay", s->goodput, c->goodput,
				p->total ? ", the same GPUs" : ", at the same cost", 100 * gain);
	} else {
		gain = c->cost > 0 ? (c->cost - s->cost) / c->cost : 0;
		pays = s->cost < c->cost;
		if (out)
			fprintf(out, "%s: %.0f GPUs split ($%.2f/h) against %.0f colocated ($%.2f/h), "
				     "%.1f%% %s per hour\n",
				pays ? "P/D pays" : "P/D does not pay", s->gpus, s->cost, c->gpus,
				c->cost, 100 * fabs(gain), pays ? "less" : "more");
	}
	cJSON_AddBoolToObject(a, "pd_pays", pays);
	cJSON_AddNumberToObject(a, "pd_gain", gain);
}

/* --- the ranking -------------------------------------------------------- */

/* 1 when a ranks below b (plan_rank_order). */
static int ranks_below(const struct plan *p, const struct answer *a, const struct answer *b)
{
	if (!a->ok || !b->ok)
		return !a->ok && b->ok;
	double x = p->by_rate ? b->tokens_per_dollar : p->pd && p->total ? b->good_per_dollar
									  : a->f.cost;
	double y = p->by_rate ? a->tokens_per_dollar : p->pd && p->total ? a->good_per_dollar
									  : b->f.cost;
	return x > y || (x == y && a->f.goodput < b->f.goodput);
}

void plan_rank_order(const struct plan *p, const struct answer *res, int n, int *order)
{
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) /* insertion sort: stable, n is small */
		for (int j = i; j > 0 && ranks_below(p, &res[order[j - 1]], &res[order[j]]); j--) {
			int t = order[j - 1];
			order[j - 1] = order[j];
			order[j] = t;
		}
}

/* Answer r's value as the table shows it: nodes, a rate, a split. */
static void answer_text(const struct plan *p, const struct answer *r, char *buf, size_t len)
{
	if (!r->ok)
		snprintf(buf, len, "none");
	else if (p->pd && r->coloc)
		snprintf(buf, len, "%.0f nodes", r->f.gpus / p->tp_d);
	else if (p->pd)
		snprintf(buf, len, "%d + %d", r->f.pr, r->f.de);
	else
		snprintf(buf, len, "%.6g", r->value);
}

/* USD per million output tokens: cost per hour over output tokens per
 * hour; NaN when unpriced or nothing came out. */
static double usd_per_m(const struct answer *r)
{
	return r->ok && r->f.tokens_per_s > 0 ? r->f.cost / (r->f.tokens_per_s * 3600) * 1e6 : NAN;
}

cJSON *plan_ranking(const struct plan *p, const struct answer *res, int n, int print)
{
	int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
	cJSON *arr = cJSON_CreateArray();
	if (!order)
		return arr;
	plan_rank_order(p, res, n, order);
	int wg = 10, wp = 6;
	for (int i = 0; i < n; i++) {
		if ((int)strlen(res[i].label) > wg)
			wg = (int)strlen(res[i].label);
		if (res[i].policy && (int)strlen(res[i].policy) > wp)
			wp = (int)strlen(res[i].policy);
	}
	const char *what = p->pd ? "answer" : p->by_rate ? "rate" : "nodes";
	if (print)
		printf("%-4s %-*s %-*s %10s %10s %10s %13s  %s\n", "rank", wp, "policy", wg, "gpu",
		       what, "$/hour", "$/M out", "goodput/s", "bound by");
	for (int i = 0; i < n; i++) {
		const struct answer *r = &res[order[i]];
		char ans[64], bind[400];
		answer_text(p, r, ans, sizeof ans);
		plan_bind_text(&r->bind, bind, sizeof bind);
		char cost[32], per_m[32];
		snprintf(cost, sizeof cost, isnan(r->f.cost) ? "n/a" : "%.2f", r->f.cost);
		snprintf(per_m, sizeof per_m, isnan(usd_per_m(r)) ? "n/a" : "%.4f", usd_per_m(r));
		if (print && r->ok)
			printf("%-4d %-*s %-*s %10s %10s %10s %13.2f  %s\n", i + 1, wp,
			       r->policy ? r->policy : "-", wg, r->label, ans, cost, per_m, r->f.goodput,
			       bind);
		else if (print)
			printf("%-4s %-*s %-*s %10s %10s %10s %13s  %s\n", "-", wp,
			       r->policy ? r->policy : "-", wg, r->label, ans, "", "", "", bind);
		cJSON *o = cJSON_CreateObject();
		if (r->ok)
			cJSON_AddNumberToObject(o, "rank", i + 1);
		else
			cJSON_AddNullToObject(o, "rank");
		if (r->policy)
			cJSON_AddStringToObject(o, "policy", r->policy);
		cJSON_AddStringToObject(o, "gpu", r->label);
		if (p->pd)
			cJSON_AddStringToObject(o, "layout", r->coloc ? "colocated" : "pd");
		cJSON_AddBoolToObject(o, "met", r->ok);
		if (r->ok) {
			if (p->pd && !r->coloc) {
				cJSON_AddNumberToObject(o, "prefill", r->f.pr);
				cJSON_AddNumberToObject(o, "decode", r->f.de);
			} else {
				cJSON_AddNumberToObject(o, p->pd ? "nodes" : p->by_rate ? "rate" : "nodes",
							p->pd ? r->f.gpus / p->tp_d : r->value);
			}
			cJSON_AddNumberToObject(o, "gpus", r->f.gpus);
			cJSON_AddNumberToObject(o, "cost_per_hour", r->f.cost);
			cJSON_AddNumberToObject(o, "usd_per_m_output_tokens", usd_per_m(r));
			cJSON_AddNumberToObject(o, "goodput_rps", r->f.goodput);
		}
		cJSON_AddItemToObject(o, "binding", plan_bind_json(&r->bind));
		cJSON_AddItemToArray(arr, o);
	}
	free(order);
	return arr;
}
