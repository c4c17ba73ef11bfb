/* thermal: the first-order thermal model per node, and its compute speed. */
#include "sim/thermal.h"

#include <math.h>

#include "sim/sim_int.h"

static double power_frac(const struct thermal_cfg *t, const struct health *h)
{
	if (!h->busy)
		return t->idle_power_frac;
	return h->throttled ? t->throttle_factor : 1.0;
}

/* First-order thermal model per node: the GPUs' temperature moves towards
 * ambient + c_per_w * P with time constant tau, P = TDP x (idle fraction,
 * or 1 while an iteration runs, throttle_factor while it runs throttled:
 * lower clocks, lower power). Exact between busy/idle changes, which is
 * when thermal_advance is called. */
double thermal_temp_now(const struct sim *s, uint32_t i)
{
	const struct health *h = &s->hl[i];
	const struct thermal_cfg *t = &s->sc->cluster.thermal;
	double dt = (double)(s->now - h->t_ns) * 1e-9;
	double tdp = s->sc->pools[s->pool_of[i]].cl.gpu->tdp_w;
	double steady = h->ambient_c + t->c_per_w * tdp * power_frac(t, h);
	return steady + (h->temp_c - steady) * exp(-dt / t->tau_s);
}

/* thermal_advance's part with the thermal model or throttling: crossing
 * throttle_c starts throttling (compute at throttle_factor), falling
 * below resume_c ends it. Sampling reads thermal_temp_now instead, so that
 * it changes nothing. */
void thermal_advance_model(struct sim *s, uint32_t i)
{
	struct health *h = &s->hl[i];
	const struct thermal_cfg *t = &s->sc->cluster.thermal;
	if (h->throttled)
		h->throttled_s += (double)(s->now - h->t_ns) * 1e-9;
	if (t->enabled) {
		h->temp_c = thermal_temp_now(s, i);
		if (!h->throttled && h->temp_c >= t->throttle_c)
			h->throttled = 1;
		else if (h->throttled && h->temp_c < t->resume_c)
			h->throttled = 0;
	}
	h->t_ns = s->now;
}
