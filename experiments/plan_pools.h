/* plan_pools: the plan's state, fleets and figures, and its searches on pools and fleets (kvsim plan's orchestration). */
#ifndef KVSIM_PLAN_POOLS_H
#define KVSIM_PLAN_POOLS_H

struct cJSON;
struct scenario;

/* `kvsim plan` in four files, calls going one way (tests/layout.sh):
 *   cli/plan.c              the command: options, the rate search, each
 *                           fleet's answer, --policies, plan.json
 *   experiments/plan_day.c  --search autoscale: the smallest static fleet
 *                           against autoscalers over the scenario's whole
 *                           run, ranked
 *   experiments/plan_rank.c the searches in worker processes, the binding
 *                           SLO as text and JSON, the ranking, whether
 *                           P/D pays
 *   experiments/plan_pools.c  pools and fleets: the fleets of GPUs, one
 *                           probe run on a fleet and its test, the
 *                           binding SLO, the smallest-count search
 *                           (nodes and GPUs), the pd_ratio split search,
 *                           the colocated layout
 * Nothing here knows the command line: a plan gets its scenario through
 * its loader, and reports errors on stderr as "kvsim plan: ...". */

#define MAX_GPUS 32       /* GPU types in a list, and fleets in all */
#define MAX_POOL_AXES 8   /* --pool-gpus options */
#define MAX_AUTOSCALERS 16 /* --autoscaler options */
#define MAX_RATE_KEY 200  /* the longest --rate-key: a probe's PATH=VALUE must hold it */

/* --pool-gpus POOL=A,B,...: the GPU types tried for one pool. */
struct pool_axis {
	const char *arg; /* as given */
	int pool;        /* its index in cluster.pools */
	char buf[1024];
	const char *gpus[MAX_GPUS];
	int n;
};

/* One fleet: the GPU of every pool (NULL: the scenario's own). */
struct fleet {
	char label[256];
	const char *all;                /* --gpus: every pool's (the cluster's without pools) */
	const char *gpu[MAX_POOL_AXES]; /* axis k's GPU for its pool */
	/* pd_ratio: the GPU of the colocated layout (both pools' GPU, when
	 * they share it and their tp); NULL: the fleet has none */
	const char *coloc_gpu;
	char coloc_label[272]; /* "<GPU> colocated" */
};

/* The figures of one run. */
#define PLAN_MAX_SEEDS 64

struct fig {
	int pr, de; /* pd_ratio: the split */
	double gpus, cost, ttft, tpot, lost, attain, goodput, tokens_per_s;
	/* the run's summary: GPU-hours held, their price, energy (kWh, J per
	 * output token), nodes held (time-weighted mean, most at once) */
	double gpu_hours, cost_usd, kwh, j_per_token, nodes_mean, nodes_max;
	/* with --seeds: each figure above is the median over the seeds (nodes:
	 * the first seed's), the TTFT and TPOT p99's range beside it */
	double ttft_lo, ttft_hi, tpot_lo, tpot_hi;
	int unsteady; /* how many seeds' runs were not steady */
	int pass;
	/* the test's parts that failed, at any seed (PLAN_FAIL_*), and the
	 * share of requests shed or failed (median, worst seed) */
	int fails;
	double share, share_hi;
};

/* The parts of a probe's test (docs/planning.md, "The binding SLO"). */
enum {
	PLAN_FAIL_NONE_DONE = 1, /* no request completed */
	PLAN_FAIL_TTFT = 2,      /* TTFT p99 over its SLO */
	PLAN_FAIL_TPOT = 4,      /* TPOT p99 over its SLO */
	PLAN_FAIL_LOST = 8,      /* more than PLAN_MAX_LOST of the requests shed or failed */
	PLAN_FAIL_UNSTEADY = 16  /* not steady */
};
/* The share of requests a passing probe may shed or fail (our choice: one
 * in a thousand is within the noise of a p99 and far from an overload). */
#define PLAN_MAX_LOST 0.001

/* What bound an answer: the part of the test that failed at the failing
 * probe next to it (plan_binding), or none (slo NULL). */
struct plan_bind {
	const char *slo;    /* "ttft_p99", "tpot_p99", "shed_or_failed", "steady", "completed" */
	double value, limit; /* the probe's figure and its limit (seconds, or a share) */
	double ratio;       /* value / limit: how far past it (steady: 1, completed: inf) */
	int also;           /* the other parts that failed (PLAN_FAIL_*) */
	char at[256];       /* the probe: "cluster.nodes=14", "3 prefill + 1 decode" */
	char none[96];      /* slo NULL: why ("--max reached") */
};

/* How every probe gets its scenario: the command line's reading of it
 * (the file, --set, --seed, --policy), each call afresh. */
struct plan_loader {
	/* The scenario's JSON tree; NULL after reporting. Caller frees with
	 * cJSON_Delete. */
	struct cJSON *(*tree)(void *ctx);
	/* Loads and validates root into s: 0, or -1 after reporting. Caller
	 * frees s with cfg_scenario_free. */
	int (*scenario)(void *ctx, const struct cJSON *root, struct scenario *s);
	void *ctx;
};

/* The question (the options) and the search's state. */
struct plan {
	struct plan_loader load;
	int quiet;       /* print nothing but errors */
	const char *out; /* where plan.json goes (NULL: out/plan) */
	double slo_ttft, slo_tpot; /* <= 0: not constrained */
	const char *search, *min_arg, *max_arg, *total_arg, *pool_name;
	char gpu_buf[1024]; /* --gpus, split */
	const char *gpus[MAX_GPUS];
	int n_gpus; /* 0: the scenario's own GPU */
	struct pool_axis ax[MAX_POOL_AXES];
	int n_ax;
	int by_rate, pd, pooled;
	double min, max;
	long total;       /* --gpus-total; 0: search it */
	int pool;         /* --search nodes: the pool searched, -1 for cluster.nodes */
	int ip, id;       /* pd_ratio: the prefill and the decode pool */
	int tp_p, tp_d;   /* and their tp */
	char node_path[64];
	const char *rate_key; /* the path probes set */
	char rate_path[128];
	struct fig *cache; /* pd_ratio: the splits run for the fleet searched */
	int n_cache, cap_cache;
	long runs;
	int warned; /* a probe's warning (met_summary.warning) was printed */
	struct cJSON *probes; /* every run's record, for plan.json */
	/* --search autoscale: the --autoscaler values as given, --rank, and
	 * the assignment every probe makes after its own (NULL: none) */
	const char *as_arg[MAX_AUTOSCALERS];
	int n_as, day;
	const char *rank;
	const char *always_set;
	/* --seeds: every probe runs at each (none: the scenario's seed) and
	 * passes only when it passes at every one */
	long long seeds[PLAN_MAX_SEEDS];
	int n_seeds;
	/* the binding SLO of the search running: the failing probe of the
	 * largest value (bind_dir -1: a count search) or of the smallest (+1:
	 * the rate search); bind_dir 0: not tracked */
	struct plan_bind bind;
	double bind_at;
	int bind_dir;
	long coloc_nodes; /* > 0: probes run the colocated layout of that many nodes */
	const char *policy; /* --policies: the policy of the search running (NULL: none given) */
};

/* One fleet's answer. */
struct answer {
	const char *label;
	double value; /* nodes, rate or (pd_ratio) GPUs */
	struct fig f;
	double tokens_per_dollar, good_per_dollar;
	int ok;
	struct plan_bind bind;
	const char *policy; /* --policies: its policy */
	int coloc;          /* pd_ratio: the colocated layout's row */
};


/* What the search needs of the scenario's pools: --pool, --pool-gpus and
 * pd_ratio's two pools checked and found; sets p->pooled, p->pool and
 * p->node_path. 0, or -1 after reporting. */
int plan_check_pools(struct plan *p, const struct scenario *base);
/* The fleets to search into fl (MAX_GPUS of them): every --gpus type
 * (default: the scenario's) times every combination of the --pool-gpus
 * lists, the last varying fastest. Their count, or -1 after reporting. */
int plan_fleets(const struct plan *p, const struct scenario *base, struct fleet *fl);
/* Runs the scenario as fleet fl with the assignments sets, the SLOs as its
 * slo (so that goodput counts the requests within them), into *f; its
 * record is j's fields (taken) with the figures added, appended to
 * p->probes. Returns 1 pass, 0 fail, -1 error (reported). */
int plan_probe(struct plan *p, const struct fleet *fl, const char *const *sets, int n_sets,
	       struct cJSON *j, struct fig *f);
/* One run of a search on fleet fl: path=value, its line printed (unless
 * --quiet) and its record in p->probes; *f its figures. 1 pass, 0 fail,
 * -1 error (reported). */
int plan_probe_value(struct plan *p, const struct fleet *fl, const char *path, double value,
		     struct fig *f);
/* A test of count n on fleet fl for plan_least: 1 pass, 0 fail, -1 error
 * (reported). */
typedef int plan_test_fn(struct plan *p, const struct fleet *fl, long n, void *ctx);
/* The smallest count in [p->min, p->max] that passes: min, doubling to
 * the first pass (or max), then bisection between the last fail and it;
 * ctx goes to every test. Returns it, 0 when none passes, -1 on error. */
long plan_least(struct plan *p, const struct fleet *fl, plan_test_fn *pass, void *ctx);
/* plan_least's test for the node search: a probe of n nodes at
 * p->node_path; best (a struct fig) gets the figures of a pass. */
int plan_nodes_pass(struct plan *p, const struct fleet *fl, long n, void *best);
/* pd_ratio for one fleet: the best split of --gpus-total, or the smallest
 * GPU count with a split that meets the SLOs (plan_least, as the node
 * search) and its best split. Returns the GPU count, 0 when
 * none meets them, -1 on error; *best gets the split, and a the JSON of
 * the splits and the counts tried. */
long plan_search_pd(struct plan *p, const struct fleet *fl, struct fig *best, struct cJSON *a);
/* The parts of the probe's test that fail (PLAN_FAIL_*) for one run's
 * figures: completed requests, TTFT and TPOT p99 (tpot_n: requests with
 * a TPOT), shed plus failed against arrived, and whether it was steady
 * (asked unless p->day). 0 when it passes. */
int plan_fails(const struct plan *p, double completed, double ttft, double tpot, double tpot_n,
	       double lost, double arrived, int steady);
/* The binding SLO of failing probe f into *b (its at left to the caller):
 * of the parts that failed, the one furthest past its limit, by value /
 * limit (TTFT p99, TPOT p99, the share shed or failed against
 * PLAN_MAX_LOST; with --seeds the worst seed's), a run with no completed
 * request first, steadiness only when nothing else failed. 1, or 0 (b's
 * slo NULL) when f passed. */
int plan_binding(const struct plan *p, const struct fig *f, struct plan_bind *b);
/* Records failing probe f at value v (named at) as the binding when it
 * is nearer the answer than the one held (p->bind_dir). */
void plan_bind_note(struct plan *p, const struct fig *f, double v, const char *at);
/* pd_ratio: the colocated layout of fleet fl (fl->coloc_gpu): the
 * scenario without cluster.pools, cluster.gpu and cluster.tp those of the
 * pools, on --gpus-total GPUs, or the smallest GPU count (--min, else one
 * replica; --max) that meets the SLOs. Returns the GPUs, 0 when none meets them, -1 on
 * error; *best gets its figures and p->bind its binding SLO. */
long plan_colocated(struct plan *p, const struct fleet *fl, struct fig *best);
/* The scenario's pools, {name, role} each, as a JSON array. Caller frees
 * with cJSON_Delete (or hands it to a tree). */
struct cJSON *plan_pools_json(const struct scenario *base);
/* Fleet fl's pools at its answer (pd_ratio: the split; nodes: the count
 * found) as a JSON array. Caller frees as plan_pools_json's. */
struct cJSON *plan_fleet_pools(const struct plan *p, const struct scenario *base,
			       const struct fleet *fl, const struct answer *res);

#endif
