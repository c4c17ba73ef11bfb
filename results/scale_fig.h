/* scale_fig: the data of the figure of nodes and load over time, for a run whose pools autoscaled. */
#ifndef KVSIM_RESULTS_SCALE_FIG_H
#define KVSIM_RESULTS_SCALE_FIG_H

#include <stddef.h>

/* For the run of policy in a `kvsim compare` folder dir: when its
 * summary.json shows scaling (scaling.up + scaling.down > 0, or a pool
 * whose nodes_mean differs from its nodes) and its timeseries.csv has a
 * nodes_up column, writes dat (a path under dir/plots/) with one row per
 * sample time: time_s, nodes serving (each pool's nodes_up, summed over
 * pools), requests running and queued (summed over nodes), and arrivals
 * per second since the sample before (requests.csv's arrival_s). Returns
 * 1 written, 0 nothing to draw (no scaling, or no nodes_up column), 2 on
 * damaged input, 3 on a system error (err says which). O(rows + requests
 * x log samples). */
int res_scale_data(const char *dir, const char *policy, const char *dat, char *err,
		   size_t errlen);

#endif
