/* cells: a comparison's runs, policy x seed x load, in this process or in worker processes. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cells.h"
#include "cli/cli.h"
#include "experiments/capacity.h"
#include "results/metric_table.h"
#include "results/metrics.h"
#include "results/report.h"
#include "results/verdict.h"
#include "results/writer.h"
#include "base/afile.h"
#include "sim/sim.h"
#include "workloads/registry.h"

int cmp_n_seeds(const struct cmp_grid *g)
{
	return g->n_seeds > 0 ? g->n_seeds : 1;
}

int cmp_n_cells(const struct cmp_grid *g)
{
	return g->n_pol * cmp_n_seeds(g) * (1 + g->n_rates);
}

int cmp_cell(const struct cmp_grid *g, int p, int s, int r)
{
	return (p * cmp_n_seeds(g) + s) * (1 + g->n_rates) + r;
}

int cmp_cell_skipped(const struct cmp_grid *g, int i)
{
	return g->same_r > 0 && i % (1 + g->n_rates) == g->same_r;
}

int cmp_parse_seeds(struct cmp_grid *g, const char *v)
{
	char *end;
	g->n_seeds = 0;
	if (!*v)
		return -1;
	if (!strchr(v, ',') && !strchr(v, '-')) { /* N: seeds 1..N */
		long long n = strtoll(v, &end, 10);
		if (*end || n < 1 || n > CMP_MAX_SEEDS)
			return -1;
		for (long long i = 1; i <= n; i++)
			g->seeds[g->n_seeds++] = i;
		return 0;
	}
	const char *dash = strchr(v, '-');
	if (dash && !strchr(v, ',')) { /* a-b */
		long long a = strtoll(v, &end, 10);
		if (end != dash || dash[1] < '0' || dash[1] > '9')
			return -1;
		long long b = strtoll(dash + 1, &end, 10);
		if (*end || a < 0 || b < a || b - a >= CMP_MAX_SEEDS)
			return -1;
		for (long long i = a; i <= b; i++)
			g->seeds[g->n_seeds++] = i;
		return 0;
	}
	for (const char *p = v;;) { /* a,b,c */
		if (*p < '0' || *p > '9' || g->n_seeds == CMP_MAX_SEEDS)
			return -1;
		long long x = strtoll(p, &end, 10);
		for (int i = 0; i < g->n_seeds; i++)
			if (g->seeds[i] == x)
				return -1;
		g->seeds[g->n_seeds++] = x;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
		p = end + 1;
	}
}

int cmp_parse_rates(struct cmp_grid *g, const char *v)
{
	char *end;
	g->n_rates = 0;
	for (const char *p = v;;) {
		if (g->n_rates == CMP_MAX_RATES || !*p || *p == ' ')
			return -1;
		double x = strtod(p, &end);
		if (end == p || !isfinite(x) || x <= 0 || (g->n_rates && x <= g->rates[g->n_rates - 1]))
			return -1;
		g->rates[g->n_rates++] = x;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
		p = end + 1;
	}
}

int cmp_rate_path(struct cmp_grid *g, const cJSON *base, char *err, size_t errlen)
{
	const cJSON *wl = cJSON_GetObjectItemCaseSensitive(base, "workload");
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(wl, "kind");
	const struct wl_ops *ops = wl_find(cJSON_IsString(kind) ? kind->valuestring : "chat");
	if (!ops || !ops->rate_key) {
		snprintf(err, errlen, "--rates: workload kind \"%s\" has no rate key of its own",
			 ops ? ops->name : "?");
		return -1;
	}
	snprintf(g->rate_path, sizeof g->rate_path, "workload.%s", ops->rate_key);
	/* the load curve: the rates, and the scenario's own where it names one */
	const cJSON *own = cJSON_GetObjectItemCaseSensitive(wl, ops->rate_key);
	int has_own = cJSON_IsNumber(own) && own->valuedouble > 0, placed = !has_own;
	g->n_pts = g->same_r = 0;
	for (int r = 1; r <= g->n_rates; r++) {
		double x = g->rates[r - 1];
		if (!placed && own->valuedouble <= x) {
			placed = 1;
			if (own->valuedouble == x) {
				g->same_r = r;
				g->pt_rate[g->n_pts] = x;
				g->pt_r[g->n_pts++] = 0;
				continue;
			}
			g->pt_rate[g->n_pts] = own->valuedouble;
			g->pt_r[g->n_pts++] = 0;
		}
		g->pt_rate[g->n_pts] = x;
		g->pt_r[g->n_pts++] = r;
	}
	if (!placed) {
		g->pt_rate[g->n_pts] = own->valuedouble;
		g->pt_r[g->n_pts++] = 0;
	}
	return 0;
}

static void cell_dir(const struct cmp_grid *g, const char *out, int p, int s, int r, char *buf,
		     size_t len)
{
	int n = snprintf(buf, len, "%s/%s", out, g->names[p]);
	if (r > 0 && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "/rate-%g", g->rates[r - 1]);
	if (s > 0 && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "/seed-%lld", g->seeds[s]);
}

/* Cell (p, s, r)'s scenario tree: base with its policy, seed and load.
 * NULL when out of memory. */
static cJSON *cell_tree(const cJSON *base, const struct cmp_grid *g, int p, int s, int r)
{
	char err[256];
	cJSON *root = cJSON_Duplicate(base, 1);
	if (!root)
		return NULL;
	cli_select_policy(root, g->names[p], err, sizeof err);
	if (g->n_seeds > 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(root, "seed");
		cJSON_AddNumberToObject(root, "seed", (double)g->seeds[s]);
	}
	if (r > 0) {
		cJSON *wl = cJSON_GetObjectItemCaseSensitive(root, "workload");
		const char *key = g->rate_path + strlen("workload.");
		cJSON_DeleteItemFromObjectCaseSensitive(wl, key);
		cJSON_AddNumberToObject(wl, key, g->rates[r - 1]);
	}
	return root;
}

static int run_cell(const struct cli_common *o, const cJSON *base, const struct cmp_grid *g,
		    int i, const char *out, struct afile_set *set, struct met_summary *sum,
		    int progress)
{
	int r = i % (1 + g->n_rates), ps = i / (1 + g->n_rates);
	int s = ps % cmp_n_seeds(g), p = ps / cmp_n_seeds(g);
	char dir[4096], err[1024];
	cell_dir(g, out, p, s, r, dir, sizeof dir);
	cJSON *root = cell_tree(base, g, p, s, r);
	struct scenario sc;
	if (!root || cli_load_scenario(o, root, &sc)) {
		cJSON_Delete(root);
		return CLI_USAGE;
	}
	cJSON_Delete(root);
	int main_cell = r == 0 && s == 0;
	struct sim_opts so = {.out_dir = dir, .progress = progress,
			      .trace_events = main_cell ? o->trace_events : NULL,
			      .audit = o->audit, .result_set = main_cell ? set : NULL};
	int rc = sim_run(&sc, &so, sum, err, sizeof err);
	cfg_scenario_free(&sc);
	if (rc > CLI_INTERNAL)
		return rc;
	if (rc) {
		if (main_cell)
			fprintf(stderr, "kvsim: %s\n", err);
		else
			fprintf(stderr, "kvsim: %s: %s\n", dir, err);
		return rc == 2 ? CLI_USAGE : CLI_INTERNAL;
	}
	if (sum->skipped_lines && main_cell)
		fprintf(stderr, "kvsim: skipped %llu bad trace lines (skip_bad); the first: %s\n",
			(unsigned long long)sum->skipped_lines, sum->skipped_first);
	if (sum->warning[0] && main_cell)
		fprintf(stderr, "kvsim: warning: %s\n", sum->warning);
	return CLI_OK;
}

/* A worker's summary travels through an unlinked temporary file: the
 * struct, then its nodes and pools (its other pointers name static
 * strings, the same in the worker as here). */
static int put_summary(FILE *f, const struct met_summary *m)
{
	return fwrite(m, sizeof *m, 1, f) != 1 ||
	       (m->n_nodes && fwrite(m->nodes, sizeof *m->nodes, m->n_nodes, f) != m->n_nodes) ||
	       (m->n_pools && fwrite(m->pools, sizeof *m->pools, m->n_pools, f) != m->n_pools) ||
	       fflush(f)
		   ? -1
		   : 0;
}

static int get_summary(FILE *f, struct met_summary *m)
{
	rewind(f);
	if (fread(m, sizeof *m, 1, f) != 1) {
		memset(m, 0, sizeof *m);
		return -1;
	}
	m->nodes = m->n_nodes ? malloc(m->n_nodes * sizeof *m->nodes) : NULL;
	m->pools = m->n_pools ? malloc(m->n_pools * sizeof *m->pools) : NULL;
	if ((m->n_nodes && (!m->nodes || fread(m->nodes, sizeof *m->nodes, m->n_nodes, f) !=
						      m->n_nodes)) ||
	    (m->n_pools && (!m->pools || fread(m->pools, sizeof *m->pools, m->n_pools, f) !=
						      m->n_pools))) {
		met_summary_free(m);
		return -1;
	}
	return 0;
}

/* A worker takes the next task not yet taken (next: a counter shared by
 * the workers), so a slow task does not hold back the ones after it; each
 * result waits in files[i]. The exit status: the first task's failure,
 * else 0. Which worker runs a task changes nothing in its results. */
static void worker(int n, cmp_task_fn fn, void *ctx, FILE **files, int *next)
{
	int rc = 0;
	for (int i; !rc && !intr_caught() && (i = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED)) < n;) {
		if (!files[i])
			continue;
		struct met_summary m;
		rc = fn(ctx, i, &m);
		if (rc == CLI_OK) {
			if (put_summary(files[i], &m))
				rc = CLI_INTERNAL;
			met_summary_free(&m);
		}
	}
	fflush(stderr);
	_exit(intr_caught() ? 128 + intr_caught() : rc);
}

int cmp_run_parallel(int n, int jobs, cmp_task_fn fn, void *ctx, const unsigned char *skip,
		     struct met_summary *sums)
{
	int rc = CLI_OK, started = 0, n_tasks = 0;
	for (int i = 0; i < n; i++)
		n_tasks += !(skip && skip[i]);
	if (jobs > n_tasks)
		jobs = n_tasks;
	FILE **files = calloc((size_t)n + 1, sizeof *files);
	pid_t *pids = calloc((size_t)jobs + 1, sizeof *pids), parent = getpid();
	int *next = mmap(NULL, sizeof *next, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			 -1, 0);
	if (next == MAP_FAILED)
		next = NULL;
	else
		*next = 0;
	for (int i = 0; files && i < n; i++)
		if (!(skip && skip[i]) && !(files[i] = tmpfile()))
			rc = CLI_INTERNAL;
	if (!files || !pids || !next)
		rc = CLI_INTERNAL;
	fflush(stdout);
	fflush(stderr);
	for (; rc == CLI_OK && started < jobs; started++) {
		pids[started] = fork();
		if (pids[started] < 0) {
			fprintf(stderr, "kvsim: fork: %s\n", strerror(errno));
			rc = CLI_INTERNAL;
			break;
		}
		if (pids[started] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM); /* a worker ends with the comparison */
			if (getppid() != parent)
				_exit(128 + SIGTERM);
			worker(n, fn, ctx, files, next);
		}
	}
	for (int k = 0; k < started; k++) {
		int st;
		while (waitpid(pids[k], &st, 0) < 0 && errno == EINTR)
			for (int j = k; j < started; j++)
				kill(pids[j], SIGTERM);
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : CLI_INTERNAL;
		if (code && rc == CLI_OK)
			rc = code;
	}
	for (int i = 0; rc == CLI_OK && i < n; i++)
		if (files[i] && get_summary(files[i], &sums[i])) {
			fprintf(stderr, "kvsim: a worker's result was lost\n");
			rc = CLI_INTERNAL;
		}
	for (int i = 0; files && i < n; i++)
		if (files[i])
			fclose(files[i]);
	free(files);
	free(pids);
	if (next)
		munmap(next, sizeof *next);
	return intr_caught() ? 128 + intr_caught() : rc;
}

/* A comparison's cells as parallel tasks. */
struct cell_ctx {
	const struct cli_common *o;
	const cJSON *base;
	const struct cmp_grid *g;
	const char *out;
};

static int cell_task(void *ctx, int i, struct met_summary *m)
{
	const struct cell_ctx *c = ctx;
	const struct cmp_grid *g = c->g;
	int rc = run_cell(c->o, c->base, g, i, c->out, NULL, m, 0);
	if (rc == CLI_OK && !c->o->quiet) {
		int r = i % (1 + g->n_rates), ps = i / (1 + g->n_rates);
		char dir[4096];
		cell_dir(g, "", ps / cmp_n_seeds(g), ps % cmp_n_seeds(g), r, dir, sizeof dir);
		fprintf(stderr, "[%d/%d] %s: done\n", i + 1, cmp_n_cells(g), dir + 1);
	}
	return rc;
}

static int run_pool(const struct cli_common *o, const cJSON *base, const struct cmp_grid *g,
		    const char *out, struct met_summary *sums)
{
	int n = cmp_n_cells(g);
	unsigned char *skip = calloc((size_t)n, 1);
	if (!skip)
		return CLI_INTERNAL;
	for (int i = 0; i < n; i++)
		skip[i] = (unsigned char)cmp_cell_skipped(g, i);
	struct cell_ctx c = {o, base, g, out};
	int rc = cmp_run_parallel(n, g->jobs, cell_task, &c, skip, sums);
	free(skip);
	return rc;
}

int cmp_run(const struct cli_common *o, const cJSON *base, const struct cmp_grid *g,
	    const char *out, struct afile_set *set, struct met_summary *sums)
{
	int n = cmp_n_cells(g);
	if (g->jobs > 1 && n > 1)
		return run_pool(o, base, g, out, sums);
	int rc = CLI_OK;
	for (int i = 0; i < n && rc == CLI_OK; i++) {
		int r = i % (1 + g->n_rates), ps = i / (1 + g->n_rates);
		int s = ps % cmp_n_seeds(g), p = ps / cmp_n_seeds(g);
		if (cmp_cell_skipped(g, i))
			continue;
		if (!o->quiet) {
			if (n == g->n_pol)
				fprintf(stderr, "[%d/%d] %s\n", p + 1, g->n_pol, g->names[p]);
			else {
				char dir[4096];
				cell_dir(g, "", p, s, r, dir, sizeof dir);
				fprintf(stderr, "[%d/%d] %s\n", i + 1, n, dir + 1);
			}
		}
		rc = run_cell(o, base, g, i, out, set, &sums[i], !o->quiet);
	}
	return rc;
}

/* Whether summary m was steady: its summary.json's "steady" (a boolean, or
 * an object whose "steady" is one) when it says; else 1. */
static int steady_of(const struct met_summary *m)
{
	cJSON *j = res_summary_json(m);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "steady");
	if (cJSON_IsObject(st))
		st = cJSON_GetObjectItemCaseSensitive(st, "steady");
	int steady = cJSON_IsBool(st) ? cJSON_IsTrue(st) : 1;
	cJSON_Delete(j);
	return steady;
}

/* Policy p's load curve over the points (g->pt_rate): each figure the
 * median over the seeds. pts has g->n_pts entries. */
static void load_curve(const struct cmp_grid *g, const struct met_summary *sums, int p,
		       struct cap_point *pts)
{
	int ns = cmp_n_seeds(g);
	double x[4][CMP_MAX_SEEDS], lo, hi;
	for (int k = 0; k < g->n_pts; k++) {
		struct cap_point *c = &pts[k];
		int r = g->pt_r[k];
		memset(c, 0, sizeof *c);
		c->rate = g->pt_rate[k];
		c->completed = c->steady = 1;
		for (int s = 0; s < ns; s++) {
			const struct met_summary *m = &sums[cmp_cell(g, p, s, r)];
			x[0][s] = m->ttft.p99;
			x[1][s] = m->tpot.n ? m->tpot.p99 : -1;
			x[2][s] = m->slo_attainment;
			x[3][s] = m->arrived ? (double)(m->shed + m->failed) / (double)m->arrived : 0;
			c->completed &= m->completed > 0;
			c->steady &= steady_of(m);
		}
		cap_spread(x[0], (size_t)ns, &lo, &c->ttft_p99_s, &hi);
		cap_spread(x[1], (size_t)ns, &lo, &c->tpot_p99_s, &hi);
		cap_spread(x[2], (size_t)ns, &lo, &c->attainment, &hi);
		cap_spread(x[3], (size_t)ns, &lo, &c->lost_frac, &hi);
	}
}

static cJSON *curve_json(const struct cap_point *pts, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; a && i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "rate", pts[i].rate);
		cJSON_AddNumberToObject(o, "ttft_p99_s", pts[i].ttft_p99_s);
		if (pts[i].tpot_p99_s >= 0)
			cJSON_AddNumberToObject(o, "tpot_p99_s", pts[i].tpot_p99_s);
		else
			cJSON_AddNullToObject(o, "tpot_p99_s");
		cJSON_AddNumberToObject(o, "attainment", pts[i].attainment);
		cJSON_AddNumberToObject(o, "lost_ratio", pts[i].lost_frac);
		cJSON_AddBoolToObject(o, "steady", pts[i].steady);
		cJSON_AddBoolToObject(o, "meets", pts[i].meets);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* The "seeds" object of policy p: the seeds and each run figure of the
 * comparison table's min, median and max over them. */
static cJSON *seeds_json(const struct cmp_grid *g, const struct met_summary *sums, int p)
{
	cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "seeds");
	for (int s = 0; s < g->n_seeds; s++)
		cJSON_AddItemToArray(list, cJSON_CreateNumber((double)g->seeds[s]));
	cJSON *figs = cJSON_AddObjectToObject(o, "figures");
	size_t it = 0;
	double x[CMP_MAX_SEEDS], lo, med, hi;
	for (const struct res_metric *m; (m = res_metric_next(NULL, RES_LIST_TABLE, &it));) {
		if (m->scope != RES_SCOPE_RUN || !strncmp(m->path, "perf.", 5))
			continue;
		int s = 0;
		for (; s < g->n_seeds; s++) {
			x[s] = res_metric_value(m, &sums[cmp_cell(g, p, s, 0)]);
			if (!isfinite(x[s]))
				break;
		}
		if (s < g->n_seeds)
			continue; /* a name, or a figure some seed has none of */
		cap_spread(x, (size_t)g->n_seeds, &lo, &med, &hi);
		cJSON *f = cJSON_AddObjectToObject(figs, m->path);
		cJSON_AddNumberToObject(f, "min", lo);
		cJSON_AddNumberToObject(f, "median", med);
		cJSON_AddNumberToObject(f, "max", hi);
	}
	return o;
}

int cmp_seed_spread(const void *ctx, const struct res_metric *m, size_t p,
		    struct res_spread *out)
{
	const struct cmp_spread_ctx *c = ctx;
	const struct cmp_grid *g = c->g;
	if (g->n_seeds < 2 || p >= (size_t)g->n_pol)
		return -1;
	double x[CMP_MAX_SEEDS];
	for (int s = 0; s < g->n_seeds; s++) {
		x[s] = res_metric_value(m, &c->sums[cmp_cell(g, (int)p, s, 0)]);
		if (!isfinite(x[s]))
			return -1;
	}
	cap_spread(x, (size_t)g->n_seeds, &out->min, &out->median, &out->max);
	return 0;
}

int cmp_annotate(const struct cmp_grid *g, const struct met_summary *sums, cJSON *cmp,
		 const char *out, char *err, size_t errlen)
{
	cJSON *cap = NULL, *caps = NULL, *curves = NULL;
	if (g->n_rates) {
		cap = cJSON_CreateObject();
		cJSON_AddStringToObject(cap, "rate_key", g->rate_path);
		cJSON *rates = cJSON_AddArrayToObject(cap, "rates");
		for (int k = 0; k < g->n_pts; k++)
			cJSON_AddItemToArray(rates, cJSON_CreateNumber(g->pt_rate[k]));
		cJSON *seeds = cJSON_AddArrayToObject(cap, "seeds");
		for (int s = 0; s < cmp_n_seeds(g); s++)
			cJSON_AddItemToArray(seeds, cJSON_CreateNumber(
							g->n_seeds ? (double)g->seeds[s]
								   : (double)sums[0].seed));
		cJSON *slo = cJSON_AddObjectToObject(cap, "slo");
		cJSON_AddNumberToObject(slo, "ttft_p99_s", sums[0].slo_ttft_s);
		cJSON_AddNumberToObject(slo, "tpot_p99_s", sums[0].slo_tpot_s);
		caps = cJSON_AddObjectToObject(cap, "capacity");
		curves = cJSON_AddObjectToObject(cap, "curves");
	}
	for (int p = 0; p < g->n_pol; p++) {
		cJSON *col = cJSON_GetArrayItem(cmp, p);
		if (g->n_seeds > 1)
			cJSON_AddItemToObject(col, "seeds", seeds_json(g, sums, p));
		if (!g->n_rates)
			continue;
		struct cap_point pts[CMP_MAX_RATES + 1];
		load_curve(g, sums, p, pts);
		int at = cap_capacity(pts, (size_t)g->n_pts, sums[0].slo_ttft_s,
				      sums[0].slo_tpot_s);
		cJSON *c = cJSON_AddObjectToObject(col, "capacity");
		cJSON_AddStringToObject(c, "rate_key", g->rate_path);
		if (at >= 0) {
			cJSON_AddNumberToObject(c, "rate", pts[at].rate);
			cJSON_AddNumberToObject(caps, g->names[p], pts[at].rate);
		} else {
			cJSON_AddNullToObject(c, "rate");
			cJSON_AddNullToObject(caps, g->names[p]);
		}
		cJSON_AddItemToObject(c, "curve", curve_json(pts, g->n_pts));
		cJSON_AddItemToObject(curves, g->names[p], curve_json(pts, g->n_pts));
	}
	int rc = 0;
	if (cap) {
		char path[4200];
		snprintf(path, sizeof path, "%s/capacity.json", out);
		rc = res_write_json(path, cap, err, errlen);
		cJSON_Delete(cap);
	}
	return rc;
}

static void print_cell(char *buf, size_t len, const struct res_metric *m, double x)
{
	double u = m->unit > 0 ? m->unit : 1;
	snprintf(buf, len, "%.*f", m->decimals, x / u);
}

void cmp_print_seeds_table(FILE *f, const struct cmp_grid *g, const struct met_summary *sums)
{
	fprintf(f, "median over seeds");
	for (int s = 0; s < g->n_seeds; s++)
		fprintf(f, "%s%lld", s ? "," : " ", g->seeds[s]);
	fprintf(f, " (range)\n%-28s", "");
	for (int p = 0; p < g->n_pol; p++)
		fprintf(f, p + 1 < g->n_pol ? "  %-28s" : "  %s", g->names[p]);
	fputc('\n', f);
	size_t it = 0;
	double x[CMP_MAX_SEEDS], lo, med, hi;
	for (const struct res_metric *m; (m = res_metric_next(NULL, RES_LIST_TABLE, &it));) {
		if (m->scope != RES_SCOPE_RUN || !res_metric_shown(m, &sums[0], 1) ||
		    !strncmp(m->path, "perf.", 5)) /* wall time: not a result */
			continue;
		char row[64 * 40];
		size_t used = (size_t)snprintf(row, sizeof row, "%-28s", m->name);
		int any = 0;
		for (int p = 0; p < g->n_pol; p++) {
			char cell[128] = "n/a", a[32], b[32], c[32];
			int s = 0;
			for (; s < g->n_seeds; s++)
				if (!isfinite(x[s] = res_metric_value(m, &sums[cmp_cell(g, p, s, 0)])))
					break;
			if (s == g->n_seeds) {
				cap_spread(x, (size_t)g->n_seeds, &lo, &med, &hi);
				print_cell(a, sizeof a, m, med);
				print_cell(b, sizeof b, m, lo);
				print_cell(c, sizeof c, m, hi);
				snprintf(cell, sizeof cell, "%s (%s-%s)", a, b, c);
				any = 1;
			}
			if (used < sizeof row)
				used += (size_t)snprintf(row + used, sizeof row - used, "  %-28s", cell);
		}
		while (used > 0 && used < sizeof row && row[used - 1] == ' ')
			row[--used] = 0;
		if (any)
			fprintf(f, "%s\n", row);
	}
}

void cmp_print_capacity(FILE *f, const struct cmp_grid *g, const struct met_summary *sums)
{
	fprintf(f, "\ncapacity: the highest %s at which TTFT p99 <= %g ms and TPOT p99 <= %g ms,\n"
		   "at most 0.1%% shed or failed, and steady, at it and every lower load%s\n",
		g->rate_path, sums[0].slo_ttft_s * 1e3, sums[0].slo_tpot_s * 1e3,
		g->n_seeds > 1 ? "; medians over the seeds" : "");
	fprintf(f, "%-20s", "TTFT p99 (ms) at");
	for (int k = 0; k < g->n_pts; k++)
		fprintf(f, " %9g", g->pt_rate[k]);
	fprintf(f, "  capacity\n");
	for (int p = 0; p < g->n_pol; p++) {
		struct cap_point pts[CMP_MAX_RATES + 1];
		load_curve(g, sums, p, pts);
		int at = cap_capacity(pts, (size_t)g->n_pts, sums[0].slo_ttft_s,
				      sums[0].slo_tpot_s);
		fprintf(f, "%-20s", g->names[p]);
		for (int k = 0; k < g->n_pts; k++) {
			char cell[32];
			snprintf(cell, sizeof cell, "%.1f%s", pts[k].ttft_p99_s * 1e3,
				 pts[k].meets ? " " : !pts[k].steady ? "*" : "!");
			fprintf(f, " %9s", cell);
		}
		if (at >= 0)
			fprintf(f, "  %g%s\n", pts[at].rate, at + 1 < g->n_pts ? "" : " or more");
		else
			fprintf(f, "  below %g\n", pts[0].rate);
	}
	fprintf(f, "(* not steady; ! steady but over an SLO or losing requests; TPOT p99 and "
		   "each point's figures in capacity.json)\n");
}

int cmp_plot_capacity(const struct cmp_grid *g, const struct met_summary *sums, const char *out,
		      struct report_figs *figs, char *err, size_t errlen)
{
	char path[4200], names[64 * 50] = "";
	snprintf(path, sizeof path, "%s/plots", out);
	if (res_mkdirs(path, err, errlen))
		return 3;
	snprintf(path, sizeof path, "%s/plots/latency_load.dat", out);
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 3;
	}
	size_t used = 0;
	for (int p = 0; p < g->n_pol; p++) {
		struct cap_point pts[CMP_MAX_RATES + 1];
		load_curve(g, sums, p, pts);
		int at = cap_capacity(pts, (size_t)g->n_pts, sums[0].slo_ttft_s,
				      sums[0].slo_tpot_s);
		/* a header per block: gnuplot takes each block's first line as one */
		fprintf(f, "%srate,ttft_p99_s,tpot_p99_s,capacity_ttft_p99_s\n", p ? "\n\n" : "");
		for (int r = 0; r < g->n_pts; r++) {
			fprintf(f, "%.9g,%.9g,", pts[r].rate, pts[r].ttft_p99_s);
			if (pts[r].tpot_p99_s >= 0)
				fprintf(f, "%.9g,", pts[r].tpot_p99_s);
			else
				fputs("NaN,", f);
			if (r == at)
				fprintf(f, "%.9g\n", pts[r].ttft_p99_s);
			else
				fputs("NaN\n", f);
		}
		if (used < sizeof names)
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
						 p ? " " : "", g->names[p]);
	}
	if (fclose(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 3;
	}
	return res_plot_capacity(out, g->rate_path, names, sums[0].slo_ttft_s, sums[0].slo_tpot_s,
				 figs, err, errlen);
}

void cmp_capacity_verdict(const struct cmp_grid *g, const struct met_summary *sums, int baseline,
			  char *buf, size_t len, cJSON *verdict)
{
	int at[64], top = -1;
	double rate[64];
	for (int p = 0; p < g->n_pol && p < 64; p++) {
		struct cap_point pts[CMP_MAX_RATES + 1];
		load_curve(g, sums, p, pts);
		at[p] = cap_capacity(pts, (size_t)g->n_pts, sums[0].slo_ttft_s, sums[0].slo_tpot_s);
		rate[p] = at[p] >= 0 ? pts[at[p]].rate : NAN;
		if (at[p] > top)
			top = at[p];
	}
	int n = g->n_pol < 64 ? g->n_pol : 64, b = baseline >= 0 && baseline < n ? baseline : 0;
	/* best: every column within one load step of the highest capacity (the
	 * grid's precision, and what seeds 1-3 move the default scenario's
	 * capacities by: docs/outputs.md, The verdict) */
	size_t used = (size_t)snprintf(buf, len,
				       "Capacity, the highest %s meeting the SLOs while steady "
				       "(tried %g to %g%s): ",
				       g->rate_path, g->pt_rate[0], g->pt_rate[g->n_pts - 1],
				       g->n_seeds > 1 ? ", medians over the seeds" : "");
	int named = 0, base_best = 0;
	cJSON *best = cJSON_CreateArray();
	for (int p = 0; p < n; p++) {
		if (top < 0 || at[p] < top - 1)
			continue;
		named++;
		base_best |= p == b;
		cJSON_AddItemToArray(best, cJSON_CreateString(g->names[p]));
	}
	for (int p = 0, k = 0; p < n && used < len; p++) {
		if (top < 0 || at[p] < top - 1)
			continue;
		k++;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", k == 1 ? "" : k == named ? " and " : ", ",
					 g->names[p]);
	}
	int material = top >= 0 && !base_best && top - at[b] >= 2;
	double change = at[b] >= 0 && top >= 0 ? g->pt_rate[top] / rate[b] - 1 : NAN;
	if (used < len) {
		if (top < 0)
			used += (size_t)snprintf(buf + used, len - used,
						 "no column meets them at %g", g->pt_rate[0]);
		else if (base_best)
			used += (size_t)snprintf(buf + used, len - used,
						 "%s highest, the baseline among them: no material "
						 "difference from it",
						 named > 1 ? " tie within one load step as the" : " the");
		else if (at[b] < 0)
			used += (size_t)snprintf(buf + used, len - used,
						 "%s highest, where %s meets them at no load tried, material",
						 named > 1 ? " tie within one load step as the" : " the",
						 g->names[b]);
		else
			used += (size_t)snprintf(buf + used, len - used,
						 "%s highest, %+.0f%% against %s (%g), %s",
						 named > 1 ? " tie within one load step as the" : " the",
						 100 * change, g->names[b], rate[b],
						 material ? "material" : "within one load step");
	}
	for (int p = 0; p < n && used < len; p++) {
		char fig[48];
		if (at[p] >= 0)
			snprintf(fig, sizeof fig, at[p] + 1 < g->n_pts ? "%g" : "%g or more", rate[p]);
		else
			snprintf(fig, sizeof fig, "below %g", g->pt_rate[0]);
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s", p ? ", " : "; each: ",
					 g->names[p], fig);
	}
	if (used < len)
		snprintf(buf + used, len - used, ".");
	if (!verdict) {
		cJSON_Delete(best);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "figure", "capacity");
	cJSON_AddItemToObject(o, "best", best);
	if (isnan(change))
		cJSON_AddNullToObject(o, "change");
	else
		cJSON_AddNumberToObject(o, "change", change);
	cJSON_AddBoolToObject(o, "material", material || (top >= 0 && at[b] < 0));
	cJSON_InsertItemInArray(verdict, 0, o);
}
