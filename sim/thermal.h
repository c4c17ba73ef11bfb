/* thermal: the thermal model: temperature, throttling and slow-downs. */
#ifndef KVSIM_THERMAL_H
#define KVSIM_THERMAL_H

#include <stdint.h>

#include "sim/sim_int.h"

/* Node i's temperature now, changing nothing (for sampling). */
double thermal_temp_now(const struct sim *s, uint32_t i);
void thermal_advance_model(struct sim *s, uint32_t i);

/* Brings node i's temperature and throttling to now (inline: every step
 * start calls it, and without the thermal model or throttling it only
 * moves the clock). */
static inline void thermal_advance(struct sim *s, uint32_t i)
{
	struct health *h = &s->hl[i];
	if (s->now <= h->t_ns)
		return;
	if (h->throttled || s->sc->cluster.thermal.enabled)
		thermal_advance_model(s, i);
	else
		h->t_ns = s->now;
}

/* Node i's compute speed from its straggler factor and throttling. */
static inline void thermal_apply_speed(struct sim *s, uint32_t i)
{
	const struct health *h = &s->hl[i];
	double speed = h->slow * (h->throttled ? s->sc->cluster.thermal.throttle_factor : 1.0);
	s->nodes[i].time_scale = speed == 1.0 ? 1.0 : 1.0 / speed;
}

#endif
