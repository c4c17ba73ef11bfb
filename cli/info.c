/* info: `kvsim list`, `kvsim diff`, `kvsim plot` and `kvsim version`. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "policies/policy.h"
#include "results/diff.h"
#include "results/report.h"
#include "base/hugepages.h"
#include "sim/sim.h"
#include "workloads/workload.h"

/* Parses a command that takes no option but --help and exactly want
 * positionals (what they are: expected); CLI_END to go on. */
static int parse_positionals(const struct cli_ctx *cx, int argc, char **argv,
			     struct cli_args *a, int want, const char *expected)
{
	int end = cli_parse_positionals(cx, argc, argv, a);
	if (end == CLI_END && a->n_pos > want) {
		cli_misuse(cx->cmd, "unexpected argument %s", a->pos[want]);
		return CLI_BAD;
	}
	if (end == CLI_END && a->n_pos < want) {
		cli_misuse(cx->cmd, "expected %s", expected);
		return CLI_BAD;
	}
	return end;
}

static void list_gpus(const struct catalog *cat)
{
	printf("%-10s %12s %12s %9s %10s %6s %8s %7s  %s\n", "name", "bf16 TFLOPS", "fp8 TFLOPS",
	       "HBM GiB", "HBM TB/s", "TDP W", "$/GPU-h", "idle W", "link");
	for (size_t i = 0; i < cat->n_gpus; i++) {
		const struct cat_gpu *g = &cat->gpus[i];
		char price[16];
		snprintf(price, sizeof price, isnan(g->price_per_hour) ? "n/a" : "%.2f",
			 g->price_per_hour);
		printf("%-10s %12.0f %12.0f %9.1f %10.3f %6.0f %8s %7.0f  %s\n", g->name,
		       g->bf16_flops / 1e12, g->fp8_flops / 1e12, g->hbm_bytes / 1073741824.0,
		       g->hbm_bytes_per_s / 1e12, g->tdp_w, price, catalog_gpu_idle_w(g), g->link);
	}
}

static void list_models(const struct catalog *cat)
{
	printf("%-14s %6s %7s %7s %8s %8s %9s %9s %11s %8s\n", "name", "layers", "hidden",
	       "q_heads", "kv_heads", "head_dim", "params_B", "active_B", "KV_B/token", "context");
	for (size_t i = 0; i < cat->n_models; i++) {
		const struct cat_model *m = &cat->models[i];
		printf("%-14s %6d %7d %7d %8d %8d %9.2f %9.2f %11.0f %8d\n", m->name, m->layers,
		       m->hidden, m->q_heads, m->kv_heads, m->head_dim, m->params / 1e9,
		       m->active_params / 1e9, m->kv_bytes_per_token, m->max_context);
	}
}

static void list_links(const struct catalog *cat)
{
	printf("%-10s %12s %11s\n", "name", "GB/s (1 dir)", "latency us");
	for (size_t i = 0; i < cat->n_links; i++)
		printf("%-10s %12.1f %11.1f\n", cat->links[i].name, cat->links[i].bytes_per_s / 1e9,
		       cat->links[i].latency_s * 1e6);
}

static void list_servers(const struct catalog *cat)
{
	printf("%-16s %-10s %5s %5s %-10s %s\n", "name", "gpu", "GPUs", "NICs", "NIC link",
	       "host");
	for (size_t i = 0; i < cat->n_servers; i++) {
		const struct cat_server *v = &cat->servers[i];
		printf("%-16s %-10s %5d %5d %-10s %s\n", v->name, v->gpu[0] ? v->gpu : "(any)",
		       v->gpus, v->nics, v->nic, v->host);
	}
}

#define LIST_TOPICS "policies|mechanisms|gpus|models|links|servers|workloads"

static int cmd_list(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_args a;
	int end = parse_positionals(cx, argc, argv, &a, 1, "what to list: " LIST_TOPICS);
	if (end != CLI_END)
		return cli_end_code(end);
	const char *what = a.pos[0];
	if (!strcmp(what, "policies")) {
		size_t n;
		const struct pol_ops *const *all = pol_all(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-18s %-10s %s\n", all[i]->name, mech_family_name(all[i]->family),
			       all[i]->description);
		printf("\nThe family sets the defaults of the router's mechanisms: kvsim list "
		       "mechanisms,\ndocs/policies.md, \"Mechanisms\".\n");
		return CLI_OK;
	}
	if (!strcmp(what, "mechanisms")) {
		mech_list(stdout);
		return CLI_OK;
	}
	if (!strcmp(what, "workloads")) {
		size_t n;
		const struct wl_ops *const *all = wl_all(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-10s %s\n", all[i]->name, all[i]->description);
		return CLI_OK;
	}
	void (*list)(const struct catalog *) = !strcmp(what, "gpus")     ? list_gpus
					       : !strcmp(what, "models") ? list_models
					       : !strcmp(what, "links")  ? list_links
					       : !strcmp(what, "servers") ? list_servers
									 : NULL;
	if (!list)
		return cli_misuse(cx->cmd, "unknown list \"%s\" (expected %s)", what, LIST_TOPICS);
	struct catalog cat;
	char err[512];
	if (catalog_load_builtin(&cat, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_INTERNAL;
	}
	list(&cat);
	catalog_free(&cat);
	return CLI_OK;
}

enum { O_TOLERANCE = CLI_OPT_OWN, O_METRICS, O_LIST };

static const struct cli_opt diff_opts[] = {
    {O_TOLERANCE, "tolerance", 0, "PCT",
     "a regression is worse by more than PCT percent (default 5)", NULL, 0},
    {O_METRICS, "metrics", 0, "a,b,...",
     "compare these metrics only (perf.* figures only when named here)", NULL, 0},
    {O_LIST, "list", 0, NULL, "print the metrics and exit", NULL, 0},
    {0},
};
CLI_TABLE_FITS(diff_opts);

/* The two files as JSON; 0, or -1 after reporting. */
static int read_pair(const char *const files[2], cJSON *j[2])
{
	char err[1024];
	for (int i = 0; i < 2; i++)
		if (res_diff_read(files[i], &j[i], err, sizeof err)) {
			fprintf(stderr, "kvsim: %s\n", err);
			cJSON_Delete(j[0]);
			return -1;
		}
	return 0;
}

static int cmd_diff(const struct cli_ctx *cx, int argc, char **argv)
{
	const char *v, *metrics[256];
	char buf[4096];
	struct diff_opts o = {.tolerance_pct = 5.0};
	struct cli_args a;
	int id, list = 0;
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case O_TOLERANCE:
			if (cli_parse_num(v, &o.tolerance_pct) || o.tolerance_pct < 0 ||
			    o.tolerance_pct > 1e6)
				return cli_bad_value(cx->cmd, "--tolerance", "a percentage in [0, 1e6]", v);
			break;
		case O_METRICS:
			/* checked here, so that an empty list is an error; res_diff
			 * splits it again */
			if (cli_list(cx->cmd, "--metrics", "metric names", v, buf, sizeof buf, metrics,
				     256) < 0)
				return CLI_USAGE;
			o.metrics = v;
			break;
		case O_LIST: list = 1; break;
		}
	}
	if (id != CLI_END)
		return cli_end_code(id);
	if (list) {
		res_diff_list(stdout);
		return CLI_OK;
	}
	if (a.n_pos != 2)
		return cli_misuse(cx->cmd, "give BASE.json and NEW.json");
	const char *files[2] = {a.pos[0], a.pos[1]};
	cJSON *j[2] = {NULL, NULL};
	if (read_pair(files, j))
		return CLI_USAGE;
	struct diff_counts c;
	char err[1024];
	o.base_name = files[0];
	o.new_name = files[1];
	/* The table is held until the whole diff succeeded: bad input prints
	 * only its error. */
	char *table = NULL;
	size_t table_len = 0;
	FILE *tf = open_memstream(&table, &table_len);
	if (!tf) {
		fprintf(stderr, "kvsim: diff: %s\n", strerror(errno));
		cJSON_Delete(j[0]);
		cJSON_Delete(j[1]);
		return CLI_INTERNAL;
	}
	int rc = res_diff(j[0], j[1], &o, tf, &c, err, sizeof err);
	cJSON_Delete(j[0]);
	cJSON_Delete(j[1]);
	if (fclose(tf) && !rc) {
		snprintf(err, sizeof err, "%s", strerror(errno));
		rc = -1;
	}
	if (rc) {
		free(table);
		fprintf(stderr, "kvsim: diff %s %s: %s\n", files[0], files[1], err);
		return CLI_USAGE;
	}
	fwrite(table, 1, table_len, stdout);
	free(table);
	printf("%zu metrics compared: %zu regressions (%zu missing), %zu improvements, tolerance "
	       "%g%%\n",
	       c.compared, c.regressions, c.missing, c.improvements, o.tolerance_pct);
	return c.regressions ? CLI_NOT_MET : CLI_OK;
}

static int cmd_plot(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_args a;
	int end = parse_positionals(cx, argc, argv, &a, 1, "DIR, a 'kvsim compare' output folder");
	if (end != CLI_END)
		return cli_end_code(end);
	const char *dir = a.pos[0];
	char names[64][48], err[1024];
	int n = res_read_policies(dir, names, 64, err, sizeof err);
	if (n < 0) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_USAGE;
	}
	const char *list[64];
	for (int i = 0; i < n; i++)
		list[i] = names[i];
	struct report_figs *figs = malloc(sizeof *figs);
	int rc = figs ? res_plot(dir, list, (size_t)n, figs, err, sizeof err) : 3;
	if (rc) {
		fprintf(stderr, "kvsim: %s\n", figs ? err : "out of memory");
		free(figs);
		return rc == 2 ? CLI_USAGE : CLI_INTERNAL;
	}
	printf("wrote %zu figures (PNG and SVG) to %s/plots/\n", figs->n, dir);
	free(figs);
	return CLI_OK;
}

static int cmd_version(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_args a;
	int end = parse_positionals(cx, argc, argv, &a, 0, "");
	if (end != CLI_END)
		return cli_end_code(end);
	char hp[160];
	hp_describe(hp, sizeof hp);
	printf("kvsim %s\nhuge pages: %s\n", kvsim_version(), hp);
	return CLI_OK;
}

const struct cli_cmd cli_list_cmd = {
    .name = "list",
    .args = "WHAT",
    .summary = "policies | mechanisms | gpus | models | links | servers | workloads",
    .run = cmd_list,
    .about = "Prints what the registry or the built-in catalogs hold: WHAT is policies,\n"
	     "mechanisms (the router's mechanism keys, as a Markdown table), gpus, models,\n"
	     "links, servers or workloads.\n",
    .pos_complete = "policies mechanisms gpus models links servers workloads",
};

const struct cli_cmd cli_diff_cmd = {
    .name = "diff",
    .args = "BASE.json NEW.json",
    .summary = "two results metric by metric; exit 1 on a regression",
    .run = cmd_diff,
    .opts = diff_opts,
    .about = "Compares two summary.json files, or two comparison.json files (policies matched\n"
	     "by name), metric by metric, knowing for each whether higher or lower is better.\n"
	     "Prints the metrics that changed and marks regressions: worse by more than PCT\n"
	     "percent (simulated figures are deterministic, so 0 is meaningful). A metric or\n"
	     "policy that the base has and the new one lacks is a regression. perf.* figures\n"
	     "(wall time, speed, memory) are compared only when --metrics names them. A base\n"
	     "with none of the metrics compared, or a compared figure that is not a finite\n"
	     "number >= 0, is bad input: a check of nothing does not pass.\n"
	     "Exit 0: no regression; 1: a regression; 2: bad input.\n",
    .pos_complete = "@file",
};

const struct cli_cmd cli_plot_cmd = {
    .name = "plot",
    .args = "DIR",
    .summary = "figures of a compare output folder (gnuplot)",
    .run = cmd_plot,
    .about = "Draws the figures of a 'kvsim compare' output folder into DIR/plots/ as PNG and\n"
	     "SVG with gnuplot: TTFT and TPOT CDFs per policy, prompt-token sources, migration\n"
	     "and shed counts, and per policy KV utilisation and queue length per node over\n"
	     "time. The scripts are plot/*.gp (built into kvsim; runnable by hand, see their\n"
	     "headers). A figure with nothing to draw says so; a missing or damaged CSV file\n"
	     "is exit 2 naming it, with no figure drawn.\n",
    .pos_complete = "@dir",
};

const struct cli_cmd cli_version_cmd = {
    .name = "version",
    .args = "",
    .summary = "the version, and whether the heap has huge pages",
    .run = cmd_version,
    .about = "Prints kvsim's version (with the git commit it was built from) and what the heap\n"
	     "got: huge pages through glibc.malloc.hugetlb, or why not (KVSIM_HUGEPAGES=0, a\n"
	     "GLIBC_TUNABLES setting of the user's, valgrind). Same as 'kvsim --version'.\n",
};
