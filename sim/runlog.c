/* runlog: what a run writes as it goes: timeseries rows, trace events, the progress line. */
#include "sim/runlog.h"
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "results/fmt.h"
#include "base/about.h"
#include "base/afile.h"
#include "sim/power.h"
#include "sim/sim_int.h"
#include "sim/thermal.h"

double runlog_wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void runlog_progress(const struct sim *s, double started)
{
	double wall = runlog_wall_now() - started;
	uint64_t done = s->met.completed + s->met.shed + s->met.failed;
	fprintf(stderr,
		"\r  simulated %9.1f s | %10llu arrived | %10llu done | %8.0f req/s | %6.1f s wall",
		(double)s->now * 1e-9, (unsigned long long)s->met.arrived, (unsigned long long)done,
		wall > 0 ? (double)done / wall : 0.0, wall);
	fflush(stderr);
}

/* --- trace events (Chrome/Perfetto JSON) ------------------------------------ */

/* Times in microseconds, as the format wants; at most TE_MAX events. */
void runlog_trace_event(struct sim *s, const char *name, char ph, int pid, int tid, int64_t t_ns,
			int64_t dur_ns, const char *args)
{
	if (!s->log.te || s->log.te_count >= TE_MAX)
		return;
	fprintf(s->log.te, "%s{\"name\":\"%s\",\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f",
		s->log.te_count++ ? ",\n" : "", name, ph, pid, tid, (double)t_ns * 1e-3);
	if (ph == 'X')
		fprintf(s->log.te, ",\"dur\":%.3f", (double)dur_ns * 1e-3);
	else
		fputs(",\"s\":\"t\"", s->log.te);
	fprintf(s->log.te, ",\"args\":{%s}}", args);
}

/* The iterations of node i's step that is ending now. */
void runlog_trace_step(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	uint32_t prefills = 0;
	for (uint32_t k = 0; k < n->n_batch; k++)
		prefills += node_entry_prefills(&n->batch[k]);
	int64_t start = n->step_start_ns;
	node_span_used(n);
	for (uint32_t j = 0; j < n->span_len; j++) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"requests\":%u,\"prefills\":%u,\"kv_blocks_used\":%u,\"span\":%u",
			 n->n_batch, j == 0 ? prefills : 0, n->span_used[j], n->span_len);
		runlog_trace_event(s, j == 0 && prefills ? "prefill+decode" : "decode", 'X', 1,
				   (int)i, start, n->span_end[j] - start, args);
		start = n->span_end[j];
	}
}

int runlog_trace_open(struct sim *s, char *err, size_t errlen)
{
	if (afile_open(&s->log.te_file, s->opts->trace_events, err, errlen))
		return -1;
	s->log.te = s->log.te_file.f;
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", s->log.te);
	static const char *const tracks[] = {"router", "nodes (iterations)", "KV transfers"};
	for (int k = 0; k < 3; k++) {
		char args[64];
		snprintf(args, sizeof args, "\"name\":\"%s\"", tracks[k]);
		runlog_trace_event(s, "process_name", 'M', k, 0, 0, 0, args);
	}
	return 0;
}

void runlog_trace_end(struct sim *s)
{
	fprintf(s->log.te, "\n],\"otherData\":{\"kvsim_version\":\"%s\",\"events\":%llu,"
		       "\"truncated\":%s}}\n",
		kvsim_version(), (unsigned long long)s->log.te_count,
		s->log.te_count >= TE_MAX ? "true" : "false");
	s->log.te = NULL;
}

/* --- timeseries.csv --------------------------------------------------------- */

int runlog_timeseries_open(struct sim *s, const char *path, char *err, size_t errlen)
{
	if (afile_open(&s->log.ts_file, path, err, errlen))
		return -1;
	s->log.ts = s->log.ts_file.f;
	fputs("time_s,node,kv_util,running,queued,temperature_c,throttled,nodes_up,power_w\n",
	      s->log.ts);
	s->log.sample_ns = (int64_t)llround(s->sc->timeseries_interval_s * 1e9);
	if (s->log.sample_ns < 1)
		s->log.sample_ns = 1;
	if (!evq_push(&s->q, s->log.sample_ns, s->log.ev_sample, -1, NULL))
		sim_fail(s, "out of memory");
	return 0;
}

/* No request in the system: every one that arrived has ended. */
static int runlog_idle(const struct sim *s)
{
	return s->met.arrived == s->met.completed + s->met.shed + s->met.failed;
}

/* One timeseries row per node. Nodes inside a decode span are brought up
 * to now first (exact, so sampling never changes results). */
void runlog_ev_sample(struct sim *s, const struct event *ev)
{
	(void)ev;
	/* nodes serving per pool: up (not starting, draining or off) and alive */
	uint32_t *up = calloc((size_t)s->sc->n_pools, sizeof *up);
	if (!up) {
		sim_fail(s, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < s->n_nodes; i++)
		up[s->pool_of[i]] += s->sl.nstate[i] == NS_UP && s->alive[i];
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		node_sync(n, s->now);
		/* "%.6f,%u,%.6f,%u,%u,%.3f,%d,%u,%.3f\n" (temperature empty
		 * without the thermal model; power_w the node's GPUs'),
		 * formatted exactly without printf */
		char line[2048], *p = fmt_put_fixed(line, (double)s->now * 1e-9, 6);
		*p++ = ',';
		p += fmt_u64(p, i);
		*p++ = ',';
		p = fmt_put_fixed(p, (double)n->kv.n_used / (double)n->kv.n_blocks, 6);
		*p++ = ',';
		p += fmt_u64(p, n->n_running);
		*p++ = ',';
		p += fmt_u64(p, n->n_waiting);
		*p++ = ',';
		if (s->sc->cluster.thermal.enabled)
			p = fmt_put_fixed(p, thermal_temp_now(s, i), 3);
		*p++ = ',';
		p += fmt_i64(p, s->hl[i].throttled);
		*p++ = ',';
		p += fmt_u64(p, up[s->pool_of[i]]);
		*p++ = ',';
		p = fmt_put_fixed(p, s->sc->pools[s->pool_of[i]].cl.tp * power_now_w(s, i), 3);
		*p++ = '\n';
		fwrite(line, 1, (size_t)(p - line), s->log.ts);
	}
	free(up);
	/* Keep sampling until the run is over; an idle cluster gets
	 * RUNLOG_IDLE_SAMPLES rows in a row, then sampling waits for work, so
	 * that the file grows with the work done, not with the horizon (one
	 * request a year over ten years). */
	s->log.idle_samples = runlog_idle(s) ? s->log.idle_samples + 1 : 0;
	if (s->log.idle_samples >= RUNLOG_IDLE_SAMPLES) {
		s->log.sample_paused = 1;
		return;
	}
	if (!evq_push(&s->q, s->now + s->log.sample_ns, s->log.ev_sample, -1, NULL))
		sim_fail(s, "out of memory");
}

void runlog_sample_resume(struct sim *s)
{
	if (runlog_idle(s))
		return;
	/* The next point of the sampling grid, as if it had gone on. */
	int64_t next = (s->now / s->log.sample_ns + 1) * s->log.sample_ns;
	s->log.sample_paused = 0;
	s->log.idle_samples = 0;
	if (!evq_push(&s->q, next, s->log.ev_sample, -1, NULL))
		sim_fail(s, "out of memory");
}

int runlog_init(struct sim *s)
{
	s->log.ev_sample = sim_add_event_kind(s, runlog_ev_sample, NULL, EVK_READS_ONLY);
	if (s->log.ev_sample < 0)
		return -1;
	return sim_add_chore(s, 20, &s->log.sample_paused, runlog_sample_resume);
}

void runlog_discard(struct sim *s)
{
	afile_discard(&s->log.ts_file);
	afile_discard(&s->log.te_file);
}
