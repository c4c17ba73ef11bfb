/* schedule: rate schedules (steps, ramps, a diurnal cosine) as a time change of arrivals. */
#include "workloads/schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"

/* The largest multiplier and time a schedule takes: our choice, far past
 * any use (a million times the rate; the clock's 4e9 s). */
#define SCALE_MAX 1e6
#define TIME_MAX_S 4e9
#define TWO_PI 6.28318530717958647692

/* obj.key must be there (a number checked by cfg_number after). */
static int need(const cJSON *obj, const char *path, const char *key, const char *what, char *err,
		size_t errlen)
{
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		return 0;
	char p[300];
	snprintf(err, errlen, "%s: missing (%s needs it)", cfg_join(p, sizeof p, path, key), what);
	return -1;
}

static void push(struct wl_schedule *s, int64_t t0, int64_t len, double s0, double k, double lam0)
{
	s->segs[s->n_segs++] = (struct wl_sched_seg){t0, len, s0, k, lam0};
}

/* Lambda over the whole of a finite stretch. */
static double seg_lam_end(const struct wl_sched_seg *g)
{
	double y = (double)g->len;
	return g->lam0 + g->s0 * y + 0.5 * g->k * y * y;
}

static int parse_steps(struct wl_schedule *s, const cJSON *arr, const char *p, char *err,
		       size_t errlen)
{
	static const char *const keys[] = {"at_s", "scale", "ramp_s", NULL};
	int n = cJSON_GetArraySize(arr);
	if (n < 1) {
		snprintf(err, errlen, "%s: expected a non-empty array of steps "
				      "[{\"at_s\", \"scale\", \"ramp_s\"?}], got an empty array", p);
		return -1;
	}
	s->kind = WL_SCHED_STEPS;
	s->n_steps = (uint32_t)n;
	s->segs = calloc(2 * (size_t)n + 1, sizeof *s->segs);
	if (!s->segs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Before the first step the rate is the workload's own (x1). */
	double prev = 1, lam = 0, prev_at = 0, prev_end_s = 0;
	int64_t t = 0, prev_at_ns = -1;
	int i = 0;
	for (const cJSON *e = arr->child; e; e = e->next, i++) {
		char pp[320];
		snprintf(pp, sizeof pp, "%.300s[%d]", p, i);
		if (!cJSON_IsObject(e)) {
			snprintf(err, errlen, "%s: expected a step {\"at_s\", \"scale\", \"ramp_s\"?}, got %s",
				 pp, cfg_type_name(e));
			return -1;
		}
		double at = 0, scale = 1, ramp = 0;
		if (cfg_check_keys(e, pp, keys, err, errlen) ||
		    need(e, pp, "at_s", "a step", err, errlen) ||
		    need(e, pp, "scale", "a step", err, errlen) ||
		    cfg_number(e, pp, "at_s", 0, TIME_MAX_S, &at, err, errlen) ||
		    cfg_number(e, pp, "scale", 0, SCALE_MAX, &scale, err, errlen) ||
		    cfg_number(e, pp, "ramp_s", 0, TIME_MAX_S, &ramp, err, errlen))
			return -1;
		int64_t at_ns = cfg_time_ns_clamp(at, 1e9), ramp_ns = cfg_time_ns_clamp(ramp, 1e9);
		char q[340];
		if (at_ns <= prev_at_ns) {
			snprintf(err, errlen, "%s: expected more than the previous step's at_s (%g), got %g",
				 cfg_join(q, sizeof q, pp, "at_s"), prev_at, at);
			return -1;
		}
		if (at_ns < t) {
			snprintf(err, errlen,
				 "%s: expected at least %g (the previous step's at_s + ramp_s, where its "
				 "ramp ends), got %g",
				 cfg_join(q, sizeof q, pp, "at_s"), prev_end_s, at);
			return -1;
		}
		if (at_ns > t) {
			push(s, t, at_ns - t, prev, 0, lam);
			lam += prev * (double)(at_ns - t);
			t = at_ns;
		}
		if (ramp_ns > 0) {
			push(s, t, ramp_ns, prev, (scale - prev) / (double)ramp_ns, lam);
			lam = seg_lam_end(&s->segs[s->n_segs - 1]);
			t = cfg_time_add(t, ramp_ns);
		}
		prev = scale;
		prev_at = at;
		prev_at_ns = at_ns;
		prev_end_s = at + ramp;
	}
	push(s, t, INT64_MAX, prev, 0, lam);
	return 0;
}

static int parse_diurnal(struct wl_schedule *s, const cJSON *o, const char *p, char *err,
			 size_t errlen)
{
	static const char *const keys[] = {"kind",	"period_s", "min_scale", "max_scale",
					   "peak_at_s", NULL};
	static const char *const kinds[] = {"diurnal", NULL};
	const char *what = "a diurnal schedule";
	int kind = -1;
	char q[300];
	/* A day, as the name says: our choice of default. */
	s->period_s = 86400;
	if (cfg_check_keys(o, p, keys, err, errlen) || need(o, p, "kind", "a schedule object", err, errlen) ||
	    cfg_enum(o, p, "kind", kinds, &kind, err, errlen) ||
	    need(o, p, "min_scale", what, err, errlen) || need(o, p, "max_scale", what, err, errlen) ||
	    need(o, p, "peak_at_s", what, err, errlen) ||
	    cfg_number(o, p, "period_s", 1e-6, TIME_MAX_S, &s->period_s, err, errlen) ||
	    cfg_number(o, p, "min_scale", 0, SCALE_MAX, &s->min_scale, err, errlen) ||
	    cfg_number(o, p, "max_scale", 0, SCALE_MAX, &s->max_scale, err, errlen) ||
	    cfg_number(o, p, "peak_at_s", 0, TIME_MAX_S, &s->peak_at_s, err, errlen))
		return -1;
	if (s->max_scale < s->min_scale) {
		snprintf(err, errlen, "%s: expected max_scale >= min_scale (%g), got %g",
			 cfg_join(q, sizeof q, p, "max_scale"), s->min_scale, s->max_scale);
		return -1;
	}
	if (s->max_scale <= 0) {
		snprintf(err, errlen, "%s: expected a number > 0 (at 0 nothing ever arrives), got 0",
			 cfg_join(q, sizeof q, p, "max_scale"));
		return -1;
	}
	s->kind = WL_SCHED_DIURNAL;
	s->c = 0.5 * (s->max_scale + s->min_scale);
	s->a = 0.5 * (s->max_scale - s->min_scale);
	s->period_ns = s->period_s * 1e9;
	s->w = TWO_PI / s->period_ns;
	s->peak_ns = s->peak_at_s * 1e9;
	return 0;
}

int wl_schedule_parse(struct wl_schedule *s, const cJSON *obj, const char *path,
		      const struct wl_schedule *dflt, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, "rate_schedule") : NULL;
	if (!v) {
		if (dflt && wl_schedule_copy(s, dflt)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		return 0;
	}
	char p[300];
	cfg_join(p, sizeof p, path, "rate_schedule");
	int rc;
	if (cJSON_IsArray(v)) {
		rc = parse_steps(s, v, p, err, errlen);
	} else if (cJSON_IsObject(v)) {
		rc = parse_diurnal(s, v, p, err, errlen);
	} else {
		snprintf(err, errlen,
			 "%s: expected an array of steps [{\"at_s\", \"scale\", \"ramp_s\"?}] or "
			 "{\"kind\": \"diurnal\", \"period_s\", \"min_scale\", \"max_scale\", "
			 "\"peak_at_s\"}, got %s",
			 p, cfg_type_name(v));
		rc = -1;
	}
	if (rc)
		wl_schedule_free(s);
	return rc;
}

int wl_schedule_copy(struct wl_schedule *dst, const struct wl_schedule *src)
{
	*dst = *src;
	dst->segs = NULL;
	dst->last_ns = 0;
	if (src->n_segs) {
		dst->segs = malloc(src->n_segs * sizeof *dst->segs);
		if (!dst->segs) {
			memset(dst, 0, sizeof *dst);
			return -1;
		}
		memcpy(dst->segs, src->segs, src->n_segs * sizeof *dst->segs);
	}
	return 0;
}

void wl_schedule_free(struct wl_schedule *s)
{
	free(s->segs);
	memset(s, 0, sizeof *s);
}

/* The stretch holding t_ns (>= 0). */
static const struct wl_sched_seg *seg_at(const struct wl_schedule *s, double t_ns)
{
	uint32_t lo = 0, hi = s->n_segs - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if ((double)s->segs[mid].t0 <= t_ns)
			lo = mid;
		else
			hi = mid - 1;
	}
	return &s->segs[lo];
}

/* The diurnal Lambda: c t + (a / w) (sin(w (t - peak)) + sin(w peak)),
 * with t - peak taken modulo the period (exactly, by fmod) first. */
static double diurnal_lambda(const struct wl_schedule *s, double t)
{
	return s->c * t + s->a / s->w *
			      (sin(s->w * fmod(t - s->peak_ns, s->period_ns)) +
			       sin(s->w * fmod(s->peak_ns, s->period_ns)));
}

static double diurnal_scale(const struct wl_schedule *s, double t)
{
	return s->c + s->a * cos(s->w * fmod(t - s->peak_ns, s->period_ns));
}

double wl_schedule_scale(const struct wl_schedule *s, double t_s)
{
	double t = t_s * 1e9;
	if (s->kind == WL_SCHED_DIURNAL)
		return diurnal_scale(s, t);
	if (s->kind != WL_SCHED_STEPS)
		return 1;
	const struct wl_sched_seg *g = seg_at(s, t);
	return g->s0 + g->k * (t - (double)g->t0);
}

double wl_schedule_lambda(const struct wl_schedule *s, double t_ns)
{
	if (s->kind == WL_SCHED_DIURNAL)
		return diurnal_lambda(s, t_ns);
	if (s->kind != WL_SCHED_STEPS)
		return t_ns;
	const struct wl_sched_seg *g = seg_at(s, t_ns);
	double y = t_ns - (double)g->t0;
	return g->lam0 + g->s0 * y + 0.5 * g->k * y * y;
}

/* Steps: the first stretch where Lambda passes u (Lambda at its end > u;
 * a flat stretch never is), then Lambda's inverse there in closed form. */
static double steps_inverse(const struct wl_schedule *s, double u)
{
	uint32_t last = s->n_segs - 1;
	const struct wl_sched_seg *end = &s->segs[last];
	if (end->s0 <= 0 && end->lam0 <= u)
		return INFINITY; /* the schedule ends at 0 before u */
	uint32_t lo = 0, hi = last;
	while (lo < hi) { /* Lambda at stretch i's end is lam0 of i + 1 */
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->segs[mid + 1].lam0 > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	const struct wl_sched_seg *g = &s->segs[lo];
	double d = u - g->lam0, y;
	if (d <= 0) {
		y = 0;
	} else if (g->k == 0) {
		y = d / g->s0;
	} else {
		/* s0 y + k y^2 / 2 = d, the root that cancels nothing:
		 * y = 2d / (s0 + sqrt(s0^2 + 2 k d)) */
		double disc = g->s0 * g->s0 + 2 * g->k * d;
		y = 2 * d / (g->s0 + sqrt(disc > 0 ? disc : 0));
	}
	if (g->len != INT64_MAX && y > (double)g->len)
		y = (double)g->len;
	return (double)g->t0 + y;
}

/* Diurnal: Lambda - c t lies within (a / w) (sin(w peak) -+ 1), which
 * brackets the root; Newton steps from u / c, a halving wherever a step
 * would leave the bracket, until the bracket or the step is under a ns. */
static double diurnal_inverse(const struct wl_schedule *s, double u)
{
	double amp = s->a / s->w, sp = sin(s->w * fmod(s->peak_ns, s->period_ns));
	double lo = (u - amp * (1 + sp)) / s->c, hi = (u + amp * (1 - sp)) / s->c;
	if (lo < 0)
		lo = 0;
	if (hi < lo)
		hi = lo;
	double t = u / s->c;
	if (t < lo || t > hi)
		t = 0.5 * (lo + hi);
	for (int it = 0; it < 200 && hi - lo > 0.5; it++) {
		double f = diurnal_lambda(s, t) - u;
		if (f == 0)
			return t;
		if (f > 0)
			hi = t;
		else
			lo = t;
		double d = diurnal_scale(s, t), next = d > 0 ? t - f / d : NAN;
		if (!(next > lo && next < hi))
			next = 0.5 * (lo + hi);
		if (fabs(next - t) < 0.01)
			return next;
		t = next;
	}
	return 0.5 * (lo + hi);
}

int64_t wl_schedule_map(struct wl_schedule *s, int64_t u_ns)
{
	if (s->kind == WL_SCHED_NONE)
		return u_ns;
	double t = s->kind == WL_SCHED_STEPS ? steps_inverse(s, (double)u_ns)
					     : diurnal_inverse(s, (double)u_ns);
	int64_t ns = cfg_time_ns_clamp(t, 1);
	if (ns < s->last_ns)
		ns = s->last_ns;
	s->last_ns = ns;
	return ns;
}

void wl_schedule_describe(const struct wl_schedule *s, char *out, size_t outlen)
{
	out[0] = 0;
	if (s->kind == WL_SCHED_DIURNAL) {
		snprintf(out, outlen,
			 "diurnal, x%g to x%g over a period of %g s, peaking at %g s (mean x%g)",
			 s->min_scale, s->max_scale, s->period_s, s->peak_at_s, s->c);
		return;
	}
	if (s->kind != WL_SCHED_STEPS) {
		snprintf(out, outlen, "none (x1)");
		return;
	}
	size_t len = 0;
	for (uint32_t i = 0; i < s->n_segs && len < outlen; i++) {
		const struct wl_sched_seg *g = &s->segs[i];
		const char *sep = i ? ", " : "";
		if (g->k == 0)
			snprintf(out + len, outlen - len, "%sx%g from %g s", sep, g->s0,
				 (double)g->t0 * 1e-9);
		else
			snprintf(out + len, outlen - len, "%sx%g to x%g over %g s from %g s", sep,
				 g->s0, g->s0 + g->k * (double)g->len, (double)g->len * 1e-9,
				 (double)g->t0 * 1e-9);
		len += strlen(out + len);
	}
}

/* One "rate schedule[ of WHERE]: ...\n" line appended at out + *len. */
static void add_line(const cJSON *obj, const char *path, const char *where,
		     const struct wl_schedule *dflt, char *out, size_t outlen, size_t *len)
{
	struct wl_schedule s;
	char err[512], what[1024];
	if (*len >= outlen || wl_schedule_parse(&s, obj, path, dflt, err, sizeof err))
		return;
	if (s.kind != WL_SCHED_NONE) {
		wl_schedule_describe(&s, what, sizeof what);
		snprintf(out + *len, outlen - *len, "rate schedule%s%s: %s\n", where[0] ? " of " : "",
			 where, what);
		*len += strlen(out + *len);
	}
	wl_schedule_free(&s);
}

void wl_schedule_lines(const cJSON *workload, char *out, size_t outlen)
{
	size_t len = 0;
	out[0] = 0;
	if (!outlen)
		return;
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(workload, "kind");
	const cJSON *parts = cJSON_GetObjectItemCaseSensitive(workload, "parts");
	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "mix") || !cJSON_IsArray(parts)) {
		add_line(workload, "workload", "", NULL, out, outlen, &len);
		return;
	}
	/* A mix: each part's own schedule, else the mix's. */
	struct wl_schedule top;
	char err[512];
	if (wl_schedule_parse(&top, workload, "workload", NULL, err, sizeof err))
		return;
	int i = 0;
	for (const cJSON *part = parts->child; part; part = part->next, i++) {
		char where[64], path[80];
		snprintf(where, sizeof where, "workload.parts[%d]", i);
		snprintf(path, sizeof path, "%s.workload", where);
		const cJSON *wj = cJSON_GetObjectItemCaseSensitive(part, "workload");
		add_line(wj, path, where, &top, out, outlen, &len);
	}
	wl_schedule_free(&top);
}
