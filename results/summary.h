/* summary: struct met_summary, everything summary.json holds (the metrics module fills it; the metric table reads it). */
#ifndef KVSIM_SUMMARY_H
#define KVSIM_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "config/mech.h"
#include "results/steady.h"

/* Slots of the statistics groups of the metric table (struct res_stat):
 * met_summary.stat and metrics.sample hold one per group. The first four
 * are read by name too (met_summary.ttft, metrics.tpot, ...); a table's
 * groups for TTFT, TPOT, E2E and queue take these slots. */
enum met_slot {
	MET_TTFT,
	MET_TPOT,
	MET_E2E,
	MET_QUEUE,
	MET_TTFT_CLIENT, /* the client's view (a scenario's client block) */
	MET_ITL_CLIENT,
	MET_ITL, /* every inter-token gap (metrics.gaps), not a per-request figure */
	MET_E2E_CLIENT,
	MET_STAT_MAX = 10
};

/* The client's view of a request (docs/model.md, "The client's view"): what
 * a benchmark client adds to the engine's times. */
struct met_client {
	int on;                      /* the scenario has a client block */
	double api_server_s;         /* before the engine: HTTP, validation, hand-over */
	double tokenize_s_per_token; /* prompt tokenisation in the API server */
	double first_chunk_s;        /* detokenising and streaming the first token */
	double messages_per_token;   /* streamed messages the client times per token */
};

/* Counts by reason (static strings), in first-seen order. */
struct met_reasons {
	const char *reason[8];
	uint64_t count[8];
	size_t n;
};

struct met_stats {
	double mean, p50, p90, p99, max;
	size_t n;
};

/* One stage of a benchmark (wl_ops.stages): the requests that arrived in
 * its window, and their figures (summary.json's stages[]). */
struct met_stage {
	double start_s, end_s;     /* its timer's start; its last arrival */
	double rate, duration_s;   /* as configured (duration 0: none) */
	double last_finish_s;      /* when its last request ended */
	uint64_t sent;             /* the requests it sends */
	uint64_t arrived, completed, shed, failed;
	uint64_t input_tokens, output_tokens; /* of its completed requests */
	struct met_stats ttft, tpot, e2e;
	struct met_stats ttft_client, itl_client; /* with a client block */
};

struct met_tokens {
	uint64_t input, output, cached, reloaded, migrated, recomputed, fresh, preempt_recomputed;
};

struct met_node {
	int id, pool;
	double busy_ratio, mean_kv_util, peak_kv_util, throttled_s;
	uint64_t requests;
	double held_s;   /* its GPUs were held (allocated, start-up included) */
	double energy_j; /* its GPUs' energy while held */
};

/* One pool's figures (scenario cluster.pools; a cluster without pools is
 * one mixed pool named "cluster"). */
struct met_pool {
	char name[32];
	const char *role; /* a static string */
	/* a copy: the catalog the scenario points into is freed with it,
	 * before the summary is printed (CAT_NAME_LEN) */
	char gpu[48];
	int tp, nodes;
	double busy_ratio, mean_kv_util; /* means over its nodes (weighted by time held) */
	uint64_t requests;               /* requests its nodes ran to their end there */
	double nodes_mean, gpu_hours, energy_j; /* nodes held (time-weighted mean) */
};

/* Disaggregated hand-overs (prefill pool to decode pool): delivered,
 * failed over to another decode node, kept on a decode node by
 * router.disagg.min_prefill_tokens; bytes sent, flow seconds and seconds
 * waiting for room on the decode node, summed. */
struct met_pd {
	uint64_t count, failovers, local;
	double bytes, seconds, wait_s;
};

/* Everything summary.json holds. */
struct met_summary {
	char scenario[64], policy[48];
	uint64_t seed;
	char version[64];
	double sim_time_s;
	uint64_t arrived, completed, shed, failed;
	/* trace lines the workload left out (skip_bad; wl_ops.skipped), and
	 * the first one's error (not written) */
	uint64_t skipped_lines;
	char skipped_first[512];
	/* A warning about the run ("" when none): printed on stderr and
	 * written in summary.json's warnings (only when there is one). */
	char warning[640];
	/* The statistics groups' figures, by slot (enum met_slot); the
	 * first four by name too. */
	union {
		struct met_stats stat[MET_STAT_MAX];
		struct {
			struct met_stats ttft, tpot, e2e, queue;
		};
	};
	int percentiles_exact; /* 0: some came from the histogram */
	int client; /* the run has client-view figures (met_client.on) */
	/* A benchmark's stages (wl_ops.stages), or NULL and 0; owned */
	struct met_stage *stages;
	size_t n_stages;
	struct met_tokens tokens;
	double prefix_hit_ratio, recompute_ratio, recompute_gpu_s;
	int truncated;     /* the run hit sim_opts.wall_limit_s (benchmarks) */
	/* When sim_opts.time_routing: wall ns of the router's decisions (the
	 * policy and the router's checks and bookkeeping), and of the whole
	 * handling of arrivals (those plus the chosen node's part: migration or
	 * reload decision, enqueue, starting its next iteration). sync_ns:
	 * the part of route_ns spent bringing nodes' decode spans up to now
	 * for policies that read KV figures (engine work moved earlier, which
	 * the span's end would otherwise do). Estimates: one arrival in 16 is
	 * timed and the sums are scaled up to all of them. */
	double route_ns, arrive_ns, sync_ns;
	uint64_t routed;
	/* Nodes' KV use counted from a decode span's plan instead of applying
	 * the span, cache lookups answered without applying it, and lookups
	 * that applied it because its blocks taken would evict and the match
	 * went through an unlocked run (policies that read nodes' KV use or
	 * look their caches up; not written); of the lookups answered without
	 * applying, those where it would evict but the match is locked runs
	 * alone, and those where the evictions take a run off the match's
	 * path (or the part of its last run the match does not use). */
	uint64_t kv_views_counted, kv_lookups_unapplied, kv_lookups_evicting, kv_lookups_locked;
	uint64_t kv_lookups_spared;
	uint64_t kv_lookups; /* policies' cache lookups (cached_prefix; not written) */
	uint64_t kv_views_synced; /* nodes' views brought up to date for the policy (not written) */
	/* Admissions whose prefix lookup was prefetched from a hint (the
	 * session's tail run where its turn before ended), those whose
	 * lookup ended in that run, of those the ones where the run still
	 * began where the hint's key was noted, and of these the ones whose
	 * key was the run's (not written). */
	uint64_t admission_hints, admission_hints_right;
	uint64_t admission_hint_keys_current, admission_hint_keys_right;
	/* Blocks whose commits were held back and made later (node.c,
	 * deferred commits), and the lookups and commits that met a run
	 * with blocks held back after it and had them committed first (not
	 * written). */
	uint64_t kv_blocks_held, kv_lookups_held, kv_commits_held;
	/* Epochs whose computed-before blocks were forgotten (wl_ops.epochs),
	 * and the most shared blocks held in that record at once while it was
	 * a tree (not written). */
	uint64_t ever_epochs_forgotten, ever_blocks_peak;
	uint64_t migration_count;
	uint64_t migration_by_reason[MR_N]; /* enum mig_reason */
	/* The router's mechanisms this column ran with, its policy's family
	 * and product (NULL: none). */
	struct mech mech;
	enum pol_family family;
	const char *product;
	enum kv_path kv_transfer;
	/* The engine as it ran (the cluster's, or its first pool's):
	 * cluster.engine.version's name and the settings its preset gave. */
	struct res_engine {
		const char *version;
		int max_num_seqs, max_num_batched_tokens, cuda_graph_max_tokens;
		int custom_allreduce, async_scheduling;
		double step_ms, overhead_ms, overhead_per_seq_ms, op_overhead_us;
	} engine;
	double migration_bytes, migration_s;
	double offload_bytes_out, offload_bytes_in;
	uint64_t preemptions;
	double requests_per_s, output_tokens_per_s;
	double input_tokens_per_s, total_tokens_per_s; /* prompt tokens; prompt + output */
	double slo_ttft_s, slo_tpot_s, slo_attainment, goodput_rps;
	struct met_node *nodes;
	size_t n_nodes;
	struct met_pool *pools;
	size_t n_pools;
	int disaggregated; /* the cluster has a prefill pool */
	struct met_pd pd;
	/* TTFT split, means over completed requests (s): queue before the
	 * prefill, the prefill, the KV transfer, and the rest to the first
	 * token (waiting for room and in the decode node's queue, and its
	 * first iteration); the four add up to the mean TTFT. */
	double ttft_split_s[4];
	/* Energy of the GPUs while held (joules; per output token; kWh),
	 * GPU-hours held (GPUs x hours, start-up included) and their price
	 * (USD, the catalog's price_per_hour). */
	double energy_j, energy_j_per_out, energy_kwh;
	double gpu_hours, cost_usd;
	/* Autoscaling (autoscaled: some pool has an autoscaler): nodes
	 * requested and released, and nodes held, time-weighted mean and
	 * most at once. */
	int autoscaled;
	uint64_t scale_up, scale_down;
	double nodes_mean, nodes_max;
	double imbalance_max_over_mean, imbalance_jain;
	/* perf: the only part that differs between identical runs */
	uint64_t events;
	double wall_s, requests_per_wall_s;
	uint64_t peak_rss_bytes;
	/* shed and failure reasons, in first-seen order */
	struct met_reasons shed_why, failed_why;
	/* whether the run reached a steady state, and the evidence */
	struct met_steadiness steadiness;
};

#endif
