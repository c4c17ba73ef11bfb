/* opts: how one run is made and watched (struct sim_opts), apart from what it simulates. */
#ifndef KVSIM_OPTS_H
#define KVSIM_OPTS_H

struct request;
struct afile_set;

struct sim_opts {
	const char *out_dir; /* write summary.json and requests.csv here; NULL: none */
	int progress;        /* draw a progress line on stderr (when it is a terminal) */
	/* Chrome/Perfetto trace-event JSON of iterations, KV transfers and
	 * routing decisions (for short runs); NULL: none. */
	const char *trace_events;
	/* Where the run's files (out_dir's and trace_events) go once every one
	 * is written and flushed: into this result set, which its owner
	 * renames into place with the rest of it (compare: every policy's
	 * files and the comparison together) or discards; NULL: the run
	 * renames its own files together at its end (summary.json last). */
	struct afile_set *result_set;
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

#endif
