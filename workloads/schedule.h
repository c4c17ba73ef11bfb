/* schedule: rate schedules (workload.rate_schedule), applied as a time change of arrivals. */
#ifndef KVSIM_WL_SCHEDULE_H
#define KVSIM_WL_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* A source draws its arrivals as today, at its constant rate, in
 * "operational time" u; a schedule with rate multiplier scale(t) >= 0 maps
 * each arrival u to the real time t with Lambda(t) = u, where
 * Lambda(t) = integral_0^t scale(x) dx. A Poisson process of rate r in u is
 * then a Poisson process of rate r x scale(t) in t (a Gamma renewal process
 * keeps its shape in u). Where Lambda is flat (scale 0, a pause) t is the
 * latest time with Lambda(t) <= u, so the next arrival after a pause comes
 * past it; the draws are those of the constant-rate process, so seeds
 * reproduce. */
enum wl_sched_kind { WL_SCHED_NONE, WL_SCHED_STEPS, WL_SCHED_DIURNAL };

/* A stretch [t0, t0 + len) of the step schedule: scale s0 at t0, moving by
 * k per ns (0: constant); lam0 = Lambda(t0). Times in ns, Lambda in ns of
 * operational time. The last stretch has len INT64_MAX (it lasts). */
struct wl_sched_seg {
	int64_t t0, len;
	double s0, k, lam0;
};

struct wl_schedule {
	enum wl_sched_kind kind;
	/* steps */
	uint32_t n_steps, n_segs;
	struct wl_sched_seg *segs;
	/* diurnal: scale(t) = c + a cos(w (t - peak)), t in ns */
	double period_s, min_scale, max_scale, peak_at_s;
	double c, a, w, peak_ns, period_ns;
	int64_t last_ns; /* the latest time mapped: arrivals never go back */
};

/* Reads obj.rate_schedule (path names obj): absent leaves s WL_SCHED_NONE
 * or, when dflt is not NULL, a copy of *dflt (the schedule a mix gives the
 * parts that have none). Returns 0, or -1 with err ("PATH.rate_schedule...:
 * expected ..., got ..."). Free with wl_schedule_free. */
int wl_schedule_parse(struct wl_schedule *s, const struct cJSON *obj, const char *path,
		      const struct wl_schedule *dflt, char *err, size_t errlen);
/* A copy of src into dst (0, or -1 when memory runs out). */
int wl_schedule_copy(struct wl_schedule *dst, const struct wl_schedule *src);
void wl_schedule_free(struct wl_schedule *s);

/* The multiplier at t_s seconds. */
double wl_schedule_scale(const struct wl_schedule *s, double t_s);
/* Lambda(t_ns), in ns of operational time. */
double wl_schedule_lambda(const struct wl_schedule *s, double t_ns);
/* The real time (ns) of operational time u_ns: exact to the ns (rounded)
 * for steps and ramps; within 1 ns for the diurnal shape (bracketed Newton
 * steps, deterministic). CFG_TIME_MAX_NS when Lambda never reaches u (the
 * schedule ends at scale 0). Never less than the last value it returned.
 * Without a schedule, u_ns itself. */
int64_t wl_schedule_map(struct wl_schedule *s, int64_t u_ns);

/* One line (no newline) saying what s does ("x1 until 100 s, x3 from 100 s,
 * ..."), cut to outlen. */
void wl_schedule_describe(const struct wl_schedule *s, char *out, size_t outlen);
/* For `kvsim validate`: a line "rate schedule[ of PATH]: ..." per schedule
 * the workload object gives (its own, and a mix's parts'), each ending in a
 * newline, into out; "" when there is none. The workload is a valid one. */
void wl_schedule_lines(const struct cJSON *workload, char *out, size_t outlen);

#endif
