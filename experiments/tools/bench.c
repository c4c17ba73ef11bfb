/* bench: simulator speed on the benchmark cases of BENCHMARKS.md (make bench).
 * Each case runs in a child process, so its peak RSS is its own. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"
#include "config/config.h"
#include "base/hugepages.h"
#include "sim/request.h"
#include "sim/sim.h"

#define CHAT_64 \
	"\"cluster\": {\"nodes\": 64, \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\"}," \
	" \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 48, \"max_sessions\": 250000}"
#define CHAT_1024 \
	"\"cluster\": {\"nodes\": 1024, \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\"}," \
	" \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 768, \"max_sessions\": 250000}"
#define MOONCAKE \
	"\"cluster\": {\"nodes\": 8, \"gpu\": \"H100-SXM\", \"model\": \"Llama-3.1-8B\"}," \
	" \"workload\": {\"kind\": \"trace\", \"format\": \"mooncake\", \"repeat\": 10," \
	"  \"path\": \"data/traces/mooncake/conversation_trace.jsonl\"}"

#define MAX_REPEAT 100
#define MAX_PREFAULT_MIB 65536
#define DEFAULT_PREFAULT_MIB 1024
#define PROBE_NEAR_MIB 16     /* the latency probe's small region */
#define PROBE_LOADS 200000    /* loads timed per region */

struct bcase {
	const char *id, *label, *json;
	int rss_curve;
};

/* (a)-(e) and (pd) of BENCHMARKS.md, then the 10M-request memory run. */
static const struct bcase cases[] = {
    {"a", "chat 1M, 64 nodes, session_affinity",
     "{\"name\": \"a\", \"duration_s\": 100000, " CHAT_64 ", \"router\": {\"policy\": "
     "\"session_affinity\", \"params\": {\"threshold\": 32}}}",
     0},
    {"b1", "chat 1M, 64 nodes, cache_aware",
     "{\"name\": \"b1\", \"duration_s\": 100000, " CHAT_64 ", \"router\": {\"policy\": "
     "\"cache_aware\", \"params\": {}}}",
     0},
    {"b2", "chat 1M, 64 nodes, precise_prefix",
     "{\"name\": \"b2\", \"duration_s\": 100000, " CHAT_64 ", \"router\": {\"policy\": "
     "\"precise_prefix\", \"params\": {}}}",
     0},
    {"c", "Mooncake conversation x10, 8 nodes, prefix_affinity",
     "{\"name\": \"c\", \"duration_s\": 1e7, " MOONCAKE ", \"router\": {\"policy\": "
     "\"prefix_affinity\", \"params\": {\"prefix_tokens\": 1024, \"threshold\": 16}}}",
     0},
    {"d64", "chat 1M, 64 nodes, least_loaded (routing cost baseline)",
     "{\"name\": \"d64\", \"duration_s\": 100000, " CHAT_64 ", \"router\": {\"policy\": "
     "\"least_loaded\", \"params\": {}}}",
     0},
    {"d1", "chat 1M, 1,024 nodes, least_loaded",
     "{\"name\": \"d1\", \"duration_s\": 100000, " CHAT_1024 ", \"router\": {\"policy\": "
     "\"least_loaded\", \"params\": {}}}",
     0},
    {"dk64", "chat 1M, 64 nodes, kv_cost (routing cost baseline)",
     "{\"name\": \"dk64\", \"duration_s\": 100000, " CHAT_64 ", \"router\": {\"policy\": "
     "\"kv_cost\", \"params\": {}}}",
     0},
    {"d2", "chat 1M, 1,024 nodes, kv_cost",
     "{\"name\": \"d2\", \"duration_s\": 100000, " CHAT_1024 ", \"router\": {\"policy\": "
     "\"kv_cost\", \"params\": {}}}",
     0},
    {"ds64", "chat 1M, 64 nodes, kv_cost over 8 candidates (baseline for d3)",
     "{\"name\": \"ds64\", \"duration_s\": 100000, " CHAT_64 ", \"router\": {\"policy\": "
     "\"kv_cost\", \"params\": {\"candidates\": 8}}}",
     0},
    {"d3", "chat 1M, 1,024 nodes, kv_cost over 8 candidates",
     "{\"name\": \"d3\", \"duration_s\": 100000, " CHAT_1024 ", \"router\": {\"policy\": "
     "\"kv_cost\", \"params\": {\"candidates\": 8}}}",
     0},
    {"e", "RAG, 100,000 documents, 64 nodes, prefix_affinity",
     "{\"name\": \"e\", \"duration_s\": 100000, \"cluster\": {\"nodes\": 64, \"gpu\": "
     "\"H100-SXM\", \"model\": \"Llama-3-8B\"}, \"router\": {\"policy\": \"prefix_affinity\", "
     "\"params\": {\"prefix_tokens\": 1024, \"threshold\": 32}}, \"workload\": {\"kind\": "
     "\"rag\", \"rate_per_s\": 150, \"max_requests\": 300000, \"documents\": {\"count\": "
     "100000, \"zipf_s\": 1.0, \"tokens\": {\"dist\": \"lognormal\", \"median\": 600, "
     "\"sigma\": 0.5}}}}",
     0},
    /* (a)'s chat load through pools, 16 prefill + 48 decode (the pooled
     * speed target's cluster, BENCHMARKS.md): kv_cost (NVIDIA Dynamo's
     * router, a production disaggregated stack) picks the prefill node, the
     * default decode_policy the decode node, NIXL carries the KV */
    {"pd", "chat 1M, 16 prefill + 48 decode nodes, kv_cost",
     "{\"name\": \"pd\", \"duration_s\": 100000, \"cluster\": {\"gpu\": \"H100-SXM\", "
     "\"model\": \"Llama-3-8B\", \"kv_transfer\": \"nixl\", \"pools\": [{\"name\": "
     "\"prefill\", \"role\": \"prefill\", \"nodes\": 16}, {\"name\": \"decode\", \"role\": "
     "\"decode\", \"nodes\": 48}]}, \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": "
     "48, \"max_sessions\": 250000}, \"router\": {\"policy\": \"kv_cost\", \"params\": {}}}",
     0},
    /* a day: chat whose session rate follows a cosine (x0.2 at 02:00 to
     * x1 at 14:00 of 6 sessions/s: 1.25M requests) on Llama-3-70B over 2
     * H100s per replica, a Kubernetes HPA on KV cache use between 8 and 64
     * replicas (the autoscaling speed target's setting, BENCHMARKS.md) */
    {"as", "chat day 1.2M, HPA 8..64 nodes, session_affinity",
     "{\"name\": \"as\", \"duration_s\": 86400, \"cluster\": {\"nodes\": 8, \"gpu\": "
     "\"H100-SXM\", \"model\": \"Llama-3-70B\", \"tp\": 2, \"autoscaler\": {\"kind\": "
     "\"hpa\", \"metric\": \"kv_util\", \"target\": 0.7, \"min_nodes\": 8, \"max_nodes\": "
     "64}}, \"router\": {\"policy\": \"session_affinity\", \"params\": {\"threshold\": 32}}, "
     "\"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 6, \"max_sessions\": 1000000, "
     "\"rate_schedule\": {\"kind\": \"diurnal\", \"period_s\": 86400, \"min_scale\": 0.2, "
     "\"max_scale\": 1, \"peak_at_s\": 50400}}}",
     0},
    {"m", "chat 10M, 64 nodes, session_affinity (memory stays flat)",
     "{\"name\": \"m\", \"duration_s\": 1000000, \"cluster\": {\"nodes\": 64, \"gpu\": "
     "\"H100-SXM\", \"model\": \"Llama-3-8B\"}, \"workload\": {\"kind\": \"chat\", "
     "\"sessions_per_s\": 48, \"max_sessions\": 2500000}, \"router\": {\"policy\": "
     "\"session_affinity\", \"params\": {\"threshold\": 32}}}",
     1},
};

struct rss_trace {
	uint64_t done;
	double mib[16];
	int n;
};

static double rss_mib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static void on_request(void *ctx, const struct request *r)
{
	struct rss_trace *t = ctx;
	(void)r;
	if (++t->done % 1000000 == 0 && t->n < 16)
		t->mib[t->n++] = rss_mib();
}

/* What a run reports back to the parent for --repeat's summary. */
struct figures {
	double rps, eps, ns_event, route_ns, sync_ns, arrive_ns, rss_mib, kernel_s;
	double lat_near_ns, lat_far_ns; /* the probe before the run (NAN: none) */
};

/* The probe's small region for a --prefault region of mib MiB. */
static size_t probe_near_mib(size_t mib)
{
	return mib < PROBE_NEAR_MIB ? mib : PROBE_NEAR_MIB;
}

/* What the latency probe measured before a run, over how much memory. */
struct probe {
	double near_ns, far_ns;
	size_t near_mib, far_mib;
};

/* Runs one case; in a child process. Writes its figures to fd out. */
static int bench(const struct bcase *c, double wall_limit, const struct probe *pr, int out)
{
	cJSON *root = cJSON_Parse(c->json);
	struct scenario s;
	char err[1024];
	if (!root || cfg_scenario_load(&s, root, NULL, err, sizeof err)) {
		fprintf(stderr, "bench %s: %s\n", c->id, root ? err : "bad JSON");
		cJSON_Delete(root);
		return 1;
	}
	cJSON_Delete(root);
	cfg_scenario_set_source(&s, "./scenario.json");
	struct met_summary m;
	struct rss_trace rt = {0};
	struct sim_opts o = {.progress = 1, .wall_limit_s = wall_limit, .time_routing = 1};
	if (c->rss_curve) {
		o.on_request = on_request;
		o.ctx = &rt;
	}
	int rc = sim_run(&s, &o, &m, err, sizeof err);
	if (rc) {
		fprintf(stderr, "bench %s: %s\n", c->id, err);
		cfg_scenario_free(&s);
		return 1;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	/* per routed request: none routed leaves the sums at 0 */
	double n = m.routed ? (double)m.routed : 1.0;
	struct figures f = {m.requests_per_wall_s,
			    m.events / m.wall_s,
			    m.wall_s * 1e9 / (double)m.events,
			    m.route_ns / n,
			    m.sync_ns / n,
			    m.arrive_ns / n,
			    (double)ru.ru_maxrss / 1024.0,
			    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
			    pr->near_ns,
			    pr->far_ns};
	/* the one cluster's "N x GPU", or each pool's "N x GPU role" */
	static const char *const role[] = {"mixed", "prefill", "decode"};
	char hw[256];
	snprintf(hw, sizeof hw, "%d x %s", s.cluster.nodes, s.cluster.gpu->name);
	for (int k = 0, at = 0; s.n_pools > 1 && k < s.n_pools; k++) {
		const struct pool_cfg *pc = &s.pools[k];
		int w = snprintf(hw + at, sizeof hw - (size_t)at, "%s%d x %s %s", k ? " + " : "",
				 pc->cl.nodes, pc->cl.gpu->name, role[pc->role]);
		if (w < 0 || (size_t)w >= sizeof hw - (size_t)at)
			break; /* truncated: what fits is said */
		at += w;
	}
	printf("(%s) %s: %s, %s\n", c->id, c->label, hw, s.cluster.model->name);
	if (m.truncated)
		printf("  STOPPED after the %g s wall-clock limit: figures cover what finished\n",
		       wall_limit);
	printf("  requests          %12llu (completed %llu, shed %llu)\n",
	       (unsigned long long)m.arrived, (unsigned long long)m.completed,
	       (unsigned long long)m.shed);
	printf("  simulated time    %12.1f s\n", m.sim_time_s);
	printf("  wall time         %12.3f s\n", m.wall_s);
	printf("  requests/wall-s   %12.0f\n", f.rps);
	printf("  events            %12llu\n", (unsigned long long)m.events);
	printf("  events/wall-s     %12.0f\n", f.eps);
	printf("  ns/event          %12.1f\n", f.ns_event);
	printf("  routing ns/req    %12.0f\n", f.route_ns);
	printf("  of which node sync%12.0f\n", f.sync_ns);
	printf("  arrival ns/req    %12.0f\n", f.arrive_ns);
	printf("  cache lookups/req %12.2f\n", (double)m.kv_lookups / n);
	printf("  peak RSS          %12.1f MiB\n", f.rss_mib);
	printf("  kernel time       %12.3f s\n", f.kernel_s);
	if (isnan(pr->far_ns))
		printf("  memory latency    not measured (--prefault 0)\n");
	else
		printf("  memory latency    %7.0f / %.0f ns (a random load, over %zu / %zu MiB)\n",
		       pr->near_ns, pr->far_ns, pr->near_mib, pr->far_mib);
	printf("  TTFT p50 / p99    %8.4f / %.4f s\n", m.ttft.p50, m.ttft.p99);
	printf("  TPOT p50 / p99    %8.4f / %.4f s\n", m.tpot.p50, m.tpot.p99);
	printf("  prefix hit ratio  %12.3f\n", m.prefix_hit_ratio);
	if (m.disaggregated) {
		/* that the pooled case runs at a sane operating point: the
		 * SLOs met, the TTFT's parts, the hand-overs' cost */
		printf("  SLO attainment    %12.3f (TTFT p99 %g s, TPOT p99 %g s)\n", m.slo_attainment,
		       m.slo_ttft_s, m.slo_tpot_s);
		printf("  TTFT split (ms)   %8.1f / %.1f / %.1f / %.1f (queue, prefill, KV transfer, "
		       "decode side)\n",
		       m.ttft_split_s[0] * 1e3, m.ttft_split_s[1] * 1e3, m.ttft_split_s[2] * 1e3,
		       m.ttft_split_s[3] * 1e3);
		printf("  KV hand-overs     %12llu (%.1f GB, %.2f ms each on the link)\n",
		       (unsigned long long)m.pd.count, m.pd.bytes * 1e-9,
		       m.pd.count ? m.pd.seconds * 1e3 / (double)m.pd.count : 0.0);
	}
	if (m.autoscaled) {
		/* that the autoscaled case runs at a sane operating point */
		printf("  SLO attainment    %12.3f (TTFT p99 %g s, TPOT p99 %g s)\n", m.slo_attainment,
		       m.slo_ttft_s, m.slo_tpot_s);
		printf("  nodes held        %12.2f mean, %.0f at most (%llu requested, %llu released)\n",
		       m.nodes_mean, m.nodes_max, (unsigned long long)m.scale_up,
		       (unsigned long long)m.scale_down);
		printf("  GPU-hours         %12.1f ($%.0f)\n", m.gpu_hours, m.cost_usd);
	}
	if (c->rss_curve) {
		printf("  RSS after each million requests (MiB):");
		for (int i = 0; i < rt.n; i++)
			printf(" %.0f", rt.mib[i]);
		printf("\n  percentiles       %s\n", m.percentiles_exact ? "exact" : "histogram (0.1%)");
	}
	fflush(stdout);
	int wrote = write(out, &f, sizeof f) == (ssize_t)sizeof f;
	met_summary_free(&m);
	cfg_scenario_free(&s);
	return wrote ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* "median M (min A, max B)" of v[0..n) with prec decimals, reordering v. */
static void print_spread(const char *what, double *v, int n, int prec)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	printf("  %-18s median %.*f (min %.*f, max %.*f)\n", what, prec, med, prec, v[0], prec,
	       v[n - 1]);
}

static const struct bcase *find_case(const char *id, size_t len)
{
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
		if (strlen(cases[k].id) == len && !strncmp(cases[k].id, id, len))
			return &cases[k];
	return NULL;
}

/* ns per load of a chain of loads from p[0..bytes), each at a random
 * line that depends on the value the one before read (so they cannot
 * overlap), after a warm-up of a tenth as many. */
static double chase(const volatile unsigned char *p, size_t bytes, int loads)
{
	uint64_t x = 0x9e3779b97f4a7c15u, lines = bytes / 64;
	struct timespec t0, t1;
	for (int i = -loads / 10; i < loads; i++) {
		if (i == 0)
			clock_gettime(CLOCK_MONOTONIC, &t0);
		uint64_t line = ((x >> 32) * lines) >> 32; /* lines < 2^32 */
		x = x * 6364136223846793005u + 1442695040888963407u + p[line * 64];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (x == 1) /* keeps the chain: x is never known to be unused */
		fputc('\n', stderr);
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / loads;
}

/* Touches mib MiB in a process of its own, which then exits. A virtual
 * machine may back its guest's memory lazily (this project's does): there
 * the first touch of memory the guest has not used lately costs a fault in
 * the hypervisor besides the kernel's zeroing (700 MiB: 0.9-1.3 s the first
 * time, 0.07 s right after), so a case's wall time would depend on what ran
 * before it. The kernel hands the pages just freed out again, so the case
 * that follows finds that much memory backed. Its own peak RSS and page
 * faults are untouched: the memory was never its.
 *
 * Then it measures the latency of a random load within the first 16 MiB
 * and within all of it, in huge pages as the heap's are: this machine's
 * speed at the time of the run, which moves with its host's load (the
 * simulator's cases are bound by cache misses), so that figures taken at
 * different times can be told apart from changes of the code. Fills pr
 * (NAN where nothing was measured). */
static void prefault(size_t mib, struct probe *pr)
{
	pr->near_ns = pr->far_ns = NAN;
	pr->near_mib = probe_near_mib(mib);
	pr->far_mib = mib;
	if (!mib)
		return;
	int fd[2];
	fflush(stdout);
	if (pipe(fd))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		size_t n = mib << 20;
		char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(1);
		madvise(p, n, MADV_HUGEPAGE); /* as the heap's: whole huge pages */
		for (size_t i = 0; i < n; i += 4096)
			p[i] = 1;
		double ns[2] = {chase((unsigned char *)p, pr->near_mib << 20, PROBE_LOADS),
				chase((unsigned char *)p, n, PROBE_LOADS)};
		_exit(write(fd[1], ns, sizeof ns) != (ssize_t)sizeof ns);
	}
	close(fd[1]);
	double ns[2];
	if (pid > 0 && read(fd[0], ns, sizeof ns) == (ssize_t)sizeof ns)
		pr->near_ns = ns[0], pr->far_ns = ns[1];
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* Runs case c `repeat` times, each in a fresh process after prefault(mib);
 * 0 if all ran. */
static int run_case(const struct bcase *c, double limit, int repeat, size_t mib)
{
	struct figures f[MAX_REPEAT];
	int got = 0, failed = 0;
	for (int i = 0; i < repeat; i++) {
		int fd[2];
		struct probe pr;
		prefault(mib, &pr);
		fflush(stdout);
		if (pipe(fd)) {
			perror("bench: pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(fd[0]);
			_exit(bench(c, limit, &pr, fd[1]));
		}
		close(fd[1]);
		if (pid > 0 && read(fd[0], &f[got], sizeof f[got]) == (ssize_t)sizeof f[got])
			got++;
		close(fd[0]);
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
		printf("\n");
	}
	if (repeat > 1 && got > 0) {
		double v[MAX_REPEAT];
		printf("(%s) over %d runs:\n", c->id, got);
#define SPREAD(label, field, prec)                                                                \
	do {                                                                                      \
		for (int i = 0; i < got; i++)                                                     \
			v[i] = f[i].field;                                                        \
		print_spread(label, v, got, prec);                                                \
	} while (0)
		SPREAD("requests/wall-s", rps, 0);
		SPREAD("events/wall-s", eps, 0);
		SPREAD("ns/event", ns_event, 0);
		SPREAD("routing ns/req", route_ns, 0);
		SPREAD("of which node sync", sync_ns, 0);
		SPREAD("arrival ns/req", arrive_ns, 0);
		SPREAD("peak RSS MiB", rss_mib, 0);
		SPREAD("kernel time s", kernel_s, 2);
		int probed = 1;
		for (int i = 0; i < got; i++)
			probed &= !isnan(f[i].lat_near_ns) && !isnan(f[i].lat_far_ns);
		if (probed) {
			char near[32], far[32];
			snprintf(near, sizeof near, "latency ns %zu MiB", probe_near_mib(mib));
			snprintf(far, sizeof far, "latency ns %zu MiB", mib);
			SPREAD(near, lat_near_ns, 0);
			SPREAD(far, lat_far_ns, 0);
		}
#undef SPREAD
		printf("\n");
	}
	return failed || got < repeat;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench [--quick] [--case ID[,ID...]] [--repeat N] [--wall-limit S]\n"
		"             [--prefault MIB]\n\n"
		"Runs the benchmark cases of BENCHMARKS.md, each in its own process on one\n"
		"core: (a) chat, 1M requests, 64 H100 nodes, session_affinity; (b1, b2)\n"
		"the same with cache_aware and precise_prefix; (c) the Mooncake\n"
		"conversation trace replayed 10 times; (d64, d1) least_loaded at 64 and\n"
		"1,024 nodes, (dk64, d2) kv_cost at 64 and 1,024 nodes, (ds64, d3)\n"
		"kv_cost over 8 sampled candidates at 64 and 1,024 nodes; (e) RAG over\n"
		"100,000 documents; (pd) (a)'s chat through 16 prefill and 48 decode\n"
		"nodes, kv_cost; (as) a cosine day of chat, 1.2M requests, under a\n"
		"Kubernetes HPA on KV use from 8 to 64 nodes; (m) 10M requests with\n"
		"resident memory after each\n"
		"million. Prints requests and events per wall-second, ns per event,\n"
		"routing ns per request (the router's decision; of which node sync:\n"
		"bringing nodes' decode spans up to now) and arrival ns per request (with\n"
		"the chosen node's handling: migration decision, enqueue, next\n"
		"iteration; both timed on one arrival in 16), the policy's cache\n"
		"lookups per request, peak RSS, kernel time (mostly page faults) and the\n"
		"simulated TTFT/TPOT; for (pd) also the SLO attainment, the TTFT's parts\n"
		"and the KV hand-overs (its routing figures are the prefill side's: the\n"
		"decode node's choice is in neither); for (as) the SLO attainment, the\n"
		"nodes held and the GPU-hours.\n\n"
		"  --quick         (a) only\n"
		"  --case IDS      only these cases, comma-separated: a b1 b2 c d64 d1 dk64\n"
		"                  d2 ds64 d3 e pd as m\n"
		"  --repeat N      run each case N times (1-%d), each in a fresh process,\n"
		"                  then print the median, min and max of each figure\n"
		"                  (this machine's figures vary between runs)\n"
		"  --wall-limit S  stop a case after S wall-clock seconds (default 300) and\n"
		"                  say so; its figures then cover what finished\n"
		"  --prefault MIB  before each run, a process of its own touches MIB MiB\n"
		"                  and exits (default %d; 0: not), so that the run finds\n"
		"                  that much memory backed: a virtual machine may back its\n"
		"                  guest's memory lazily, and this project's takes ~1 s\n"
		"                  per 700 MiB the guest has not used lately (0.07 s\n"
		"                  right after); the run's RSS and faults are its own.\n"
		"                  That process then times random loads over 16 MiB of\n"
		"                  it and over all of it: the machine's memory latency\n"
		"                  at the time, which each run prints\n\n"
		"Reads data/traces for (c). Like kvsim, starts itself once more with\n"
		"glibc.malloc.hugetlb=1 in GLIBC_TUNABLES (the heap in huge pages;\n"
		"KVSIM_HUGEPAGES=0: not), and says in its header what the heap got.\n",
		MAX_REPEAT, DEFAULT_PREFAULT_MIB);
}

int main(int argc, char **argv)
{
	hp_reexec(argv); /* as kvsim does: see base/hugepages.h */
	double limit = 300;
	const char *only = NULL;
	int quick = 0, repeat = 1;
	size_t prefault_mib = DEFAULT_PREFAULT_MIB;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--wall-limit") && i + 1 < argc) {
			limit = strtod(argv[++i], &end);
			if (end == argv[i] || *end || !(limit > 0) || limit > 1e9) {
				fprintf(stderr, "bench: --wall-limit \"%s\": expected seconds > 0\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			long n = strtol(argv[++i], &end, 10);
			if (end == argv[i] || *end || n < 1 || n > MAX_REPEAT) {
				fprintf(stderr, "bench: --repeat \"%s\": expected an integer 1-%d\n",
					argv[i], MAX_REPEAT);
				return 2;
			}
			repeat = (int)n;
		} else if (!strcmp(argv[i], "--prefault") && i + 1 < argc) {
			long n = strtol(argv[++i], &end, 10);
			if (end == argv[i] || *end || n < 0 || n > MAX_PREFAULT_MIB) {
				fprintf(stderr, "bench: --prefault \"%s\": expected MiB 0-%d\n",
					argv[i], MAX_PREFAULT_MIB);
				return 2;
			}
			prefault_mib = (size_t)n;
		} else {
			fprintf(stderr, "bench: unknown option or missing value \"%s\" (see --help)\n",
				argv[i]);
			return 2;
		}
	}
	/* The cases to run, in the order asked (all, or (a) for --quick). */
	const struct bcase *run[64];
	size_t n_run = 0;
	if (only) {
		for (const char *p = only;;) {
			size_t len = strcspn(p, ",");
			const struct bcase *c = find_case(p, len);
			if (!c || n_run == sizeof run / sizeof *run) {
				fprintf(stderr,
					"bench: unknown case \"%.*s\" (expected a, b1, b2, c, d64, d1, "
					"dk64, d2, ds64, d3, e, pd, as or m)\n",
					(int)len, p);
				return 2;
			}
			run[n_run++] = c;
			if (!p[len])
				break;
			p += len + 1;
		}
	} else {
		for (size_t k = 0; k < sizeof cases / sizeof *cases && !(quick && k > 0); k++)
			run[n_run++] = &cases[k];
	}
	char hp[160];
	hp_describe(hp, sizeof hp);
	printf("kvsim %s benchmark (one core per case; huge pages: %s)\n", kvsim_version(), hp);
	if (prefault_mib)
		printf("memory: %zu MiB touched and released before each run (--prefault 0: not)\n",
		       prefault_mib);
	else
		printf("memory: not touched before the runs (--prefault 0)\n");
	int failed = 0;
	for (size_t k = 0; k < n_run; k++)
		failed |= run_case(run[k], limit, repeat, prefault_mib);
	return failed;
}
