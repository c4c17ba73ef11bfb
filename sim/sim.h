/* sim: one run of a scenario: workload -> router -> node engines -> metrics. */
#ifndef KVSIM_SIM_H
#define KVSIM_SIM_H

#include <stddef.h>
#include <stdint.h>

struct scenario;
struct request;
struct met_summary;

/* The library's interface is this header: with it come the scenario and
 * its catalog (config/config.h: reading, --set, validating, freeing), how
 * a run is made (sim/opts.h) and its interruption (base/interrupt.h). */
#include "base/about.h"
#include "base/interrupt.h"
#include "config/config.h"
#include "sim/opts.h"



/* Runs the scenario to the end (arrivals stop at duration_s or when the
 * workload runs out; then the cluster drains). Fills out (caller frees with
 * met_summary_free). Returns 0, 2 for a bad scenario or input (err says
 * which JSON path or file), 3 for an internal error (out of memory, I/O),
 * 128 + the signal when interrupted (intr_catch). */
int sim_run(const struct scenario *s, const struct sim_opts *o, struct met_summary *out, char *err,
	    size_t errlen);

/* Interrupts: after intr_catch (base/interrupt.h), a run in progress stops
 * at its next event on SIGINT or SIGTERM and returns 128 + the signal with
 * its temporaries removed (no result written); every later sim_run
 * returns so at once. */

/* Validates what cfg_scenario_load leaves to the modules (policy and
 * workload parameters) by building and destroying them. 0 or 2. */
int sim_validate(const struct scenario *s, char *err, size_t errlen);


#endif
