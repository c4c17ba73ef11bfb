/* sweep: `kvsim sweep`: a grid of runs in a pool of worker processes, or as jobs for elsewhere. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cells.h"
#include "cli/cli.h"
#include "results/report.h"
#include "sim/sim.h"
#include "experiments/sweep.h"

_Static_assert(CLI_MAX_SETS <= SWP_MAX_SETS, "every --set must fit in struct swp");

enum { O_VARY = CLI_OPT_OWN, O_JOBS, O_EMIT_JOBS, O_EMIT_SLURM, O_MERGE, O_SEEDS };

static const struct cli_opt sweep_opts[] = {
    {O_VARY, "vary", 0, "PATH=v1,v2",
     "a scenario key and its comma-separated values: one axis of the grid", NULL,
     CLI_REQUIRED | CLI_REPEAT},
    {O_JOBS, "jobs", 'j', "N", "run in up to N worker processes (default 1)", NULL, 0},
    {O_SEEDS, "seeds", 0, "N|a-b|a,b,c",
     "run every point over several seeds (N: seeds 1 to N): a last axis, seed (the column "
     "vary.seed)",
     NULL, 0},
    CLI_ROW_OUT("output directory (default: out/sweep)"),
    CLI_ROW_SET,
    CLI_ROW_SEED,
    CLI_ROW_CATALOG,
    {O_EMIT_JOBS, "emit-jobs", 0, "FILE",
     "write one self-contained command per point instead of running them", "@file", 0},
    {O_EMIT_SLURM, "emit-slurm", 0, "FILE",
     "also write a Slurm array-job script that runs the jobs file", "@file", 0},
    {O_MERGE, "merge", 0, "DIR", "build DIR/sweep.csv and sweep.json from the points finished",
     "@dir", 0},
    CLI_ROW_QUIET("print only failures"),
    {0},
};
CLI_TABLE_FITS(sweep_opts);

struct sweep_args {
	struct cli_common o;
	struct swp sw;
	int workers;
	const char *jobs, *slurm, *merge;
};

/* The options into s; CLI_END to go on, else cli_next's end. */
static int parse(const struct cli_ctx *cx, int argc, char **argv, struct sweep_args *s)
{
	struct cli_args a;
	const char *v;
	char err[1024];
	const char *seeds = NULL;
	int id;
	s->workers = 1;
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0) {
		long long j;
		switch (id) {
		case O_VARY:
			if (swp_add_axis(&s->sw, v, err, sizeof err)) {
				fprintf(stderr, "kvsim sweep: %s\n", err);
				return CLI_BAD;
			}
			break;
		case O_JOBS:
			if (cli_parse_int(v, 1, 1024, &j)) {
				cli_bad_value(cx->cmd, "--jobs", "1 to 1024 workers", v);
				return CLI_BAD;
			}
			s->workers = (int)j;
			break;
		case O_EMIT_JOBS: s->jobs = v; break;
		case O_EMIT_SLURM: s->slurm = v; break;
		case O_MERGE: s->merge = v; break;
		case O_SEEDS: seeds = v; break;
		default:
			if (cli_common_opt(cx->cmd, &s->o, id, v) < 0)
				return CLI_BAD;
		}
	}
	if (id == CLI_END)
		id = cli_scenario_arg(cx, &a, &s->o);
	if (id != CLI_END)
		return id;
	if (seeds) { /* the last axis, so that a point's seeds are rows in a row */
		struct cmp_grid g = {0};
		char axis[64 * 24] = "seed=";
		if (cmp_parse_seeds(&g, seeds)) {
			cli_bad_value(cx->cmd, "--seeds", "N (1-64), a-b or a,b,c: distinct seeds", seeds);
			return CLI_BAD;
		}
		for (int k = 0; k < g.n_seeds; k++)
			snprintf(axis + strlen(axis), sizeof axis - strlen(axis), "%s%lld", k ? "," : "",
				 g.seeds[k]);
		if (swp_add_axis(&s->sw, axis, err, sizeof err)) {
			fprintf(stderr, "kvsim sweep: --seeds: %s\n", err);
			return CLI_BAD;
		}
	}
	s->sw.scenario = s->o.scenario;
	s->sw.catalog = s->o.catalog;
	for (int k = 0; k < s->o.n_sets; k++)
		s->sw.sets[s->sw.n_sets++] = s->o.sets[k];
	return CLI_END;
}

static int merge_report(const char *dir, int quiet)
{
	long missing = 0, failed = 0;
	char err[1024];
	if (swp_merge(dir, stderr, &missing, &failed, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_USAGE;
	}
	if (!quiet)
		printf("wrote %s/sweep.csv and %s/sweep.json%s\n", dir, dir,
		       missing || failed ? " (incomplete: see above)" : "");
	return missing || failed ? CLI_USAGE : CLI_OK;
}

/* A Slurm array job that runs line $SLURM_ARRAY_TASK_ID + 1 of the jobs file. */
static int write_slurm(const struct swp *sw, const char *slurm, const char *jobs, const char *out)
{
	char abs_jobs[PATH_MAX], abs_out[PATH_MAX];
	FILE *f = fopen(slurm, "w");
	if (!f || !realpath(jobs, abs_jobs) || !realpath(out, abs_out)) {
		fprintf(stderr, "kvsim: %s: %s\n", slurm, strerror(errno));
		if (f)
			fclose(f);
		return CLI_INTERNAL;
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
		sw->n_points, slurm, abs_out, sw->n_points - 1, abs_out, abs_jobs);
	fclose(f);
	chmod(slurm, 0755);
	return CLI_OK;
}

/* --emit-jobs/--emit-slurm: the points as commands for GNU parallel or Slurm. */
static int emit(const struct sweep_args *s, const char *out)
{
	char exe[PATH_MAX], jobs_path[4200], err[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		fprintf(stderr, "kvsim: cannot find my own executable\n");
		return CLI_INTERNAL;
	}
	exe[n] = 0;
	const char *jobs = s->jobs;
	if (!jobs) {
		snprintf(jobs_path, sizeof jobs_path, "%s/jobs.txt", out);
		jobs = jobs_path;
	}
	FILE *f = fopen(jobs, "w");
	if (!f || swp_write_jobs(&s->sw, exe, out, f, err, sizeof err) || fclose(f)) {
		fprintf(stderr, "kvsim: %s: %s\n", jobs, f ? err : strerror(errno));
		return CLI_INTERNAL;
	}
	if (s->slurm && write_slurm(&s->sw, s->slurm, jobs, out))
		return CLI_INTERNAL;
	if (!s->o.quiet)
		printf("wrote %ld jobs to %s%s%s\nrun them, e.g.: parallel --jobs 8 < %s "
		       "(or --sshloginfile HOSTS)\nthen: kvsim sweep --merge %s\n",
		       s->sw.n_points, jobs, s->slurm ? " and the Slurm script " : "",
		       s->slurm ? s->slurm : "", jobs, out);
	return CLI_OK;
}

/* Interrupted (SIGINT, SIGTERM sent to the pool alone): the workers not
 * yet waited for are told to stop, once; each removes its temporaries. */
static void stop_workers(const pid_t *pids, int n, int *told)
{
	if (!intr_caught() || *told)
		return;
	for (int j = 0; j < n; j++)
		kill(pids[j], SIGTERM);
	*told = 1;
}

/* The points in `workers` forked processes, worker k taking points k,
 * k + workers, ...; each point's result (or error.txt) lands in its folder,
 * so the pool only waits. 0, or -1 after reporting. */
static int run_pool(const struct swp *sw, int workers, const char *out, int quiet)
{
	if (workers > sw->n_points)
		workers = (int)sw->n_points;
	fflush(stdout);
	fflush(stderr);
	pid_t pids[1024], parent = getpid();
	int started = 0, rc = 0;
	for (; started < workers; started++) {
		pids[started] = fork();
		if (pids[started] < 0) {
			fprintf(stderr, "kvsim: fork: %s\n", strerror(errno));
			rc = -1;
			break;
		}
		if (pids[started] == 0) {
			/* A worker goes down with the pool, however the pool ends. */
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() != parent)
				_exit(128 + SIGTERM);
			for (long i = started; i < sw->n_points && !intr_caught();
			     i += workers) {
				char canon[4096], perr[1024], warn[640];
				swp_point_canon(sw, i, canon, sizeof canon);
				int prc = swp_run_point(sw, i, out, warn, sizeof warn, perr, sizeof perr);
				if ((!quiet || prc) && prc <= CLI_INTERNAL) /* main says "interrupted" */
					fprintf(stderr, "[%ld/%ld] %s: %s\n", i + 1, sw->n_points, canon,
						prc ? perr : "done");
				if (!prc && warn[0])
					fprintf(stderr, "[%ld/%ld] %s: warning: %s\n", i + 1, sw->n_points,
						canon, warn);
			}
			_exit(intr_caught() ? 128 + intr_caught() : 0);
		}
	}
	int told = 0;
	for (int k = 0; k < started; k++) {
		int st;
		while (waitpid(pids[k], &st, 0) < 0 && errno == EINTR)
			stop_workers(pids + k, started - k, &told);
		stop_workers(pids + k + 1, started - k - 1, &told);
	}
	return intr_caught() ? -1 : rc;
}

/* The latency-load figure for the first varied rate (a path ending _per_s). */
static void plot_rate_axis(const struct swp *sw, const char *out, int quiet)
{
	char err[1024];
	for (int k = 0; k < sw->n_axes; k++) {
		size_t pl = strlen(sw->ax[k].path);
		if (pl > 6 && !strcmp(sw->ax[k].path + pl - 6, "_per_s")) {
			char names[4096];
			int rows = swp_latency_load_data(out, sw->ax[k].path, names, sizeof names, err,
							 sizeof err);
			if (rows < 0 ||
			    res_plot_latency_load(out, sw->ax[k].path, names, rows, err, sizeof err))
				fprintf(stderr, "kvsim: %s\n", err);
			else if (!quiet)
				printf("figure: %s/plots/latency_load.png (and .svg)\n", out);
			return;
		}
	}
}

static int sweep(const struct cli_ctx *cx, struct sweep_args *s)
{
	const char *out = s->o.out ? s->o.out : "out/sweep";
	char err[1024];
	if (s->merge)
		return merge_report(s->merge, s->o.quiet);
	if (s->sw.n_axes == 0)
		return cli_misuse(cx->cmd, "give at least one --vary PATH=v1,v2,...");
	/* The base scenario must load, so that its errors come once, not per point. */
	struct scenario base;
	if (cli_load_from_opts(&s->o, &base))
		return CLI_USAGE;
	s->sw.seed = base.seed;
	cfg_scenario_free(&base);
	if (swp_write_spec(&s->sw, out, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_INTERNAL;
	}
	if (s->jobs || s->slurm)
		return emit(s, out);
	if (run_pool(&s->sw, s->workers, out, s->o.quiet))
		return intr_caught() ? 128 + intr_caught() : CLI_INTERNAL;
	int rc = merge_report(out, s->o.quiet);
	if (!s->o.quiet && swp_print_table(out, stdout, err, sizeof err))
		fprintf(stderr, "kvsim: %s\n", err);
	plot_rate_axis(&s->sw, out, s->o.quiet);
	return rc;
}

static int cmd_sweep(const struct cli_ctx *cx, int argc, char **argv)
{
	struct sweep_args s;
	memset(&s, 0, sizeof s);
	int end = parse(cx, argc, argv, &s);
	int rc = end == CLI_END ? sweep(cx, &s) : cli_end_code(end);
	swp_free(&s.sw);
	return rc;
}

const struct cli_cmd cli_sweep_cmd = {
    .name = "sweep",
    .args = "[SCENARIO.json]",
    .summary = "run a grid of scenario values (--vary), in parallel",
    .run = cmd_sweep,
    .opts = sweep_opts,
    .also = "kvsim sweep --merge DIR",
    .about =
	"Runs every combination of the varied values (the cartesian product; the last\n"
	"--vary changes fastest) as an ordinary run on the scenario's seed (common random\n"
	"numbers: every point sees the same sessions; --vary seed=1,2,3 or --seeds gives\n"
	"each point its own), in up to N worker processes (-j, default 1). A PATH may\n"
	"index a list: --vary 'cluster.pools[1].nodes=2,4' (the item must exist). Each\n"
	"point's results go to DIR/points/pNNNNNN/ (default DIR: out/sweep);\n"
	"DIR/sweep.csv and DIR/sweep.json have one row per point: the varied values and\n"
	"the summary's figures. When a varied path is a rate (..._per_s), DIR/plots/ gets\n"
	"latency_load.png/svg. A point that fails is reported (error.txt in its folder)\n"
	"and the others still run; exit 2 if any failed.\n"
	"\n"
	"Beyond one machine: --emit-jobs FILE writes one self-contained command per point\n"
	"(absolute paths) instead of running them, for GNU parallel locally or across\n"
	"hosts (parallel --jobs N < FILE, or parallel --sshloginfile HOSTS < FILE, with\n"
	"DIR on a shared file system); --emit-slurm FILE also writes a Slurm array-job\n"
	"script that runs line $SLURM_ARRAY_TASK_ID + 1 of the jobs file. Then 'kvsim\n"
	"sweep --merge DIR' builds the same sweep.csv/json from whatever points have\n"
	"finished, naming the missing ones (exit 2 while any is missing or failed).\n",
    .pos_complete = "@file",
};
