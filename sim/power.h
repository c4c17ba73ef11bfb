/* power: what a node's GPUs draw: nothing while its slot is off, an idle
 * floor while held, and while an iteration runs a share of TDP above it
 * set by the iteration's work (docs/model.md, Energy). */
#ifndef KVSIM_POWER_H
#define KVSIM_POWER_H

#include <stdint.h>

#include "model/catalog.h"

struct sim;

/* One GPU of g running an iteration of work work_ns (cost_work_ns) that
 * took t_ns, slow-downs included (W): idle + (TDP - idle) x u with
 * utilisation u = min(1, work / time). A slowed iteration (throttling, a
 * slow fault) spreads the same work over more time: lower power. */
static inline double power_busy_w(const struct cat_gpu *g, double work_ns, int64_t t_ns)
{
	double idle = catalog_gpu_idle_w(g), t = (double)t_ns;
	return idle + (g->tdp_w - idle) * (work_ns < t ? work_ns / t : 1.0);
}

/* Node i's draw per GPU now (W): 0 while its slot is off (NS_OFF); while
 * an iteration runs, that iteration's power; else its GPU's idle power.
 * A decode span's iteration in progress is the one after those node_sync
 * applied: call it first. */
double power_now_w(const struct sim *s, uint32_t i);
/* Node i's energy (J, all its GPUs) over the iterations its statistics
 * hold: the idle power over the time its GPUs were held, plus TDP less
 * idle times its utilisation integral (node.util_ns). */
double power_energy_j(const struct sim *s, uint32_t i);

#endif
