/* runlog: what a run writes as it goes: timeseries, trace events, the progress line. */
#ifndef KVSIM_RUNLOG_H
#define KVSIM_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

struct sim;
struct event;

double runlog_wall_now(void);
/* One trace event (ph "X" with dur, "i" instant, "M" metadata); args is a
 * JSON object's inside. A no-op without a trace file. */
void runlog_trace_event(struct sim *s, const char *name, char ph, int pid, int tid, int64_t t_ns,
			int64_t dur_ns, const char *args);
/* The iterations of node i's step that is ending now. */
void runlog_trace_step(struct sim *s, uint32_t i);
/* Opens opts->trace_events (its header, the tracks' names). 0, or -1 with
 * err. runlog_trace_end writes its trailer; sim_run then adds the file to
 * the run's result set. */
int runlog_trace_open(struct sim *s, char *err, size_t errlen);
/* Registers the samples' event kind and the chore that resumes sampling
 * when work comes back. 0, or -1 when the tables are full. */
int runlog_init(struct sim *s);
/* Drops the timeseries and trace files unless they were committed. */
void runlog_discard(struct sim *s);
void runlog_trace_end(struct sim *s);
/* Opens path as timeseries.csv and schedules the first sample. 0, or -1
 * with err. */
int runlog_timeseries_open(struct sim *s, const char *path, char *err, size_t errlen);
/* Rows in a row that an idle cluster (no request in the system) gets
 * before sampling pauses; it resumes on the grid when work comes. */
#define RUNLOG_IDLE_SAMPLES 1000
void runlog_ev_sample(struct sim *s, const struct event *ev);
/* After an event, while sampling is paused: resumes it when a request is
 * in the system again. */
void runlog_sample_resume(struct sim *s);
/* The progress line on stderr. */
void runlog_progress(const struct sim *s, double started);

#endif
