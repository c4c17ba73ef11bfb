/* sim: one run of a scenario: workload -> router -> node engines -> metrics. */
#ifndef KVSIM_SIM_H
#define KVSIM_SIM_H

#include <stddef.h>
#include <stdint.h>

struct scenario;
struct request;
struct met_summary;

struct sim_opts {
	const char *out_dir; /* write summary.json and requests.csv here; NULL: none */
	int progress;        /* draw a progress line on stderr (when it is a terminal) */
	/* Chrome/Perfetto trace-event JSON of iterations, KV transfers and
	 * routing decisions (for short runs); NULL: none. */
	const char *trace_events;
	/* Check invariants after every event (KV accounting, capacity, clock,
	 * token conservation, request states); stop at the first violation
	 * with a precise message (exit 3). Slow: for tests and debugging. */
	int audit;
	/* Called for every request as it ends (tests use it); may be NULL. */
	void (*on_request)(void *ctx, const struct request *r);
	void *ctx;
	/* Benchmarks: stop after this many wall-clock seconds (0: never); the
	 * summary then covers what finished and sets out->truncated. */
	double wall_limit_s;
	/* Benchmarks: time routing decisions (out->route_ns; one in 16, scaled). */
	int time_routing;
	/* Tests: for policies that read nodes' KV use or look their caches
	 * up, bring each node they read up to date instead of counting its use
	 * from its decode span's plan or looking it up unapplied (the results
	 * must not differ). */
	int eager_kv_views;
	/* Tests: policies are not told which nodes can hold a request's
	 * private blocks (pol_view.private_nodes; the results must not
	 * differ, only how many caches they look up). */
	int no_private_nodes;
	/* Tests: keep every epoch's computed blocks (wl_ops.epochs; the
	 * results must not differ, only the memory held). */
	int keep_epochs;
	/* Tests: no prefill iteration opens a decode span (node.fold_ok; the
	 * results must not differ, only the event count). */
	int no_fold;
	/* Tests: each block is committed when filled, none held back
	 * (node.defer_commits; the results must not differ). */
	int eager_commits;
	/* Tests: policies get no lower bound on nodes' KV use before
	 * bringing them up to date (pol_view.kv_used_floor; the results must
	 * not differ, only how many nodes they bring up to date). */
	int no_kv_floor;
};

/* Runs the scenario to the end (arrivals stop at duration_s or when the
 * workload runs out; then the cluster drains). Fills out (caller frees with
 * met_summary_free). Returns 0, 2 for a bad scenario or input (err says
 * which JSON path or file), 3 for an internal error (out of memory, I/O). */
int sim_run(const struct scenario *s, const struct sim_opts *o, struct met_summary *out, char *err,
	    size_t errlen);

/* Validates what cfg_scenario_load leaves to the modules (policy and
 * workload parameters) by building and destroying them. 0 or 2. */
int sim_validate(const struct scenario *s, char *err, size_t errlen);

#define KVSIM_VERSION_STRING kvsim_version()
const char *kvsim_version(void);

#endif
