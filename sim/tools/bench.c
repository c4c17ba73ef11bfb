/* bench: simulator speed on a 1M-request chat run (make bench). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <unistd.h>

#include "results/metrics.h"
#include "sim/config.h"
#include "sim/request.h"
#include "sim/sim.h"

/* 64 H100s serving Llama-3-8B; 250,000 chat sessions of 4 turns on average
 * (about 1,000,000 requests), sticky sessions. The horizon is long enough
 * for every session to finish. */
static const char bench_chat[] =
    "{\"name\": \"bench-chat-1m\", \"seed\": 1, \"duration_s\": 100000,"
    " \"cluster\": {\"nodes\": 64, \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\"},"
    " \"router\": {\"policy\": \"session_affinity\", \"params\": {\"threshold\": 32}},"
    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 48, \"max_sessions\": 250000}}";

/* 10,000,000 requests of the same kind, to show memory staying flat. */
static const char bench_chat_10m[] =
    "{\"name\": \"bench-chat-10m\", \"seed\": 1, \"duration_s\": 1000000,"
    " \"cluster\": {\"nodes\": 64, \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\"},"
    " \"router\": {\"policy\": \"session_affinity\", \"params\": {\"threshold\": 32}},"
    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 48, \"max_sessions\": 2500000}}";

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

static int bench(const char *label, const char *json, int rss_curve)
{
	cJSON *root = cJSON_Parse(json);
	struct scenario s;
	char err[1024];
	if (!root || cfg_scenario_load(&s, root, NULL, err, sizeof err)) {
		fprintf(stderr, "bench %s: %s\n", label, root ? err : "bad JSON");
		cJSON_Delete(root);
		return 1;
	}
	cJSON_Delete(root);
	struct met_summary m;
	struct rss_trace rt = {0};
	struct sim_opts o = {.progress = 1};
	if (rss_curve) {
		o.on_request = on_request;
		o.ctx = &rt;
	}
	int rc = sim_run(&s, &o, &m, err, sizeof err);
	if (rc) {
		fprintf(stderr, "bench %s: %s\n", label, err);
		cfg_scenario_free(&s);
		return 1;
	}
	printf("%s: %d x %s, %s, policy %s\n", label, s.cluster.nodes, s.cluster.gpu->name,
	       s.cluster.model->name, s.router.policy);
	printf("  requests          %12llu (completed %llu, shed %llu)\n",
	       (unsigned long long)m.arrived, (unsigned long long)m.completed,
	       (unsigned long long)m.shed);
	printf("  simulated time    %12.1f s\n", m.sim_time_s);
	printf("  wall time         %12.3f s\n", m.wall_s);
	printf("  requests/wall-s   %12.0f\n", m.requests_per_wall_s);
	printf("  events            %12llu\n", (unsigned long long)m.events);
	printf("  events/wall-s     %12.0f\n", m.events / m.wall_s);
	printf("  ns/event          %12.1f\n", m.wall_s * 1e9 / (double)m.events);
	printf("  peak RSS          %12.1f MiB\n", m.peak_rss_bytes / 1048576.0);
	printf("  TTFT p50 / p99    %8.4f / %.4f s\n", m.ttft.p50, m.ttft.p99);
	printf("  TPOT p50 / p99    %8.4f / %.4f s\n", m.tpot.p50, m.tpot.p99);
	printf("  prefix hit ratio  %12.3f\n", m.prefix_hit_ratio);
	if (rss_curve) {
		printf("  RSS after each million requests (MiB):");
		for (int i = 0; i < rt.n; i++)
			printf(" %.0f", rt.mib[i]);
		printf("\n  percentiles       %s\n", m.percentiles_exact ? "exact" : "histogram (0.1%)");
	}
	met_summary_free(&m);
	cfg_scenario_free(&s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: bench [--quick]\n\nRuns the 1,000,000-request chat benchmark (64 H100 "
		       "nodes, Llama-3-8B,\nsession_affinity) on one core and prints simulator speed;\n"
		       "then (unless --quick) a 10,000,000-request run printing resident memory\n"
		       "after each million requests, which stays flat after warm-up.\n");
		return 0;
	}
	printf("kvsim %s benchmark (one core)\n", kvsim_version());
	if (bench("chat-1m", bench_chat, 0))
		return 1;
	if (argc > 1 && !strcmp(argv[1], "--quick"))
		return 0;
	printf("\n");
	return bench("chat-10m", bench_chat_10m, 1);
}
