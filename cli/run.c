/* run: `kvsim run`, `kvsim compare` and `kvsim validate`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cells.h"
#include "cli/cli.h"
#include "policies/policy.h"
#include "results/attribution.h"
#include "results/metrics.h"
#include "results/report.h"
#include "results/verdict.h"
#include "results/writer.h"
#include "base/afile.h"
#include "sim/sim.h"
#include "workloads/schedule.h"

#define ROW_AUDIT                                                                          \
	{OPT_AUDIT, "audit", 0, NULL,                                                       \
	 "check invariants after every event (KV accounting, capacity, clock, token "       \
	 "conservation, request states, where private blocks are cached); stop at the "    \
	 "first violation with exit 3 (slow; for tests and debugging)",                     \
	 NULL, 0}

static const struct cli_opt run_opts[] = {
    CLI_ROW_POLICY("route with policy P (its params: router.policy_params.P)"),
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_OUT("output directory (default: out)"),
    CLI_ROW_CATALOG,
    ROW_AUDIT,
    {OPT_TRACE_EVENTS, "trace-events", 0, "FILE",
     "write a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev) of iterations, KV "
     "transfers and routing decisions (short runs; at most 2,000,000 events)",
     "@file", 0},
    CLI_ROW_QUIET("no progress line and no table"),
    {0},
};
CLI_TABLE_FITS(run_opts);

enum { O_BASELINE = CLI_OPT_OWN, O_FORMAT, O_JOBS, O_SEEDS, O_RATES, O_ATTRIBUTE };

/* compare --format: how the table goes to stdout. */
enum cmp_format { CMP_TEXT, CMP_MD, CMP_CSV, CMP_JSON };
static const char *const cmp_format_names[] = {"text", "md", "csv", "json"};

static const struct cli_opt compare_opts[] = {
    {OPT_POLICIES, "policies", 'p', "a,b,c|all",
     "the policies, or all of 'kvsim list policies'", "@policies", CLI_REQUIRED},
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_OUT("output directory (default: out)"),
    CLI_ROW_CATALOG,
    ROW_AUDIT,
    CLI_ROW_QUIET("no progress lines and no table"),
    {OPT_NO_PERF, "no-perf", 0, NULL,
     "leave the wall-clock perf block out of comparison.json, so that it is "
     "byte-identical between runs (for baselines)",
     NULL, 0},
    {OPT_PLOT, "plot", 0, NULL, "draw the figures into DIR/plots/ (PNG and SVG, with gnuplot)",
     NULL, 0},
    {OPT_REPORT, "report", 0, NULL,
     "--plot, and write DIR/report.md and a self-contained DIR/report.html", NULL, 0},
    {O_BASELINE, "baseline", 0, "POLICY",
     "beside each figure of the other columns, its change in percent against column "
     "POLICY (one of --policies), \"0.052 (-98%)\"; rows that say no better direction "
     "show none; --report's verdict and table compare with it too (there default: the "
     "first)",
     "@policy", 0},
    {O_ATTRIBUTE, "attribute", 0, NULL,
     "run each column whose mechanisms differ from the baseline column's again under the "
     "baseline's mechanisms, and split its change against the baseline into routing and "
     "mechanisms (comparison.json's attribution; --report does this whenever mechanisms "
     "differ)",
     NULL, 0},
    {O_FORMAT, "format", 0, "text|md|csv|json",
     "the printed table: aligned text, the best figure of each row in bold on a terminal "
     "(not when NO_COLOR is set or stdout is not a terminal); a Markdown table, the best "
     "in **bold**; comparison.csv's or comparison.json's content (default: text)",
     "text md csv json", 0},
    {O_SEEDS, "seeds", 0, "N|a-b|a,b,c",
     "run every column over several seeds (N: seeds 1 to N); the table shows each "
     "figure's median and range, \"0.052 (0.049-0.061)\", comparison.json each column's "
     "min, median and max; the first seed's run is the column's (DIR/<policy>/), the "
     "others go to DIR/<policy>/seed-<n>/",
     NULL, 0},
    {O_RATES, "rates", 0, "r1,r2,...",
     "also run every policy at each of these loads (the workload's rate key, as "
     "workload.sessions_per_s for chat), on the same sessions, into "
     "DIR/<policy>/rate-<r>/; report each policy's capacity (the highest load that "
     "meets the SLOs while steady) and load curves, in DIR/capacity.json",
     NULL, 0},
    {O_JOBS, "jobs", 'j', "N",
     "run the cells (columns, seeds, loads) in up to N worker processes, with the same "
     "results (default 1)",
     NULL, 0},
    {0},
};
CLI_TABLE_FITS(compare_opts);

static const struct cli_opt validate_opts[] = {
    CLI_ROW_POLICY("check the scenario under policy P"),
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_CATALOG,
    {0},
};
CLI_TABLE_FITS(validate_opts);

/* One run; its files go into set (NULL: renamed at its end). An interrupt
 * returns 128 + the signal without a message (main prints it). */
static int run_one(const struct cli_common *o, const cJSON *root, const char *out_dir,
		   struct afile_set *set, struct met_summary *sum)
{
	struct scenario s;
	char err[1024];
	if (cli_load_scenario(o, root, &s))
		return CLI_USAGE;
	struct sim_opts so = {.out_dir = out_dir, .progress = !o->quiet,
			      .trace_events = o->trace_events, .audit = o->audit,
			      .result_set = set};
	int rc = sim_run(&s, &so, sum, err, sizeof err);
	cfg_scenario_free(&s);
	if (rc > CLI_INTERNAL)
		return rc;
	if (rc) {
		fprintf(stderr, "kvsim: %s\n", err);
		return rc == 2 ? CLI_USAGE : CLI_INTERNAL;
	}
	if (sum->skipped_lines)
		fprintf(stderr, "kvsim: skipped %llu bad trace lines (skip_bad); the first: %s\n",
			(unsigned long long)sum->skipped_lines, sum->skipped_first);
	if (sum->warning[0])
		fprintf(stderr, "kvsim: warning: %s\n", sum->warning);
	return CLI_OK;
}

static int cmd_run(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_common o;
	int end = cli_parse_common(cx, argc, argv, &o);
	if (end != CLI_END)
		return cli_end_code(end);
	cJSON *root = cli_load_tree_with_policy(&o);
	if (!root)
		return CLI_USAGE;
	const char *out = o.out ? o.out : "out";
	struct met_summary sum;
	int rc = run_one(&o, root, out, NULL, &sum);
	cJSON_Delete(root);
	if (rc)
		return rc;
	if (!o.quiet) {
		res_print_summary(stdout, &sum);
		printf("\nwrote %s/summary.json, %s/bench_serving.json, %s/requests.csv and "
		       "%s/timeseries.csv\n",
		       out, out, out, out);
	}
	met_summary_free(&sum);
	return CLI_OK;
}

/* --policies into names (pointing into list); their count, or -1 after
 * reporting. */
static int policy_names(const struct cli_cmd *cmd, const char *arg, char *list, size_t len,
			const char **names, int cap)
{
	char all[1024];
	if (!strcmp(arg, "all"))
		pol_names(all, sizeof all); /* "a, b, c": cli_list drops the blanks */
	int n = cli_list(cmd, "--policies", "policy names", strcmp(arg, "all") ? arg : all, list,
			 len, names, cap);
	for (int i = 0; i < n; i++) {
		if (!pol_find(names[i])) {
			char known[512];
			pol_names(known, sizeof known);
			fprintf(stderr, "kvsim compare: --policies: unknown policy \"%s\" (known: %s)\n",
				names[i], known);
			return -1;
		}
		for (int j = 0; j < i; j++) {
			if (!strcmp(names[j], names[i])) {
				fprintf(stderr, "kvsim compare: --policies: \"%s\" given twice (each "
						"policy runs once, into DIR/%s)\n",
					names[i], names[i]);
				return -1;
			}
		}
	}
	return n;
}

/* Every policy's scenario must load before any runs. */
static int validate_each(const struct cli_common *o, const cJSON *base, const char **names,
			 int n)
{
	char err[1024];
	for (int i = 0; i < n; i++) {
		cJSON *root = cJSON_Duplicate(base, 1);
		struct scenario s;
		int bad = !root || cli_select_policy(root, names[i], err, sizeof err) ||
			  cli_load_scenario(o, root, &s);
		if (!bad)
			cfg_scenario_free(&s);
		cJSON_Delete(root);
		if (bad)
			return -1;
	}
	return 0;
}

/* After a failed comparison: the folders it made, now empty (rmdir leaves
 * one that holds anything). */
static void remove_empty_dirs(const char *out, const char **names, int n)
{
	char dir[4096];
	for (int i = 0; i < n; i++) {
		snprintf(dir, sizeof dir, "%s/%s", out, names[i]);
		rmdir(dir);
	}
	rmdir(out);
}

/* comparison.json and comparison.csv join the set of every policy's
 * files, and all appear together; then the figures and report asked for
 * (the report's verdict against column baseline, -1: the first). */
static int write_outputs(const struct cli_common *o, const char *out, const cJSON *base,
			 const char **names, const struct met_summary *sums,
			 const struct met_summary *attr, int n, int baseline, cJSON *cmp,
			 struct afile_set *set, const struct cmp_grid *g,
			 const struct met_summary *cells, const struct res_verdict_in *vin)
{
	char path[4096], csv[4096], err[1024];
	snprintf(path, sizeof path, "%s/comparison.json", out);
	snprintf(csv, sizeof csv, "%s/comparison.csv", out);
	if (res_write_json_in(set, path, cmp, err, sizeof err) ||
	    res_write_comparison_csv_in(set, csv, NULL, sums, (size_t)n, err, sizeof err) ||
	    afile_set_commit(set, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_INTERNAL;
	}
	int rc = CLI_OK;
	struct report_figs *figs = NULL;
	if (o->plot) {
		figs = malloc(sizeof *figs);
		if (!figs || res_plot(out, names, (size_t)n, figs, err, sizeof err) ||
		    (g->n_rates && cmp_plot_capacity(g, cells, out, figs, err, sizeof err))) {
			fprintf(stderr, "kvsim: %s\n", figs ? err : "out of memory");
			rc = CLI_INTERNAL;
		}
	}
	if (rc == CLI_OK && o->report) {
		char *scen = cJSON_Print(base);
		if (!scen || res_report(out, scen, sums, attr, (size_t)n, baseline, figs, vin, err,
					       sizeof err)) {
			fprintf(stderr, "kvsim: %s\n", scen ? err : "out of memory");
			rc = CLI_INTERNAL;
		}
		free(scen);
	}
	free(figs);
	return rc;
}

/* compare's own options besides the shared ones. */
struct compare_args {
	struct cli_common o;
	const char *baseline; /* NULL: no deltas */
	enum cmp_format format;
	struct cmp_grid g; /* --seeds, --rates, -j */
	int attribute;     /* --attribute */
};

/* The options into c; CLI_END to go on, else cli_next's end. */
static int compare_parse(const struct cli_ctx *cx, int argc, char **argv, struct compare_args *c)
{
	struct cli_args a;
	const char *v;
	int id;
	memset(c, 0, sizeof *c);
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case O_BASELINE: c->baseline = v; break;
		case O_SEEDS:
			if (cmp_parse_seeds(&c->g, v)) {
				cli_bad_value(cx->cmd, "--seeds", "N (1-64), a-b or a,b,c: distinct seeds",
					      v);
				return CLI_BAD;
			}
			break;
		case O_RATES:
			if (cmp_parse_rates(&c->g, v)) {
				cli_bad_value(cx->cmd, "--rates", "increasing loads > 0, r1,r2,... (at most 64)",
					      v);
				return CLI_BAD;
			}
			break;
		case O_JOBS: {
			long long j;
			if (cli_parse_int(v, 1, 1024, &j)) {
				cli_bad_value(cx->cmd, "--jobs", "1 to 1024 workers", v);
				return CLI_BAD;
			}
			c->g.jobs = (int)j;
			break;
		}
		case O_ATTRIBUTE: c->attribute = 1; break;
		case O_FORMAT: {
			int k = 0;
			while (k < 4 && strcmp(v, cmp_format_names[k]))
				k++;
			if (k == 4) {
				cli_bad_value(cx->cmd, "--format", "text, md, csv or json", v);
				return CLI_BAD;
			}
			c->format = (enum cmp_format)k;
			break;
		}
		default:
			if (cli_common_opt(cx->cmd, &c->o, id, v) < 0)
				return CLI_BAD;
		}
	}
	return id == CLI_END ? cli_scenario_arg(cx, &a, &c->o) : id;
}

/* --baseline's column among names; -1 when not given, -2 after reporting
 * one that is not compared. */
static int baseline_column(const struct cli_cmd *cmd, const char *baseline, const char **names,
			   int n)
{
	if (!baseline)
		return -1;
	char known[1024] = "";
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		if (!strcmp(names[i], baseline))
			return i;
		len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
					names[i]);
		if (len >= sizeof known)
			len = sizeof known - 1;
	}
	cli_misuse(cmd, "--baseline: \"%s\" is not one of the compared policies (%s)", baseline,
		   known);
	return -2;
}

/* The best figures are bold on a terminal unless NO_COLOR (no-color.org:
 * any non-empty value) says not to. */
static int bold_ok(void)
{
	const char *nc = getenv("NO_COLOR");
	return isatty(STDOUT_FILENO) && !(nc && *nc);
}

static void print_comparison(const struct compare_args *c, const char *out,
			     const struct met_summary *sums, const struct met_summary *attr, int n,
			     int baseline, const cJSON *cmp, const struct res_verdict_in *vin,
			     const struct met_summary *cells)
{
	const struct cli_common *o = &c->o;
	if (c->format == CMP_CSV) {
		res_print_comparison_csv(stdout, sums, (size_t)n);
		return;
	}
	if (c->format == CMP_JSON) {
		char *text = cJSON_Print(cmp);
		if (text)
			printf("%s\n", text);
		free(text);
		return;
	}
	printf("scenario %s, seed %llu, kvsim %s\n", sums[0].scenario,
	       (unsigned long long)sums[0].seed, sums[0].version);
	struct res_table_opts topts = {.mark_best = c->format == CMP_MD || bold_ok(),
				       .baseline = baseline};
	if (c->format == CMP_MD) {
		fputc('\n', stdout);
		res_print_comparison_with(stdout, sums, (size_t)n, RES_STYLE_MD, &topts);
		res_print_attribution(stdout, sums, attr, (size_t)n, baseline < 0 ? 0 : baseline,
				      RES_STYLE_MD);
		return;
	}
	res_print_comparison_with(stdout, sums, (size_t)n, RES_STYLE_TEXT, &topts);
	res_print_attribution(stdout, sums, attr, (size_t)n, baseline < 0 ? 0 : baseline,
			      RES_STYLE_TEXT);
	if (c->g.n_rates)
		cmp_print_capacity(stdout, &c->g, cells);
	if (n > 1) {
		printf("\nverdict, against %s:\n", sums[baseline < 0 ? 0 : baseline].policy);
		res_print_verdict_in(stdout, sums, (size_t)n, baseline, RES_STYLE_TEXT, vin);
		res_print_attribution_verdict(stdout, sums, attr, (size_t)n,
					      baseline < 0 ? 0 : baseline, RES_STYLE_TEXT);
	}
	printf("\nwrote %s/comparison.json, %s/comparison.csv and "
	       "%s/<policy>/{summary.json,requests.csv,timeseries.csv}\n",
	       out, out, out);
	if (o->plot)
		printf("figures: %s/plots/ (PNG and SVG)\n", out);
	if (o->report)
		printf("report:  %s/report.html (self-contained) and %s/report.md\n", out, out);
}

/* comparison.json's object: "columns" (a reference to cmp, each column's
 * summary) and "verdict" (against column baseline; -1: the first). NULL
 * when memory runs out. */
static cJSON *comparison_doc(cJSON *cmp, const struct met_summary *sums,
			     const struct met_summary *attr, int n, int baseline,
			     const struct cmp_spread_ctx *spread)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *verdict = res_verdict_json_spread(sums, (size_t)n, baseline, cmp_seed_spread, spread);
	if (!doc || !verdict || !cJSON_AddItemReferenceToObject(doc, "columns", cmp)) {
		cJSON_Delete(doc);
		cJSON_Delete(verdict);
		return NULL;
	}
	cJSON_AddItemToObject(doc, "verdict", verdict);
	if (res_attributed(attr, (size_t)n)) {
		cJSON *a = res_attribution_json(sums, attr, (size_t)n, baseline < 0 ? 0 : baseline);
		if (!a) {
			cJSON_Delete(doc);
			return NULL;
		}
		cJSON_AddItemToObject(doc, "attribution", a);
	}
	return doc;
}

/* root's object at router.policy_params.<policy>, made where missing. */
static cJSON *own_params(cJSON *root, const char *policy)
{
	static const char *const path[] = {"router", "policy_params"};
	cJSON *o = root;
	for (int k = 0; k < 3 && o; k++) {
		const char *key = k < 2 ? path[k] : policy;
		cJSON *next = cJSON_GetObjectItemCaseSensitive(o, key);
		if (!cJSON_IsObject(next)) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, key);
			next = cJSON_AddObjectToObject(o, key);
		}
		o = next;
	}
	return o;
}

/* The attribution runs as parallel tasks: task i runs trees[i] into
 * DIR/attribution/<policy>/ (NULL tree: none). */
struct attr_ctx {
	const struct cli_common *o;
	cJSON **trees;
	const char *out;
	const char **names;
};

static int attr_task(void *ctx, int i, struct met_summary *sum)
{
	const struct attr_ctx *c = ctx;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/attribution/%s", c->out, c->names[i]);
	struct cli_common o = *c->o;
	o.quiet = 1; /* no progress lines from a worker */
	return run_one(&o, c->trees[i], dir, NULL, sum);
}

/* Attribution: each column whose mechanisms differ from column b's runs
 * again with b's forced at router.policy_params.<policy> (as --set
 * router.policy_params.<policy>.<key>=... forces them), its files in
 * DIR/attribution/<policy>/; attr[j] gets that run's summary (the others
 * keep an empty policy name). With jobs > 1 the runs share jobs worker
 * processes, with the same results. */
static int run_attribution(const struct cli_common *o, const char *out, const cJSON *base,
			   const char **names, const struct met_summary *sums, int n, int b,
			   struct met_summary *attr, struct afile_set *set, int jobs)
{
	int rc = CLI_OK, n_attr = 0;
	cJSON **trees = calloc((size_t)n, sizeof *trees);
	unsigned char *skip = calloc((size_t)n, 1);
	if (!trees || !skip)
		rc = CLI_INTERNAL;
	for (int i = 0; i < n && rc == CLI_OK; i++) {
		skip[i] = 1;
		if (i == b || res_same_mechanisms(&sums[i], &sums[b]))
			continue;
		char err[1024];
		if (!o->quiet)
			fprintf(stderr, "[attribution] %s under %s's mechanisms\n", names[i], names[b]);
		cJSON *root = cJSON_Duplicate(base, 1), *mech = res_mechanism_keys(&sums[b]);
		cJSON *own = root && !cli_select_policy(root, names[i], err, sizeof err)
				 ? own_params(root, names[i])
				 : NULL;
		if (!own || !mech) {
			cJSON_Delete(root);
			cJSON_Delete(mech);
			rc = CLI_INTERNAL;
			break;
		}
		for (cJSON *k = mech->child; k; k = k->next) {
			cJSON_DeleteItemFromObjectCaseSensitive(own, k->string);
			cJSON_AddItemToObject(own, k->string, cJSON_Duplicate(k, 1));
		}
		cJSON_Delete(mech);
		trees[i] = root;
		skip[i] = 0;
		n_attr++;
	}
	struct attr_ctx c = {o, trees, out, names};
	if (rc == CLI_OK && jobs > 1 && n_attr > 1) {
		rc = cmp_run_parallel(n, jobs, attr_task, &c, skip, attr);
	} else {
		for (int i = 0; i < n && rc == CLI_OK; i++) {
			char dir[4096];
			snprintf(dir, sizeof dir, "%s/attribution/%s", out, names[i]);
			if (trees && trees[i])
				rc = run_one(o, trees[i], dir, set, &attr[i]);
		}
	}
	for (int i = 0; trees && i < n; i++)
		cJSON_Delete(trees[i]);
	free(trees);
	free(skip);
	return rc;
}

static int cmd_compare(const struct cli_ctx *cx, int argc, char **argv)
{
	struct compare_args c;
	int end = compare_parse(cx, argc, argv, &c);
	if (end != CLI_END)
		return cli_end_code(end);
	const struct cli_common o = c.o;
	if (!o.policies)
		return cli_misuse(cx->cmd, "give the policies as --policies a,b,c");
	char list[1024], err[1024];
	const char *names[64];
	int n = policy_names(cx->cmd, o.policies, list, sizeof list, names, 64);
	if (n < 0)
		return CLI_USAGE;
	int baseline = baseline_column(cx->cmd, c.baseline, names, n);
	if (baseline == -2)
		return CLI_USAGE;
	const char *out = o.out ? o.out : "out";
	cJSON *base;
	if (cli_load_tree(&o, &base, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_USAGE;
	}
	if (validate_each(&o, base, names, n)) {
		cJSON_Delete(base);
		return CLI_USAGE;
	}
	c.g.names = names;
	c.g.n_pol = n;
	if (c.g.n_rates && cmp_rate_path(&c.g, base, err, sizeof err)) {
		cJSON_Delete(base);
		return cli_misuse(cx->cmd, "%s", err);
	}
	int n_cells = cmp_n_cells(&c.g);
	struct met_summary *all = calloc((size_t)n_cells, sizeof *all);
	struct met_summary *sums = calloc((size_t)n, sizeof *sums); /* the columns: shallow */
	cJSON *cmp = cJSON_CreateArray();
	struct afile_set set = {0}; /* every file of the comparison, renamed together */
	int rc = all && sums && cmp ? CLI_OK : CLI_INTERNAL;
	if (rc == CLI_OK)
		rc = cmp_run(&o, base, &c.g, out, &set, all);
	for (int i = 0; i < n && rc == CLI_OK; i++) {
		sums[i] = all[cmp_cell(&c.g, i, 0, 0)];
		cJSON *j = res_summary_json(&sums[i]);
		if (o.no_perf)
			cJSON_DeleteItemFromObjectCaseSensitive(j, "perf");
		cJSON_AddItemToArray(cmp, j);
	}
	if (rc == CLI_OK && cmp_annotate(&c.g, all, cmp, out, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		rc = CLI_INTERNAL;
	}
	/* attribution, when asked for or when a report compares different mechanisms */
	struct met_summary *attr = calloc((size_t)n, sizeof *attr);
	int b = baseline >= 0 ? baseline : 0, differ = 0;
	for (int i = 0; rc == CLI_OK && i < n; i++)
		differ |= !res_same_mechanisms(&sums[i], &sums[b]);
	if (!attr)
		rc = CLI_INTERNAL;
	else if (rc == CLI_OK && n > 1 && differ && (c.attribute || o.report))
		rc = run_attribution(&o, out, base, names, sums, n, b, attr, &set, c.g.jobs);
	/* comparison.json: the columns' summaries and the verdict on them */
	struct cmp_spread_ctx spread = {&c.g, all};
	cJSON *doc = rc == CLI_OK ? comparison_doc(cmp, sums, attr, n, baseline, &spread) : NULL;
	if (rc == CLI_OK && !doc)
		rc = CLI_INTERNAL;
	char capacity[2048];
	struct res_verdict_in vin = {cmp_seed_spread, &spread, cmp_n_seeds(&c.g),
				     c.g.n_rates ? capacity : NULL};
	if (rc == CLI_OK && c.g.n_rates)
		cmp_capacity_verdict(&c.g, all, baseline, capacity, sizeof capacity,
				     cJSON_GetObjectItemCaseSensitive(doc, "verdict"));
	if (rc == CLI_OK)
		rc = write_outputs(&o, out, base, names, sums, attr, n, baseline, doc, &set, &c.g,
				   all, &vin);
	afile_set_discard(&set);
	if (rc != CLI_OK)
		remove_empty_dirs(out, names, n);
	if (rc == CLI_OK && !o.quiet) {
		print_comparison(&c, out, sums, attr, n, baseline, doc, &vin, all);
		if (c.format == CMP_TEXT && c.g.n_seeds > 1) {
			fputc('\n', stdout);
			cmp_print_seeds_table(stdout, &c.g, all);
		}
	}
	cJSON_Delete(doc);
	for (int i = 0; attr && i < n; i++)
		met_summary_free(&attr[i]);
	free(attr);
	for (int i = 0; all && i < n_cells; i++)
		met_summary_free(&all[i]);
	free(all);
	free(sums);
	cJSON_Delete(cmp);
	cJSON_Delete(base);
	return rc;
}

/* The servers of cluster (or pool) cl and each replica's links, one line
 * after prefix. */
static void print_layout(const char *prefix, const struct cluster_cfg *cl)
{
	int servers = (cl->nodes + cl->nodes_per_server - 1) / cl->nodes_per_server;
	printf("%s%d %s server%s of %d GPUs, at most %d replica%s (tp %d) per server; per "
	       "replica %d x %s = %.0f GB/s, %g x %s = %.0f GB/s; per server %d x %s = %.0f GB/s to "
	       "host DRAM (each direction)\n",
	       prefix, servers, cl->server->name, servers == 1 ? "" : "s", cl->server->gpus,
	       cl->nodes_per_server, cl->nodes_per_server == 1 ? "" : "s", cl->tp, cl->tp,
	       cl->intra_server->name, cl->nvlink_bytes_per_s / 1e9,
	       (double)cl->tp * cl->server->nics / cl->server->gpus, cl->inter_server->name,
	       cl->nic_bytes_per_s / 1e9, cl->tp, cl->host->name, cl->host_bytes_per_s / 1e9);
}

/* Pool pl's autoscaler, one line after prefix (nothing without one). */
static void print_autoscaler(const char *prefix, const struct pool_cfg *pl)
{
	static const char *const metrics[] = {"queue_per_node", "kv_util", "busy", "rps_per_node"};
	static const char *const preds[] = {"constant", "moving_average", "holt"};
	const struct autoscaler_cfg *a = &pl->as;
	if (a->kind == AS_NONE)
		return;
	char how[96], step[48] = "";
	if (a->kind == AS_HPA)
		snprintf(how, sizeof how, "hpa on %s, target %g per node, tolerance %g",
			 metrics[a->metric], a->target, a->tolerance);
	else
		snprintf(how, sizeof how, "planner, %s predictor, headroom %g", preds[a->predictor],
			 a->headroom);
	if (a->max_step)
		snprintf(step, sizeof step, ", at most %d nodes a tick", a->max_step);
	printf("%sautoscaler: %s; %d..%d nodes (%d at the start), a tick every %g s, "
	       "scale-down stabilisation %g s, start-up %g +- %g s%s\n",
	       prefix, how, a->min_nodes, a->max_nodes, pl->nodes0, a->tick_s, a->stabilization_s,
	       a->startup_s, a->startup_jitter_s, step);
}

static int cmd_validate(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_common o;
	int end = cli_parse_common(cx, argc, argv, &o);
	if (end != CLI_END)
		return cli_end_code(end);
	if (!o.scenario)
		return cli_misuse(cx->cmd, "give a scenario file");
	struct scenario s;
	if (cli_load_from_opts(&o, &s))
		return CLI_USAGE;
	if (s.n_pools == 1) {
		printf("%s: valid: scenario \"%s\", %d x %s (tp %d) serving %s, %lld KV blocks of %d "
		       "tokens per node, policy %s\n",
		       o.scenario, s.name, s.pools[0].nodes0, s.cluster.gpu->name, s.cluster.tp,
		       s.cluster.model->name, (long long)s.kv_blocks_per_node,
		       s.cluster.engine.kv_block_tokens, s.router.policy);
		print_layout("layout: ", &s.cluster);
		print_autoscaler("", &s.pools[0]);
	} else {
		printf("%s: valid: scenario \"%s\", %d nodes in %d pools serving %s, policy %s%s%s\n",
		       o.scenario, s.name, s.cluster.nodes, s.n_pools, s.cluster.model->name,
		       s.router.policy, s.disaggregated ? ", decode policy " : "",
		       s.disaggregated ? s.router.decode_policy : "");
		static const char *const roles[] = {"mixed", "prefill", "decode"};
		for (int i = 0; i < s.n_pools; i++) {
			const struct pool_cfg *pl = &s.pools[i];
			char nodes[48];
			if (pl->cl.nodes == 1)
				snprintf(nodes, sizeof nodes, "node %d", pl->first_node);
			else
				snprintf(nodes, sizeof nodes, "nodes %d-%d", pl->first_node,
					 pl->first_node + pl->cl.nodes - 1);
			printf("pool %s (%s): %s, %d x %s (tp %d), %lld KV blocks of %d tokens per "
			       "node\n",
			       pl->name, roles[pl->role], nodes, pl->cl.nodes, pl->cl.gpu->name,
			       pl->cl.tp, (long long)pl->kv_blocks_per_node,
			       pl->cl.engine.kv_block_tokens);
			print_layout("  layout: ", &pl->cl);
			print_autoscaler("  ", pl);
		}
	}
	char sched[4096];
	wl_schedule_lines(s.workload, sched, sizeof sched);
	fputs(sched, stdout);
	cfg_scenario_free(&s);
	return CLI_OK;
}

const struct cli_cmd cli_run_cmd = {
    .name = "run",
    .args = "[SCENARIO.json]",
    .summary = "simulate one scenario under one routing policy",
    .run = cmd_run,
    .opts = run_opts,
    .about = "Simulates the scenario and prints a summary table. Writes DIR/summary.json,\n"
	     "DIR/requests.csv and DIR/timeseries.csv (default DIR: out). Files are written\n"
	     "under temporary names and renamed together once all are written, so a failed\n"
	     "or interrupted run leaves the folder as it was.\n"
	     "No SCENARIO means the embedded default (workloads/scenarios/default.json).\n",
    .pos_complete = "@file",
};

const struct cli_cmd cli_compare_cmd = {
    .name = "compare",
    .args = "[SCENARIO.json]",
    .summary = "the same request stream under several policies",
    .run = cmd_compare,
    .opts = compare_opts,
    .about = "Runs the same request stream (same seed) under each policy and prints one\n"
	     "table with the policies as columns. Writes DIR/<policy>/{summary.json,\n"
	     "requests.csv,timeseries.csv}, DIR/comparison.json and DIR/comparison.csv\n"
	     "(default DIR: out). Policy parameters come from\n"
	     "router.policy_params.<policy>; router.params counts as\n"
	     "router.policy_params.<router.policy>. Each policy is named once.\n"
	     "--seeds repeats every column over several seeds (medians and ranges);\n"
	     "--rates runs every policy at several loads on the same sessions and reports\n"
	     "each one's capacity, the highest load that meets the SLOs while steady\n"
	     "(DIR/capacity.json); -j N runs all these runs in N worker processes.\n",
    .pos_complete = "@file",
};

const struct cli_cmd cli_validate_cmd = {
    .name = "validate",
    .args = "SCENARIO.json",
    .summary = "check a scenario without running it",
    .run = cmd_validate,
    .opts = validate_opts,
    .about = "Parses and checks the scenario (every key, the policy's and the workload's\n"
	     "parameters, that the model fits in memory) and prints a summary: the cluster\n"
	     "and its server layout, or with cluster.pools each pool's, and the workload's\n"
	     "rate schedule when it has one.\n"
	     "Exit 0 when valid, 2 with the JSON path of the first problem otherwise.\n",
    .pos_complete = "@file",
};
