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
/* Opens opts->trace_events (its header, the tracks' names); closes it
 * (its trailer) and renames it into place. 0, or -1 with err. */
int runlog_trace_open(struct sim *s, char *err, size_t errlen);
int runlog_trace_close(struct sim *s, char *err, size_t errlen);
/* Opens path as timeseries.csv and schedules the first sample. 0, or -1
 * with err. */
int runlog_timeseries_open(struct sim *s, const char *path, char *err, size_t errlen);
void runlog_ev_sample(struct sim *s, const struct event *ev);
/* The progress line on stderr. */
void runlog_progress(const struct sim *s, double started);

#endif
