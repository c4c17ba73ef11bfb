/* thermal: the first-order thermal model per node, and its compute speed. */
#include "sim/thermal.h"

#include <math.h>

#include "sim/sim_int.h"

/* Node i's power per GPU as the thermal model takes it since h->t_ns: 0
 * while its slot is off, the step's (health.busy_w, set when it started;
 * with the thermal model a step is one iteration) while busy, else the
 * idle floor: the power the energy figures count (power.h). */
static double power_w(const struct sim *s, uint32_t i, const struct health *h)
{
	if (s->sl.nstate[i] == NS_OFF)
		return 0;
	return h->busy ? h->busy_w : catalog_gpu_idle_w(s->sc->pools[s->pool_of[i]].cl.gpu);
}

/* First-order thermal model per node: the GPUs' temperature moves towards
 * ambient + c_per_w * P with time constant tau_s, P the GPU's power (the
 * idle floor, or the iteration's, which throttling lowers: lower clocks
 * spread the same work over more time). Exact between step starts and
 * ends, which is when thermal_advance is called. */
double thermal_temp_now(const struct sim *s, uint32_t i)
{
	const struct health *h = &s->hl[i];
	const struct thermal_cfg *t = &s->sc->cluster.thermal;
	double dt = (double)(s->now - h->t_ns) * 1e-9;
	double steady = h->ambient_c + t->c_per_w * power_w(s, i, h);
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
