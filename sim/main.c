/* main: the kvsim command line (DESIGN 7). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "policies/policy.h"
#include "results/diff.h"
#include "results/metrics.h"
#include "results/report.h"
#include "results/writer.h"
#include "sim/config.h"
#include "sim/sim.h"
#include "workloads/tracestats.h"
#include "workloads/workload.h"

enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

static const char usage_main[] =
    "kvsim: a discrete-event simulator of GPU clusters serving LLMs\n"
    "\n"
    "usage: kvsim COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.json]        simulate one scenario under one routing policy\n"
    "  compare [SCENARIO.json]    the same request stream under several policies\n"
    "  validate SCENARIO.json     check a scenario without running it\n"
    "  list WHAT                  policies | gpus | models | links | workloads\n"
    "  plot DIR                   figures of a compare output folder (gnuplot)\n"
    "  diff BASE.json NEW.json    compare two results metric by metric (exit 1 on a\n"
    "                             regression)\n"
    "  trace stats FILE           what a trace holds and how much a cache reuses\n"
    "  trace gen SCENARIO --out F write a scenario's requests as a kvsim trace\n"
    "  version                    print the version\n"
    "\n"
    "No SCENARIO means the embedded default (workloads/scenarios/default.json).\n"
    "'kvsim COMMAND --help' describes each command. Exit codes: 0 ok, 2 bad usage or\n"
    "bad input (the message names the file, line or JSON path), 3 internal error.\n";

static const char usage_run[] =
    "usage: kvsim run [SCENARIO.json] [--policy P] [--set PATH=VALUE]... [--seed N]\n"
    "                 [--out DIR] [--catalog FILE] [--trace-events FILE] [--quiet]\n"
    "\n"
    "Simulates the scenario and prints a summary table. Writes DIR/summary.json,\n"
    "DIR/requests.csv and DIR/timeseries.csv (default DIR: out). Files are written\n"
    "under temporary names and renamed, so a failed run leaves no half-written result.\n"
    "\n"
    "  --policy P         route with policy P (its params: router.policy_params.P)\n"
    "  --set PATH=VALUE   override a scenario key, e.g. --set cluster.nodes=16\n"
    "                     (VALUE is JSON if it parses as JSON, else a string)\n"
    "  --seed N           override the scenario seed\n"
    "  --out DIR          output directory (default: out)\n"
    "  --catalog FILE     merge {\"gpus\":{..},\"models\":{..},\"links\":{..}} over the\n"
    "                     built-in catalogs\n"
    "  --trace-events F   write a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev)\n"
    "                     of iterations, KV transfers and routing decisions (short runs;\n"
    "                     at most 2,000,000 events)\n"
    "  --quiet            no progress line and no table\n";

static const char usage_compare[] =
    "usage: kvsim compare [SCENARIO.json] --policies a,b,c [--set PATH=VALUE]...\n"
    "                     [--seed N] [--out DIR] [--catalog FILE] [--quiet] [--no-perf]\n"
    "                     [--plot] [--report]\n"
    "\n"
    "Runs the same request stream (same seed) under each policy and prints one\n"
    "table with the policies as columns. Writes DIR/<policy>/{summary.json,\n"
    "requests.csv} and DIR/comparison.json (default DIR: out).\n"
    "Policy parameters come from router.policy_params.<policy>; the scenario's own\n"
    "policy also takes router.params. --no-perf leaves the wall-clock perf block out of\n"
    "comparison.json, so that it is byte-identical between runs (for baselines).\n"
    "--plot draws the figures into DIR/plots/ (PNG and SVG, with gnuplot); --report\n"
    "also writes DIR/report.md and a self-contained DIR/report.html.\n";

static const char usage_validate[] =
    "usage: kvsim validate SCENARIO.json [--set PATH=VALUE]... [--catalog FILE]\n"
    "\n"
    "Parses and checks the scenario (every key, the policy's and the workload's\n"
    "parameters, that the model fits in memory) and prints a one-line summary.\n"
    "Exit 0 when valid, 2 with the JSON path of the first problem otherwise.\n";

static const char usage_trace[] =
    "usage: kvsim trace stats FILE [--format mooncake|azure|kvsim] [--cache-blocks N,...]\n"
    "                         [--json] [--skip-bad]\n"
    "       kvsim trace gen [SCENARIO.json] --out FILE [--set PATH=VALUE]... [--seed N]\n"
    "\n"
    "stats: requests, duration, arrival rate, prompt and output lengths (mean, p50,\n"
    "p99, max), distinct blocks, the prefix reuse an unbounded cache would see (as a\n"
    "share of blocks, of prompt tokens, and the mean per-request token share), and for\n"
    "each N in --cache-blocks the hit ratio of an LRU cache of N blocks. A request's\n"
    "hit is its run of leading prompt blocks already cached; then all its blocks are\n"
    "inserted or touched. Blocks are the trace's own (Mooncake: 512 tokens). The format\n"
    "is guessed from the first line unless given. --skip-bad counts and skips\n"
    "malformed lines instead of failing (exit 2, FILE:LINE: what is wrong).\n"
    "\n"
    "gen: writes the scenario's workload as kvsim JSONL (see README); replaying it\n"
    "(workload {\"kind\": \"trace\", \"format\": \"kvsim\", \"path\": FILE}) gives the\n"
    "same run as the generator with the same seed and cluster.\n";

static const char usage_diff[] =
    "usage: kvsim diff BASE.json NEW.json [--tolerance PCT] [--metrics a,b,...] [--list]\n"
    "\n"
    "Compares two summary.json files, or two comparison.json files (policies matched\n"
    "by name), metric by metric, knowing for each whether higher or lower is better.\n"
    "Prints the metrics that changed and marks regressions: worse by more than PCT\n"
    "percent (default 5; simulated figures are deterministic, so 0 is meaningful). A\n"
    "metric or policy that the base has and the new one lacks is a regression. perf.*\n"
    "figures (wall time, speed, memory) are compared only when --metrics names them.\n"
    "--list prints the metrics. Exit 0: no regression; 1: a regression; 2: bad input.\n";

static const char usage_list[] =
    "usage: kvsim list policies|gpus|models|links|workloads\n"
    "\n"
    "Prints what the registry or the built-in catalogs hold.\n";

struct common_opts {
	const char *scenario;
	const char *policy;
	const char *policies;
	const char *out;
	const char *catalog;
	const char *seed;
	const char *trace_events;
	const char *sets[256];
	int n_sets;
	int quiet;
	int no_perf;
	int plot, report;
};

static int want_help(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

static int parse_common(int argc, char **argv, struct common_opts *o, const char *usage)
{
	memset(o, 0, sizeof *o);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			o->quiet = 1;
			continue;
		}
		if (!strcmp(a, "--no-perf")) {
			o->no_perf = 1;
			continue;
		}
		if (!strcmp(a, "--plot") || !strcmp(a, "--report")) {
			o->plot = 1;
			o->report |= a[2] == 'r';
			continue;
		}
		if (!strcmp(a, "--policy"))
			slot = &o->policy;
		else if (!strcmp(a, "--policies"))
			slot = &o->policies;
		else if (!strcmp(a, "--out"))
			slot = &o->out;
		else if (!strcmp(a, "--catalog"))
			slot = &o->catalog;
		else if (!strcmp(a, "--seed"))
			slot = &o->seed;
		else if (!strcmp(a, "--trace-events"))
			slot = &o->trace_events;
		else if (!strcmp(a, "--set")) {
			if (o->n_sets >= 256) {
				fprintf(stderr, "kvsim: too many --set options (at most 256)\n");
				return -1;
			}
			slot = &o->sets[o->n_sets++];
		}
		if (slot) {
			if (i + 1 >= argc) {
				fprintf(stderr, "kvsim: %s needs a value\n%s", a, usage);
				return -1;
			}
			*slot = argv[++i];
			continue;
		}
		if (a[0] == '-' && a[1]) {
			fprintf(stderr, "kvsim: unknown option %s\n%s", a, usage);
			return -1;
		}
		if (o->scenario) {
			fprintf(stderr, "kvsim: more than one scenario given (%s, %s)\n%s", o->scenario,
				a, usage);
			return -1;
		}
		o->scenario = a;
	}
	return 0;
}

/* The prologue every command shares: --help, then the options. Returns
 * 1 when help was printed, 0 to go on, -1 on a usage error (reported). */
static int begin(int argc, char **argv, const char *usage, struct common_opts *o)
{
	if (want_help(argc, argv)) {
		fputs(usage, stdout);
		return 1;
	}
	return parse_common(argc, argv, o, usage);
}

/* Points router.policy at name; its params come from router.policy_params
 * unless it is the scenario's own policy. */
static int select_policy(cJSON *root, const char *name, char *err, size_t errlen)
{
	cJSON *router = cJSON_GetObjectItemCaseSensitive(root, "router");
	if (router && !cJSON_IsObject(router)) {
		snprintf(err, errlen, "router: expected an object");
		return -1;
	}
	if (!router)
		router = cJSON_AddObjectToObject(root, "router");
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(router, "policy");
	const char *own = cJSON_IsString(cur) ? cur->valuestring : "session_affinity";
	if (strcmp(own, name) != 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(router, "params");
		const cJSON *pp = cJSON_GetObjectItemCaseSensitive(router, "policy_params");
		const cJSON *mine = pp ? cJSON_GetObjectItemCaseSensitive(pp, name) : NULL;
		if (mine)
			cJSON_AddItemToObject(router, "params", cJSON_Duplicate(mine, 1));
	}
	cJSON_DeleteItemFromObjectCaseSensitive(router, "policy");
	cJSON_AddStringToObject(router, "policy", name);
	return 0;
}

/* Reads the scenario tree with --set and --seed applied. */
static int load_tree(const struct common_opts *o, cJSON **root, char *err, size_t errlen)
{
	if (cfg_read_json(o->scenario, root, err, errlen))
		return -1;
	for (int i = 0; i < o->n_sets; i++) {
		if (cfg_apply_set(*root, o->sets[i], err, errlen))
			goto fail;
	}
	if (o->seed) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(o->seed, &end, 10);
		if (errno || *end || o->seed[0] == '-' || !o->seed[0] || v > (1ULL << 53)) {
			snprintf(err, errlen, "--seed %s: expected an integer in [0, 2^53]", o->seed);
			goto fail;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(*root, "seed");
		cJSON_AddNumberToObject(*root, "seed", (double)v);
	}
	return 0;
fail:
	cJSON_Delete(*root);
	*root = NULL;
	return -1;
}

/* load_tree, then --policy; NULL after reporting an error. */
static cJSON *load_tree_with_policy(const struct common_opts *o)
{
	cJSON *root = NULL;
	char err[1024];
	if (load_tree(o, &root, err, sizeof err) ||
	    (o->policy && select_policy(root, o->policy, err, sizeof err))) {
		fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static int load_scenario(const struct common_opts *o, const cJSON *root, struct scenario *s)
{
	char err[1024];
	int bad = cfg_scenario_load(s, root, o->catalog, err, sizeof err);
	if (!bad) {
		cfg_scenario_set_source(s, o->scenario);
		bad = sim_validate(s, err, sizeof err);
		if (bad)
			cfg_scenario_free(s);
	}
	if (bad) {
		fprintf(stderr, "kvsim: %s: %s\n",
			o->scenario ? o->scenario : "(embedded default scenario)", err);
		return -1;
	}
	return 0;
}

static int run_one(const struct common_opts *o, const cJSON *root, const char *out_dir,
		   struct met_summary *sum)
{
	struct scenario s;
	char err[1024];
	if (load_scenario(o, root, &s))
		return EXIT_USAGE;
	struct sim_opts so = {out_dir, !o->quiet, o->trace_events, NULL, NULL};
	int rc = sim_run(&s, &so, sum, err, sizeof err);
	cfg_scenario_free(&s);
	if (rc) {
		fprintf(stderr, "kvsim: %s\n", err);
		return rc == 2 ? EXIT_USAGE : EXIT_INTERNAL;
	}
	return EXIT_OK;
}

static int cmd_run(int argc, char **argv)
{
	struct common_opts o;
	int b = begin(argc, argv, usage_run, &o);
	if (b)
		return b > 0 ? EXIT_OK : EXIT_USAGE;
	if (o.policies) {
		fprintf(stderr, "kvsim run: --policies belongs to 'kvsim compare'\n");
		return EXIT_USAGE;
	}
	cJSON *root = load_tree_with_policy(&o);
	if (!root)
		return EXIT_USAGE;
	const char *out = o.out ? o.out : "out";
	struct met_summary sum;
	int rc = run_one(&o, root, out, &sum);
	cJSON_Delete(root);
	if (rc)
		return rc;
	if (!o.quiet) {
		res_print_summary(stdout, &sum);
		printf("\nwrote %s/summary.json, %s/requests.csv and %s/timeseries.csv\n", out, out,
		       out);
	}
	met_summary_free(&sum);
	return EXIT_OK;
}

static int cmd_compare(int argc, char **argv)
{
	struct common_opts o;
	int b = begin(argc, argv, usage_compare, &o);
	if (b)
		return b > 0 ? EXIT_OK : EXIT_USAGE;
	if (!o.policies || o.policy) {
		fprintf(stderr, "kvsim compare: give the policies as --policies a,b,c\n%s",
			usage_compare);
		return EXIT_USAGE;
	}
	if (o.trace_events) {
		fprintf(stderr, "kvsim compare: --trace-events belongs to 'kvsim run'\n");
		return EXIT_USAGE;
	}
	char list[1024], err[1024];
	snprintf(list, sizeof list, "%s", o.policies);
	const char *names[64];
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == 64) {
			fprintf(stderr, "kvsim compare: at most 64 policies\n");
			return EXIT_USAGE;
		}
		if (!pol_find(t)) {
			char known[512];
			pol_names(known, sizeof known);
			fprintf(stderr, "kvsim compare: --policies: unknown policy \"%s\" (known: %s)\n",
				t, known);
			return EXIT_USAGE;
		}
		names[n++] = t;
	}
	if (n == 0) {
		fprintf(stderr, "kvsim compare: --policies is empty\n");
		return EXIT_USAGE;
	}
	const char *out = o.out ? o.out : "out";
	cJSON *base;
	if (load_tree(&o, &base, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return EXIT_USAGE;
	}
	/* Validate every policy's scenario before running any. */
	for (size_t i = 0; i < n; i++) {
		cJSON *root = cJSON_Duplicate(base, 1);
		struct scenario s;
		int bad = !root || select_policy(root, names[i], err, sizeof err) ||
			  load_scenario(&o, root, &s);
		if (!bad)
			cfg_scenario_free(&s);
		cJSON_Delete(root);
		if (bad) {
			cJSON_Delete(base);
			return EXIT_USAGE;
		}
	}
	struct met_summary *sums = calloc(n, sizeof *sums);
	cJSON *cmp = cJSON_CreateArray();
	int rc = sums && cmp ? EXIT_OK : EXIT_INTERNAL;
	for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s", out, names[i]);
		if (!o.quiet)
			fprintf(stderr, "[%zu/%zu] %s\n", i + 1, n, names[i]);
		cJSON *root = cJSON_Duplicate(base, 1);
		select_policy(root, names[i], err, sizeof err);
		rc = run_one(&o, root, dir, &sums[i]);
		cJSON_Delete(root);
		if (rc == EXIT_OK) {
			cJSON *j = res_summary_json(&sums[i]);
			if (o.no_perf)
				cJSON_DeleteItemFromObjectCaseSensitive(j, "perf");
			cJSON_AddItemToArray(cmp, j);
		}
	}
	if (rc == EXIT_OK) {
		char path[4096];
		snprintf(path, sizeof path, "%s/comparison.json", out);
		char csv[4096];
		snprintf(csv, sizeof csv, "%s/comparison.csv", out);
		if (res_write_json(path, cmp, err, sizeof err) ||
		    res_write_comparison_csv(csv, sums, n, err, sizeof err)) {
			fprintf(stderr, "kvsim: %s\n", err);
			rc = EXIT_INTERNAL;
		}
	}
	struct report_figs *figs = NULL;
	if (rc == EXIT_OK && o.plot) {
		figs = malloc(sizeof *figs);
		if (!figs || res_plot(out, names, n, figs, err, sizeof err)) {
			fprintf(stderr, "kvsim: %s\n", figs ? err : "out of memory");
			rc = EXIT_INTERNAL;
		}
	}
	if (rc == EXIT_OK && o.report) {
		char *scen = cJSON_Print(base);
		if (!scen || res_report(out, scen, sums, n, figs, err, sizeof err)) {
			fprintf(stderr, "kvsim: %s\n", scen ? err : "out of memory");
			rc = EXIT_INTERNAL;
		}
		free(scen);
	}
	free(figs);
	if (rc == EXIT_OK && !o.quiet) {
		printf("scenario %s, seed %llu, kvsim %s\n", sums[0].scenario,
		       (unsigned long long)sums[0].seed, sums[0].version);
		res_print_comparison(stdout, sums, n);
		printf("\nwrote %s/comparison.json, %s/comparison.csv and "
		       "%s/<policy>/{summary.json,requests.csv,timeseries.csv}\n",
		       out, out, out);
		if (o.plot)
			printf("figures: %s/plots/ (PNG and SVG)\n", out);
		if (o.report)
			printf("report:  %s/report.html (self-contained) and %s/report.md\n", out,
			       out);
	}
	for (size_t i = 0; sums && i < n; i++)
		met_summary_free(&sums[i]);
	free(sums);
	cJSON_Delete(cmp);
	cJSON_Delete(base);
	return rc;
}

static int cmd_validate(int argc, char **argv)
{
	struct common_opts o;
	int b = begin(argc, argv, usage_validate, &o);
	if (b)
		return b > 0 ? EXIT_OK : EXIT_USAGE;
	if (!o.scenario) {
		fprintf(stderr, "kvsim validate: give a scenario file\n%s", usage_validate);
		return EXIT_USAGE;
	}
	cJSON *root = load_tree_with_policy(&o);
	if (!root)
		return EXIT_USAGE;
	struct scenario s;
	int bad = load_scenario(&o, root, &s);
	cJSON_Delete(root);
	if (bad)
		return EXIT_USAGE;
	printf("%s: valid: scenario \"%s\", %d x %s (tp %d) serving %s, %lld KV blocks of %d "
	       "tokens per node, policy %s\n",
	       o.scenario, s.name, s.cluster.nodes, s.cluster.gpu->name, s.cluster.tp,
	       s.cluster.model->name, (long long)s.kv_blocks_per_node,
	       s.cluster.engine.kv_block_tokens, s.router.policy);
	cfg_scenario_free(&s);
	return EXIT_OK;
}

static int cmd_list(int argc, char **argv)
{
	if (want_help(argc, argv)) {
		fputs(usage_list, stdout);
		return EXIT_OK;
	}
	if (argc != 1) {
		fputs(usage_list, stderr);
		return EXIT_USAGE;
	}
	const char *what = argv[0];
	if (!strcmp(what, "policies")) {
		size_t n;
		const struct pol_ops *const *all = pol_all(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-18s %s\n", all[i]->name, all[i]->description);
		return EXIT_OK;
	}
	if (!strcmp(what, "workloads")) {
		size_t n;
		const struct wl_ops *const *all = wl_all(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-10s %s\n", all[i]->name, all[i]->description);
		return EXIT_OK;
	}
	struct catalog cat;
	char err[512];
	if (catalog_load_builtin(&cat, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return EXIT_INTERNAL;
	}
	int rc = EXIT_OK;
	if (!strcmp(what, "gpus")) {
		printf("%-10s %12s %12s %9s %10s %6s  %s\n", "name", "bf16 TFLOPS", "fp8 TFLOPS",
		       "HBM GB", "HBM TB/s", "TDP W", "link");
		for (size_t i = 0; i < cat.n_gpus; i++) {
			const struct cat_gpu *g = &cat.gpus[i];
			printf("%-10s %12.0f %12.0f %9.0f %10.3f %6.0f  %s\n", g->name,
			       g->bf16_flops / 1e12, g->fp8_flops / 1e12, g->hbm_bytes / 1e9,
			       g->hbm_bytes_per_s / 1e12, g->tdp_w, g->link);
		}
	} else if (!strcmp(what, "models")) {
		printf("%-14s %6s %7s %7s %8s %8s %9s %9s %11s %8s\n", "name", "layers", "hidden",
		       "q_heads", "kv_heads", "head_dim", "params_B", "active_B", "KV_B/token",
		       "context");
		for (size_t i = 0; i < cat.n_models; i++) {
			const struct cat_model *m = &cat.models[i];
			printf("%-14s %6d %7d %7d %8d %8d %9.2f %9.2f %11.0f %8d\n", m->name, m->layers,
			       m->hidden, m->q_heads, m->kv_heads, m->head_dim, m->params / 1e9,
			       m->active_params / 1e9, m->kv_bytes_per_token, m->max_context);
		}
	} else if (!strcmp(what, "links")) {
		printf("%-10s %12s %11s\n", "name", "GB/s (1 dir)", "latency us");
		for (size_t i = 0; i < cat.n_links; i++)
			printf("%-10s %12.1f %11.1f\n", cat.links[i].name,
			       cat.links[i].bytes_per_s / 1e9, cat.links[i].latency_s * 1e6);
	} else {
		fprintf(stderr, "kvsim list: unknown list \"%s\"\n%s", what, usage_list);
		rc = EXIT_USAGE;
	}
	catalog_free(&cat);
	return rc;
}

static int cmd_trace_stats(int argc, char **argv)
{
	const char *file = NULL, *format = NULL, *caches = NULL;
	int json = 0, skip = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--skip-bad"))
			skip = 1;
		else if (!strcmp(argv[i], "--format") && i + 1 < argc)
			format = argv[++i];
		else if (!strcmp(argv[i], "--cache-blocks") && i + 1 < argc)
			caches = argv[++i];
		else if (argv[i][0] == '-' || file) {
			fprintf(stderr, "kvsim trace stats: unexpected argument %s\n%s", argv[i],
				usage_trace);
			return EXIT_USAGE;
		} else
			file = argv[i];
	}
	if (!file) {
		fprintf(stderr, "kvsim trace stats: give a trace file\n%s", usage_trace);
		return EXIT_USAGE;
	}
	int fmt = format ? trace_format_parse(format) : tstats_detect_format(file);
	if (fmt < 0) {
		if (format)
			fprintf(stderr, "kvsim trace stats: --format %s: expected mooncake, azure or "
					"kvsim\n", format);
		else
			fprintf(stderr, "kvsim: %s: cannot tell the trace format from its first line; "
					"give --format mooncake|azure|kvsim\n", file);
		return EXIT_USAGE;
	}
	uint64_t sizes[TSTATS_MAX_CACHES];
	size_t n = 0;
	if (caches) {
		char list[1024];
		snprintf(list, sizeof list, "%s", caches);
		char *save = NULL;
		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(t, &end, 10);
			if (errno || *end || t[0] == '-' || n == TSTATS_MAX_CACHES) {
				fprintf(stderr, "kvsim trace stats: --cache-blocks %s: expected up to %d "
						"block counts, e.g. 1000,10000\n", caches, TSTATS_MAX_CACHES);
				return EXIT_USAGE;
			}
			sizes[n++] = v;
		}
	}
	struct trace_stats st;
	char err[1024] = "";
	if (tstats_run(file, (enum trace_format)fmt, skip, sizes, n, &st, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return EXIT_USAGE;
	}
	if (st.skipped)
		fprintf(stderr, "kvsim: skipped %llu malformed lines; the first: %s\n",
			(unsigned long long)st.skipped, err);
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "file", file);
		cJSON_AddStringToObject(o, "format", trace_format_name(st.format));
		cJSON_AddNumberToObject(o, "requests", (double)st.requests);
		cJSON_AddNumberToObject(o, "skipped_lines", (double)st.skipped);
		cJSON_AddNumberToObject(o, "duration_s", st.duration_s);
		cJSON_AddNumberToObject(o, "arrival_rate_per_s", st.arrival_rate_per_s);
		const struct tstats_dist *d[2] = {&st.input, &st.output};
		const char *names[2] = {"input_tokens", "output_tokens"};
		for (int i = 0; i < 2; i++) {
			cJSON *x = cJSON_AddObjectToObject(o, names[i]);
			cJSON_AddNumberToObject(x, "mean", d[i]->mean);
			cJSON_AddNumberToObject(x, "p50", d[i]->p50);
			cJSON_AddNumberToObject(x, "p99", d[i]->p99);
			cJSON_AddNumberToObject(x, "max", d[i]->max);
		}
		cJSON_AddNumberToObject(o, "block_tokens", st.block_tokens);
		cJSON_AddNumberToObject(o, "distinct_blocks", (double)st.distinct_blocks);
		cJSON *ih = cJSON_AddObjectToObject(o, "ideal_hit_ratio");
		cJSON_AddNumberToObject(ih, "blocks", st.ideal_blocks);
		cJSON_AddNumberToObject(ih, "tokens", st.ideal_tokens);
		cJSON_AddNumberToObject(ih, "per_request_tokens", st.ideal_per_request);
		cJSON *lh = cJSON_AddObjectToObject(o, "lru_hit_ratio");
		for (size_t i = 0; i < st.n_caches; i++) {
			char k[32];
			snprintf(k, sizeof k, "%llu", (unsigned long long)st.cache_blocks[i]);
			cJSON_AddNumberToObject(lh, k, st.lru_hit[i]);
		}
		char *text = cJSON_Print(o);
		puts(text);
		free(text);
		cJSON_Delete(o);
		return EXIT_OK;
	}
	printf("%s (%s)\n", file, trace_format_name(st.format));
	printf("  requests              %12llu\n", (unsigned long long)st.requests);
	printf("  duration              %12.1f s\n", st.duration_s);
	printf("  arrival rate          %12.3f req/s\n", st.arrival_rate_per_s);
	printf("  %-20s %10s %10s %10s %10s\n", "", "mean", "p50", "p99", "max");
	printf("  %-20s %10.1f %10.0f %10.0f %10.0f\n", "input tokens", st.input.mean, st.input.p50,
	       st.input.p99, st.input.max);
	printf("  %-20s %10.1f %10.0f %10.0f %10.0f\n", "output tokens", st.output.mean,
	       st.output.p50, st.output.p99, st.output.max);
	printf("  distinct blocks       %12llu (of %u tokens)\n",
	       (unsigned long long)st.distinct_blocks, st.block_tokens);
	printf("  ideal prefix reuse    %11.1f%% of blocks, %.1f%% of prompt tokens, "
	       "%.1f%% per request (mean)\n",
	       100 * st.ideal_blocks, 100 * st.ideal_tokens, 100 * st.ideal_per_request);
	for (size_t i = 0; i < st.n_caches; i++)
		printf("  LRU %10llu blocks  %11.1f%% of blocks hit\n",
		       (unsigned long long)st.cache_blocks[i], 100 * st.lru_hit[i]);
	return EXIT_OK;
}

static int cmd_trace_gen(int argc, char **argv)
{
	struct common_opts o;
	int b = begin(argc, argv, usage_trace, &o);
	if (b)
		return b > 0 ? EXIT_OK : EXIT_USAGE;
	if (!o.out || o.policies || o.policy) {
		fprintf(stderr, "kvsim trace gen: give the output file as --out FILE\n%s",
			usage_trace);
		return EXIT_USAGE;
	}
	cJSON *root = load_tree_with_policy(&o);
	if (!root)
		return EXIT_USAGE;
	struct scenario s;
	int bad = load_scenario(&o, root, &s);
	cJSON_Delete(root);
	if (bad)
		return EXIT_USAGE;
	uint64_t n = 0;
	char err[1024];
	int rc = sim_trace_gen(&s, o.out, &n, err, sizeof err);
	cfg_scenario_free(&s);
	if (rc) {
		fprintf(stderr, "kvsim: %s\n", err);
		return rc == 2 ? EXIT_USAGE : EXIT_INTERNAL;
	}
	if (!o.quiet)
		printf("wrote %llu requests to %s\n", (unsigned long long)n, o.out);
	return EXIT_OK;
}

static int cmd_diff(int argc, char **argv)
{
	const char *files[2] = {NULL, NULL}, *tol = NULL;
	struct diff_opts o = {5.0, NULL};
	int nf = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_diff, stdout);
			return EXIT_OK;
		} else if (!strcmp(argv[i], "--list")) {
			res_diff_list(stdout);
			return EXIT_OK;
		} else if (!strcmp(argv[i], "--tolerance") && i + 1 < argc) {
			tol = argv[++i];
		} else if (!strcmp(argv[i], "--metrics") && i + 1 < argc) {
			o.metrics = argv[++i];
		} else if (argv[i][0] != '-' && nf < 2) {
			files[nf++] = argv[i];
		} else {
			fprintf(stderr, "kvsim diff: unexpected argument %s\n%s", argv[i], usage_diff);
			return EXIT_USAGE;
		}
	}
	if (nf != 2) {
		fprintf(stderr, "kvsim diff: give BASE.json and NEW.json\n%s", usage_diff);
		return EXIT_USAGE;
	}
	if (tol) {
		char *end;
		o.tolerance_pct = strtod(tol, &end);
		if (*end || !(o.tolerance_pct >= 0) || o.tolerance_pct > 1e6) {
			fprintf(stderr, "kvsim diff: --tolerance %s: expected a percentage >= 0\n", tol);
			return EXIT_USAGE;
		}
	}
	cJSON *j[2] = {NULL, NULL};
	char err[1024];
	for (int i = 0; i < 2; i++) {
		char *text = cfg_slurp(files[i], NULL, err, sizeof err);
		if (text) {
			j[i] = cJSON_Parse(text);
			if (!j[i])
				snprintf(err, sizeof err, "%s: not valid JSON; expected a kvsim "
							  "summary.json or comparison.json", files[i]);
			free(text);
		}
		if (!j[i]) {
			fprintf(stderr, "kvsim: %s\n", err);
			cJSON_Delete(j[0]);
			return EXIT_USAGE;
		}
	}
	struct diff_counts c;
	int rc = res_diff(j[0], j[1], &o, stdout, &c, err, sizeof err);
	cJSON_Delete(j[0]);
	cJSON_Delete(j[1]);
	if (rc) {
		fprintf(stderr, "kvsim: diff %s %s: %s\n", files[0], files[1], err);
		return EXIT_USAGE;
	}
	printf("%zu metrics compared: %zu regressions (%zu missing), %zu improvements, tolerance "
	       "%g%%\n",
	       c.compared, c.regressions, c.missing, c.improvements, o.tolerance_pct);
	return c.regressions ? 1 : EXIT_OK;
}

static const char usage_plot[] =
    "usage: kvsim plot DIR\n"
    "\n"
    "Draws the figures of a 'kvsim compare' output folder into DIR/plots/ as PNG and\n"
    "SVG with gnuplot: TTFT and TPOT CDFs per policy, prompt-token sources, migration\n"
    "and shed counts, and per policy KV utilisation and queue length per node over\n"
    "time. The scripts are plot/*.gp (built into kvsim; runnable by hand, see their\n"
    "headers).\n";

static int cmd_plot(int argc, char **argv)
{
	if (want_help(argc, argv)) {
		fputs(usage_plot, stdout);
		return EXIT_OK;
	}
	if (argc != 1 || argv[0][0] == '-') {
		fputs(usage_plot, stderr);
		return EXIT_USAGE;
	}
	char names[64][48], err[1024];
	int n = res_read_policies(argv[0], names, 64, err, sizeof err);
	if (n < 0) {
		fprintf(stderr, "kvsim: %s\n", err);
		return EXIT_USAGE;
	}
	const char *list[64];
	for (int i = 0; i < n; i++)
		list[i] = names[i];
	struct report_figs *figs = malloc(sizeof *figs);
	if (!figs || res_plot(argv[0], list, (size_t)n, figs, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", figs ? err : "out of memory");
		free(figs);
		return EXIT_INTERNAL;
	}
	printf("wrote %zu figures (PNG and SVG) to %s/plots/\n", figs->n, argv[0]);
	free(figs);
	return EXIT_OK;
}

static int cmd_trace(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		fputs(usage_trace, argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : EXIT_OK;
	}
	if (want_help(argc, argv)) {
		fputs(usage_trace, stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "stats"))
		return cmd_trace_stats(argc - 1, argv + 1);
	if (!strcmp(argv[0], "gen"))
		return cmd_trace_gen(argc - 1, argv + 1);
	fprintf(stderr, "kvsim trace: unknown subcommand \"%s\"\n%s", argv[0], usage_trace);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage_main, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("kvsim %s\n", kvsim_version());
		return EXIT_OK;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(cmd, "compare"))
		return cmd_compare(argc - 2, argv + 2);
	if (!strcmp(cmd, "validate"))
		return cmd_validate(argc - 2, argv + 2);
	if (!strcmp(cmd, "list"))
		return cmd_list(argc - 2, argv + 2);
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc - 2, argv + 2);
	if (!strcmp(cmd, "diff"))
		return cmd_diff(argc - 2, argv + 2);
	if (!strcmp(cmd, "plot"))
		return cmd_plot(argc - 2, argv + 2);
	fprintf(stderr, "kvsim: unknown command \"%s\"\n\n%s", cmd, usage_main);
	return EXIT_USAGE;
}
