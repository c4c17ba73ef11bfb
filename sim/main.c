/* main: the kvsim command line (DESIGN 7). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_errno.h>

#include "policies/policy.h"
#include "sim/commands.h"
#include "results/diff.h"
#include "results/metrics.h"
#include "results/report.h"
#include "results/writer.h"
#include "sim/config.h"
#include "sim/hugepages.h"
#include "sim/sim.h"
#include "sim/sweep.h"
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
    "  sweep [SCENARIO.json]      run a grid of scenario values (--vary), in parallel\n"
    "  plan SCENARIO --slo ...    smallest cluster (or highest rate) that meets SLOs\n"
    "  plot DIR                   figures of a compare output folder (gnuplot)\n"
    "  diff BASE.json NEW.json    compare two results metric by metric (exit 1 on a\n"
    "                             regression)\n"
    "  trace stats FILE           what a trace holds and how much a cache reuses\n"
    "  trace gen SCENARIO --out F write a scenario's requests as a kvsim trace\n"
    "  cost --gpu G --model M     one iteration's predicted time, term by term\n"
    "  calibrate                  fit the roofline to measured operator profiles\n"
    "  version                    print the version, and whether the heap uses huge pages\n"
    "\n"
    "No SCENARIO means the embedded default (workloads/scenarios/default.json).\n"
    "'kvsim COMMAND --help' describes each command. Exit codes: 0 ok; 1 a regression\n"
    "(diff) or nothing meeting the SLOs (plan); 2 bad usage or bad input (the message\n"
    "names the file, line or JSON path); 3 internal error (out of memory, I/O).\n";

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
    "  --audit            check invariants after every event (KV accounting, capacity,\n"
    "                     clock, token conservation, request states, where private\n"
    "                     blocks are cached); stop at the first violation with exit 3\n"
    "                     (slow; for tests and debugging)\n"
    "  --trace-events F   write a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev)\n"
    "                     of iterations, KV transfers and routing decisions (short runs;\n"
    "                     at most 2,000,000 events)\n"
    "  --quiet            no progress line and no table\n";

static const char usage_compare[] =
    "usage: kvsim compare [SCENARIO.json] --policies a,b,c|all [--set PATH=VALUE]...\n"
    "                     [--seed N] [--out DIR] [--catalog FILE] [--quiet] [--no-perf]\n"
    "                     [--plot] [--report]\n"
    "\n"
    "Runs the same request stream (same seed) under each policy and prints one\n"
    "table with the policies as columns. Writes DIR/<policy>/{summary.json,\n"
    "requests.csv} and DIR/comparison.json (default DIR: out). --policies all runs\n"
    "every policy of 'kvsim list policies'.\n"
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

static const char usage_sweep[] =
    "usage: kvsim sweep [SCENARIO.json] --vary PATH=v1,v2,... [--vary ...] [-j N]\n"
    "                   [--out DIR] [--set PATH=VALUE]... [--seed N] [--catalog FILE]\n"
    "                   [--emit-jobs FILE] [--emit-slurm FILE] [--quiet]\n"
    "       kvsim sweep --merge DIR\n"
    "\n"
    "Runs every combination of the varied values (the cartesian product; the last\n"
    "--vary changes fastest) as an ordinary run with its own seed, derived from the\n"
    "scenario seed and the point's values, in up to N worker processes (-j, default\n"
    "1). Each point's results go to DIR/points/pNNNNNN/ (default DIR: out/sweep);\n"
    "DIR/sweep.csv and DIR/sweep.json have one row per point: the varied values and\n"
    "the summary's figures. When a varied path is a rate (..._per_s), DIR/plots/\n"
    "gets latency_load.png/svg. A point that fails is reported (error.txt in its\n"
    "folder) and the others still run; exit 2 if any failed.\n"
    "\n"
    "Beyond one machine: --emit-jobs FILE writes one self-contained command per point\n"
    "(absolute paths) instead of running them, for GNU parallel locally or across\n"
    "hosts (parallel --jobs N < FILE, or parallel --sshloginfile HOSTS < FILE, with DIR\n"
    "on a shared file system); --emit-slurm FILE also writes a Slurm array-job script\n"
    "that runs line $SLURM_ARRAY_TASK_ID + 1 of the jobs file. Then 'kvsim sweep\n"
    "--merge DIR' builds the same sweep.csv/json from whatever points have finished,\n"
    "naming the missing ones (exit 2 while any is missing or failed).\n";

static const char usage_plan[] =
    "usage: kvsim plan [SCENARIO.json] --slo ttft_p99=S [--slo tpot_p99=S]\n"
    "                  --search nodes|rate [--min X] [--max X] [--gpus A,B,...]\n"
    "                  [--rate-key PATH] [--set PATH=VALUE]... [--seed N] [--policy P]\n"
    "                  [--catalog FILE] [--out DIR] [--quiet]\n"
    "\n"
    "Finds the smallest cluster.nodes that meets every SLO at the scenario's load\n"
    "(--search nodes; --min 1, --max 1024), or the highest arrival rate the cluster\n"
    "sustains (--search rate; the rate is workload.sessions_per_s for chat, else\n"
    "workload.rate_per_s, or --rate-key), by an exponential then a binary search,\n"
    "printing each probe (a full run, same seed). A probe passes when TTFT p99 and\n"
    "TPOT p99 are within the SLOs and at most 0.1% of requests were shed or failed.\n"
    "Goodput (DistServe) is the rate of requests that met all SLOs. With --gpus, the\n"
    "node search is repeated for each GPU type (cluster.gpu) and the answers ranked\n"
    "by cost per hour (catalog price_per_hour x GPUs; override with --catalog) and\n"
    "output tokens per dollar. Writes DIR/plan.json (default DIR: out/plan).\n"
    "Exit 0 when a value meets the SLOs, 1 when none in range does, 2 bad input.\n";

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
	int audit;
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
		if (!strcmp(a, "--audit")) {
			o->audit = 1;
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

/* The scenario the options name (file, --set, --seed, --policy), loaded and
 * validated; 0, or -1 after reporting. Caller frees with cfg_scenario_free. */
static int load_from_opts(const struct common_opts *o, struct scenario *s)
{
	cJSON *root = load_tree_with_policy(o);
	if (!root)
		return -1;
	int bad = load_scenario(o, root, s);
	cJSON_Delete(root);
	return bad;
}

static int run_one(const struct common_opts *o, const cJSON *root, const char *out_dir,
		   struct met_summary *sum)
{
	struct scenario s;
	char err[1024];
	if (load_scenario(o, root, &s))
		return EXIT_USAGE;
	struct sim_opts so = {.out_dir = out_dir, .progress = !o->quiet,
			      .trace_events = o->trace_events, .audit = o->audit};
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
	if (!strcmp(o.policies, "all"))
		pol_names(list, sizeof list); /* "a, b, c": the spaces are dropped below */
	else
		snprintf(list, sizeof list, "%s", o.policies);
	const char *names[64];
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
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
	struct scenario s;
	if (load_from_opts(&o, &s))
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
		printf("%-10s %12s %12s %9s %10s %6s %8s  %s\n", "name", "bf16 TFLOPS", "fp8 TFLOPS",
		       "HBM GB", "HBM TB/s", "TDP W", "$/GPU-h", "link");
		for (size_t i = 0; i < cat.n_gpus; i++) {
			const struct cat_gpu *g = &cat.gpus[i];
			printf("%-10s %12.0f %12.0f %9.0f %10.3f %6.0f %8.2f  %s\n", g->name,
			       g->bf16_flops / 1e12, g->fp8_flops / 1e12, g->hbm_bytes / 1e9,
			       g->hbm_bytes_per_s / 1e12, g->tdp_w, g->price_per_hour, g->link);
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
		for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
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
	struct scenario s;
	if (load_from_opts(&o, &s))
		return EXIT_USAGE;
	uint64_t n = 0;
	char err[1024];
	int rc = wl_trace_gen(&s, o.out, &n, err, sizeof err);
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

static int merge_report(const char *dir, int quiet)
{
	long missing = 0, failed = 0;
	char err[1024];
	if (swp_merge(dir, stderr, &missing, &failed, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return EXIT_USAGE;
	}
	if (!quiet)
		printf("wrote %s/sweep.csv and %s/sweep.json%s\n", dir, dir,
		       missing || failed ? " (incomplete: see above)" : "");
	return missing || failed ? EXIT_USAGE : EXIT_OK;
}

static int cmd_sweep(int argc, char **argv)
{
	struct swp sw;
	memset(&sw, 0, sizeof sw);
	const char *out = "out/sweep", *jobs = NULL, *slurm = NULL, *merge = NULL, *seed = NULL;
	int workers = 1, quiet = 0, rc = EXIT_USAGE;
	char err[1024];
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_sweep, stdout);
			swp_free(&sw);
			return EXIT_OK;
		} else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			quiet = 1;
		} else if (v && !strcmp(a, "--vary")) {
			if (swp_add_axis(&sw, argv[++i], err, sizeof err)) {
				fprintf(stderr, "kvsim sweep: %s\n", err);
				goto out;
			}
		} else if (v && !strcmp(a, "-j")) {
			char *end;
			long j = strtol(argv[++i], &end, 10);
			if (*end || j < 1 || j > 1024) {
				fprintf(stderr, "kvsim sweep: -j %s: expected 1 to 1024 workers\n", v);
				goto out;
			}
			workers = (int)j;
		} else if (v && !strcmp(a, "--out")) {
			out = argv[++i];
		} else if (v && !strcmp(a, "--set")) {
			if (sw.n_sets == SWP_MAX_SETS) {
				fprintf(stderr, "kvsim sweep: too many --set\n");
				goto out;
			}
			sw.sets[sw.n_sets++] = argv[++i];
		} else if (v && !strcmp(a, "--seed")) {
			seed = argv[++i];
		} else if (v && !strcmp(a, "--catalog")) {
			sw.catalog = argv[++i];
		} else if (v && !strcmp(a, "--emit-jobs")) {
			jobs = argv[++i];
		} else if (v && !strcmp(a, "--emit-slurm")) {
			slurm = argv[++i];
		} else if (v && !strcmp(a, "--merge")) {
			merge = argv[++i];
		} else if (a[0] != '-' && !sw.scenario) {
			sw.scenario = a;
		} else {
			fprintf(stderr, "kvsim sweep: unexpected argument %s\n%s", a, usage_sweep);
			goto out;
		}
	}
	if (merge) {
		rc = merge_report(merge, quiet);
		goto out;
	}
	if (sw.n_axes == 0) {
		fprintf(stderr, "kvsim sweep: give at least one --vary PATH=v1,v2,...\n%s",
			usage_sweep);
		goto out;
	}
	/* The base scenario must load, so that its errors come once, not per point. */
	struct common_opts o;
	memset(&o, 0, sizeof o);
	o.scenario = sw.scenario;
	o.catalog = sw.catalog;
	o.seed = seed;
	for (int k = 0; k < sw.n_sets; k++)
		o.sets[o.n_sets++] = sw.sets[k];
	struct scenario base;
	if (load_from_opts(&o, &base))
		goto out;
	sw.seed = base.seed;
	cfg_scenario_free(&base);
	if (swp_write_spec(&sw, out, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		rc = EXIT_INTERNAL;
		goto out;
	}
	if (jobs || slurm) {
		char exe[PATH_MAX], jobs_path[4200];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n <= 0) {
			fprintf(stderr, "kvsim: cannot find my own executable\n");
			rc = EXIT_INTERNAL;
			goto out;
		}
		exe[n] = 0;
		if (!jobs) {
			snprintf(jobs_path, sizeof jobs_path, "%s/jobs.txt", out);
			jobs = jobs_path;
		}
		FILE *f = fopen(jobs, "w");
		if (!f || swp_write_jobs(&sw, exe, out, f, err, sizeof err) || fclose(f)) {
			fprintf(stderr, "kvsim: %s: %s\n", jobs, f ? err : strerror(errno));
			rc = EXIT_INTERNAL;
			goto out;
		}
		if (slurm) {
			char abs_jobs[PATH_MAX], abs_out[PATH_MAX];
			f = fopen(slurm, "w");
			if (!f || !realpath(jobs, abs_jobs) || !realpath(out, abs_out)) {
				fprintf(stderr, "kvsim: %s: %s\n", slurm, strerror(errno));
				if (f)
					fclose(f);
				rc = EXIT_INTERNAL;
				goto out;
			}
			fprintf(f,
				"#!/bin/bash\n"
				"# kvsim sweep: %ld points as a Slurm array job. Submit: sbatch %s\n"
				"# then merge: kvsim sweep --merge %s\n"
				"#SBATCH --job-name=kvsim-sweep\n"
				"#SBATCH --array=0-%ld\n"
				"#SBATCH --cpus-per-task=1\n"
				"#SBATCH --output=%s/slurm-%%A_%%a.out\n"
				"set -euo pipefail\n"
				"sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" '%s' | bash\n",
				sw.n_points, slurm, abs_out, sw.n_points - 1, abs_out, abs_jobs);
			fclose(f);
			chmod(slurm, 0755);
		}
		if (!quiet)
			printf("wrote %ld jobs to %s%s%s\nrun them, e.g.: parallel --jobs 8 < %s "
			       "(or --sshloginfile HOSTS)\nthen: kvsim sweep --merge %s\n",
			       sw.n_points, jobs, slurm ? " and the Slurm script " : "",
			       slurm ? slurm : "", jobs, out);
		rc = EXIT_OK;
		goto out;
	}
	/* Run here: worker k takes points k, k + N, ... */
	if (workers > sw.n_points)
		workers = (int)sw.n_points;
	fflush(stdout);
	fflush(stderr);
	pid_t pids[1024];
	for (int k = 0; k < workers; k++) {
		pids[k] = fork();
		if (pids[k] < 0) {
			fprintf(stderr, "kvsim: fork: %s\n", strerror(errno));
			rc = EXIT_INTERNAL;
			goto out;
		}
		if (pids[k] == 0) {
			for (long i = k; i < sw.n_points; i += workers) {
				char canon[4096], perr[1024];
				swp_point_canon(&sw, i, canon, sizeof canon);
				int prc = swp_run_point(&sw, i, out, perr, sizeof perr);
				if (!quiet || prc)
					fprintf(stderr, "[%ld/%ld] %s: %s\n", i + 1, sw.n_points, canon,
						prc ? perr : "done");
			}
			_exit(0);
		}
	}
	for (int k = 0; k < workers; k++) {
		int st;
		while (waitpid(pids[k], &st, 0) < 0 && errno == EINTR)
			;
	}
	rc = merge_report(out, quiet);
	for (int k = 0; k < sw.n_axes; k++) {
		size_t pl = strlen(sw.ax[k].path);
		if (pl > 6 && !strcmp(sw.ax[k].path + pl - 6, "_per_s")) {
			if (res_plot_latency_load(out, k + 1, sw.ax[k].path, err, sizeof err))
				fprintf(stderr, "kvsim: %s\n", err);
			else if (!quiet)
				printf("figure: %s/plots/latency_load.png (and .svg)\n", out);
			break;
		}
	}
out:
	swp_free(&sw);
	return rc;
}

struct plan {
	struct common_opts o;
	double slo_ttft, slo_tpot; /* <= 0: not constrained */
	int by_rate;
	double min, max;
	const char *rate_key;
	cJSON *probes;
};

/* Runs the scenario with path=value and extra (path=value or NULL). Returns
 * 1 pass, 0 fail, -1 error (reported). */
static int probe(struct plan *p, const char *label, const char *path, double value,
		 const char *extra, struct met_summary *out)
{
	cJSON *root = load_tree_with_policy(&p->o);
	if (!root)
		return -1;
	char set[256], err[1024];
	snprintf(set, sizeof set, "%s=%.10g", path, value);
	if (cfg_apply_set(root, set, err, sizeof err) ||
	    (extra && cfg_apply_set(root, extra, err, sizeof err))) {
		fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(root);
		return -1;
	}
	struct scenario sc;
	int bad = load_scenario(&p->o, root, &sc);
	cJSON_Delete(root);
	if (bad)
		return -1;
	struct sim_opts so = {0};
	int rc = sim_run(&sc, &so, out, err, sizeof err);
	cfg_scenario_free(&sc);
	if (rc) {
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

static int cmd_plan(int argc, char **argv)
{
	struct plan p;
	memset(&p, 0, sizeof p);
	char *filtered[512];
	int nf = 0;
	const char *search = NULL, *gpus = NULL, *min = NULL, *max = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_plan, stdout);
			return EXIT_OK;
		}
		if (v && !strcmp(a, "--slo")) {
			i++;
			double x;
			char *end;
			if (!strncmp(v, "ttft_p99=", 9) && (x = strtod(v + 9, &end)) > 0 && !*end)
				p.slo_ttft = x;
			else if (!strncmp(v, "tpot_p99=", 9) && (x = strtod(v + 9, &end)) > 0 && !*end)
				p.slo_tpot = x;
			else {
				fprintf(stderr, "kvsim plan: --slo %s: expected ttft_p99=SECONDS or "
						"tpot_p99=SECONDS\n", v);
				return EXIT_USAGE;
			}
		} else if (v && !strcmp(a, "--search")) {
			search = argv[++i];
		} else if (v && !strcmp(a, "--gpus")) {
			gpus = argv[++i];
		} else if (v && !strcmp(a, "--min")) {
			min = argv[++i];
		} else if (v && !strcmp(a, "--max")) {
			max = argv[++i];
		} else if (v && !strcmp(a, "--rate-key")) {
			p.rate_key = argv[++i];
		} else if (nf < 510) {
			filtered[nf++] = argv[i];
		}
	}
	if (parse_common(nf, filtered, &p.o, usage_plan))
		return EXIT_USAGE;
	if (!search || (strcmp(search, "nodes") && strcmp(search, "rate"))) {
		fprintf(stderr, "kvsim plan: give --search nodes or --search rate\n%s", usage_plan);
		return EXIT_USAGE;
	}
	if (p.slo_ttft <= 0 && p.slo_tpot <= 0) {
		fprintf(stderr, "kvsim plan: give at least one --slo ttft_p99=S or tpot_p99=S\n");
		return EXIT_USAGE;
	}
	p.by_rate = !strcmp(search, "rate");
	p.min = p.by_rate ? 0 : 1;
	p.max = p.by_rate ? 0 : 1024;
	char *end;
	if ((min && ((p.min = strtod(min, &end)) <= 0 || *end)) ||
	    (max && ((p.max = strtod(max, &end)) <= 0 || *end)) ||
	    (!p.by_rate && (p.min != (long)p.min || p.max != (long)p.max)) ||
	    (p.max && p.min > p.max)) {
		fprintf(stderr, "kvsim plan: --min/--max: expected positive numbers, min <= max "
				"(whole numbers for nodes)\n");
		return EXIT_USAGE;
	}
	/* The scenario as given: its rate and its GPU. */
	struct scenario base;
	if (load_from_opts(&p.o, &base))
		return EXIT_USAGE;
	double start = 0;
	if (p.by_rate) {
		const cJSON *w = base.workload;
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(w, "kind");
		const char *k = cJSON_IsString(kind) ? kind->valuestring : "chat";
		if (!p.rate_key)
			p.rate_key = !strcmp(k, "chat") ? "workload.sessions_per_s"
				     : (!strcmp(k, "open") || !strcmp(k, "rag") || !strcmp(k, "agent"))
					 ? "workload.rate_per_s"
					 : NULL;
		if (!p.rate_key) {
			fprintf(stderr, "kvsim plan: a %s workload has no rate key; give --rate-key PATH\n",
				k);
			cfg_scenario_free(&base);
			return EXIT_USAGE;
		}
		const char *leaf = strrchr(p.rate_key, '.');
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, leaf ? leaf + 1 : p.rate_key);
		start = cJSON_IsNumber(v) ? v->valuedouble
			: !strcmp(k, "chat") ? 4 : !strcmp(k, "agent") ? 2 : 10;
		if (p.min > 0 && start < p.min)
			start = p.min;
		if (p.max <= 0)
			p.max = start * 1024;
		if (p.min <= 0)
			p.min = start / 1024;
	}
	char gpu_list[1024];
	snprintf(gpu_list, sizeof gpu_list, "%s", gpus ? gpus : base.cluster.gpu->name);
	const char *names[32];
	int ng = 0;
	char *save = NULL;
	for (char *t = strtok_r(gpu_list, ",", &save); t && ng < 32; t = strtok_r(NULL, ",", &save)) {
		const struct cat_gpu *g = catalog_gpu(&base.cat, t);
		if (!g) {
			char known[512];
			catalog_names(&base.cat, "gpus", known, sizeof known);
			fprintf(stderr, "kvsim plan: --gpus: unknown GPU \"%s\" (known: %s)\n", t,
				known);
			cfg_scenario_free(&base);
			return EXIT_USAGE;
		}
		names[ng++] = t;
	}
	p.probes = cJSON_CreateArray();
	cJSON *answers = cJSON_CreateArray();
	struct {
		const char *gpu;
		double value, cost, tokens_per_dollar, goodput;
		int ok;
	} res[32];
	int rc = EXIT_OK, any = 0;
	for (int g = 0; g < ng && rc == EXIT_OK; g++) {
		char extra[128];
		snprintf(extra, sizeof extra, "cluster.gpu=%s", names[g]);
		if (!p.o.quiet) {
			printf("%s: searching %s for", names[g], p.by_rate ? p.rate_key : "cluster.nodes");
			if (p.slo_ttft > 0)
				printf(" TTFT p99 <= %g s", p.slo_ttft);
			if (p.slo_tpot > 0)
				printf("%s TPOT p99 <= %g s", p.slo_ttft > 0 ? "," : "", p.slo_tpot);
			printf("\n");
		}
		struct met_summary best;
		memset(&best, 0, sizeof best);
		double v = p.by_rate ? search_rate(&p, names[g], extra, start, &best)
				     : (double)search_nodes(&p, names[g], extra, &best);
		if (v < 0) {
			rc = EXIT_USAGE;
			break;
		}
		const struct cat_gpu *gp = catalog_gpu(&base.cat, names[g]);
		double nodes = p.by_rate ? base.cluster.nodes : v;
		double cost = nodes * base.cluster.tp * gp->price_per_hour;
		res[g].gpu = names[g];
		res[g].value = v;
		res[g].ok = v > 0;
		res[g].cost = cost;
		res[g].goodput = best.goodput_rps;
		res[g].tokens_per_dollar = cost > 0 ? best.output_tokens_per_s * 3600 / cost : 0;
		any |= res[g].ok;
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "gpu", names[g]);
		cJSON_AddBoolToObject(a, "met", res[g].ok);
		if (res[g].ok) {
			cJSON_AddNumberToObject(a, p.by_rate ? "rate" : "nodes", v);
			cJSON_AddNumberToObject(a, "gpus", nodes * base.cluster.tp);
			cJSON_AddNumberToObject(a, "cost_per_hour", cost);
			cJSON_AddNumberToObject(a, "output_tokens_per_dollar", res[g].tokens_per_dollar);
			cJSON_AddNumberToObject(a, "goodput_rps", best.goodput_rps);
		}
		cJSON_AddItemToArray(answers, a);
		met_summary_free(&best);
		if (!p.o.quiet) {
			if (res[g].ok)
				printf("%s: %s %.6g (%.0f GPUs, $%.2f/h, %.0f output tokens per $)\n\n",
				       names[g], p.by_rate ? "highest rate" : "smallest cluster",
				       v, nodes * base.cluster.tp, cost, res[g].tokens_per_dollar);
			else
				printf("%s: no %s in [%g, %g] meets the SLOs\n\n", names[g],
				       p.by_rate ? "rate" : "node count", p.min, p.max);
		}
	}
	if (rc == EXIT_OK && ng > 1 && !p.o.quiet) {
		/* Rank: cheapest (nodes) or most tokens per dollar (rate). */
		int order[32];
		for (int i = 0; i < ng; i++)
			order[i] = i;
		for (int i = 1; i < ng; i++)
			for (int j = i; j > 0; j--) {
				int a = order[j - 1], b = order[j];
				int worse = !res[a].ok && res[b].ok;
				if (res[a].ok && res[b].ok)
					worse = p.by_rate ? res[a].tokens_per_dollar < res[b].tokens_per_dollar
							  : res[a].cost > res[b].cost;
				if (!worse)
					break;
				order[j - 1] = b;
				order[j] = a;
			}
		printf("%-4s %-10s %10s %10s %16s %14s\n", "rank", "gpu", p.by_rate ? "rate" : "nodes",
		       "$/hour", "out tokens / $", "goodput req/s");
		for (int i = 0; i < ng; i++) {
			int k = order[i];
			if (res[k].ok)
				printf("%-4d %-10s %10.6g %10.2f %16.0f %14.2f\n", i + 1, res[k].gpu,
				       res[k].value, res[k].cost, res[k].tokens_per_dollar, res[k].goodput);
			else
				printf("%-4s %-10s %10s\n", "-", res[k].gpu, "none");
		}
	}
	if (rc == EXIT_OK) {
		const char *out = p.o.out ? p.o.out : "out/plan";
		char path[4200], err[1024];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "scenario", base.name);
		cJSON_AddStringToObject(j, "search", p.by_rate ? p.rate_key : "cluster.nodes");
		cJSON *slo = cJSON_AddObjectToObject(j, "slo");
		if (p.slo_ttft > 0)
			cJSON_AddNumberToObject(slo, "ttft_p99_s", p.slo_ttft);
		if (p.slo_tpot > 0)
			cJSON_AddNumberToObject(slo, "tpot_p99_s", p.slo_tpot);
		cJSON_AddNumberToObject(j, "seed", (double)base.seed);
		cJSON_AddStringToObject(j, "kvsim_version", kvsim_version());
		cJSON_AddItemToObject(j, "answers", answers);
		cJSON_AddItemToObject(j, "probes", p.probes);
		answers = p.probes = NULL;
		snprintf(path, sizeof path, "%s/plan.json", out);
		if (res_mkdirs(out, err, sizeof err) || res_write_json(path, j, err, sizeof err)) {
			fprintf(stderr, "kvsim: %s\n", err);
			rc = EXIT_INTERNAL;
		} else if (!p.o.quiet) {
			printf("wrote %s\n", path);
		}
		cJSON_Delete(j);
		if (rc == EXIT_OK && !any)
			rc = 1;
	}
	cJSON_Delete(answers);
	cJSON_Delete(p.probes);
	cfg_scenario_free(&base);
	return rc;
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
	hp_reexec(argv); /* huge pages for the heap: see sim/hugepages.h */
	/* GSL's default handler aborts; kvsim checks its inputs instead. */
	gsl_set_error_handler_off();
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
		char hp[160];
		hp_describe(hp, sizeof hp);
		printf("kvsim %s\nhuge pages: %s\n", kvsim_version(), hp);
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
	if (!strcmp(cmd, "sweep"))
		return cmd_sweep(argc - 2, argv + 2);
	if (!strcmp(cmd, "plan"))
		return cmd_plan(argc - 2, argv + 2);
	if (!strcmp(cmd, "cost"))
		return cmd_cost(argc - 2, argv + 2);
	if (!strcmp(cmd, "calibrate"))
		return cmd_calibrate(argc - 2, argv + 2);
	fprintf(stderr, "kvsim: unknown command \"%s\"\n\n%s", cmd, usage_main);
	return EXIT_USAGE;
}
