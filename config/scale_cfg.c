/* scale_cfg: cluster.autoscaler and cluster.pools[i].autoscaler, read and checked. */
#include "config/scale_cfg.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "config/cluster_cfg.h"

/* Defaults, each with its source:
 * - hpa tick_s 15: Kubernetes' --horizontal-pod-autoscaler-sync-period;
 *   stabilization_s 300: the HPA's default scale-down
 *   stabilizationWindowSeconds; tolerance 0.1: its
 *   --horizontal-pod-autoscaler-tolerance; min_nodes 1: minReplicas'
 *   default; max_step 0: the HPA's default policies (up by at most
 *   max(4, 100% of current) a tick, down by up to 100%).
 * - startup_s 240, startup_jitter_s startup_s / 8 (30 s): BLIS's model-load
 *   time for its HPA/WVA autoscaler (240 +- 30 s: pulling and loading a
 *   model's weights onto a new pod).
 * - planner tick_s 180: our choice, three minutes, longer than a start-up
 *   so that each decision's nodes serve before the next one is taken
 *   (Dynamo's planner runs every adjustment_interval, set per deployment);
 *   window 3, alpha 0.5, beta 0.3, headroom 0.1: our choice (a short
 *   memory that still follows a daily ramp; capacity sized to 90%). */
static const struct autoscaler_cfg hpa_defaults = {
    .kind = AS_HPA, .tolerance = 0.1, .tick_s = 15, .stabilization_s = 300,
    .startup_s = 240, .startup_jitter_s = 30, .min_nodes = 1,
    .window = 3, .alpha = 0.5, .beta = 0.3, .headroom = 0.1,
};

int cfg_autoscaler_load(const cJSON *a, const char *path, int nodes, struct autoscaler_cfg *out,
			char *err, size_t errlen)
{
	static const char *const hpa_keys[] = {"kind", "metric", "target", "tolerance", "tick_s",
					       "stabilization_s", "startup_s", "startup_jitter_s",
					       "min_nodes", "max_nodes", "max_step", NULL};
	static const char *const planner_keys[] = {"kind", "predictor", "window", "alpha", "beta",
						   "headroom", "tick_s", "stabilization_s",
						   "startup_s", "startup_jitter_s", "min_nodes",
						   "max_nodes", "max_step", NULL};
	static const char *const kinds[] = {"none", "hpa", "planner", NULL};
	static const char *const metrics[] = {"queue_per_node", "kv_util", "busy", "rps_per_node",
					      NULL};
	static const char *const predictors[] = {"constant", "moving_average", "holt", NULL};
	char kp[160];
	*out = (struct autoscaler_cfg){.kind = AS_NONE};
	if (!a)
		return 0;
	if (cfg_expect_object(a, path, err, errlen))
		return -1;
	int kind = -1;
	if (cfg_enum(a, path, "kind", kinds, &kind, err, errlen))
		return -1;
	if (kind < 0) {
		snprintf(err, errlen, "%s: missing (expected \"hpa\", \"planner\" or \"none\")",
			 cfg_join(kp, sizeof kp, path, "kind"));
		return -1;
	}
	/* "none" turns it off and leaves the other keys unread, so that
	 * --set cluster.autoscaler.kind=none compares a static fleet */
	if (kind == AS_NONE) {
		static const char *const any[] = {"kind", "metric", "target", "tolerance", "tick_s",
						  "stabilization_s", "startup_s", "startup_jitter_s",
						  "min_nodes", "max_nodes", "max_step", "predictor",
						  "window", "alpha", "beta", "headroom", NULL};
		return cfg_check_keys(a, path, any, err, errlen);
	}
	struct autoscaler_cfg c = hpa_defaults;
	c.kind = (enum as_kind)kind;
	if (c.kind == AS_PLANNER) {
		c.tick_s = 180;
		c.stabilization_s = 0;
	}
	int metric = -1, pred = ASP_CONSTANT;
	int64_t mn = c.min_nodes, mx = -1, step = 0, window = c.window;
	if (cfg_check_keys(a, path, c.kind == AS_HPA ? hpa_keys : planner_keys, err, errlen) ||
	    cfg_enum(a, path, "metric", metrics, &metric, err, errlen) ||
	    cfg_number(a, path, "target", 0, 1e12, &c.target, err, errlen) ||
	    cfg_number(a, path, "tolerance", 0, 10, &c.tolerance, err, errlen) ||
	    cfg_enum(a, path, "predictor", predictors, &pred, err, errlen) ||
	    cfg_int(a, path, "window", 1, 10000, &window, err, errlen) ||
	    cfg_number(a, path, "alpha", 0, 1, &c.alpha, err, errlen) ||
	    cfg_number(a, path, "beta", 0, 1, &c.beta, err, errlen) ||
	    cfg_number(a, path, "headroom", 0, 0.95, &c.headroom, err, errlen) ||
	    cfg_number(a, path, "tick_s", 1e-3, 1e7, &c.tick_s, err, errlen) ||
	    cfg_number(a, path, "stabilization_s", 0, 1e7, &c.stabilization_s, err, errlen) ||
	    cfg_number(a, path, "startup_s", 0, 1e7, &c.startup_s, err, errlen) ||
	    cfg_number(a, path, "startup_jitter_s", 0, 1e7, &c.startup_jitter_s, err, errlen) ||
	    cfg_int(a, path, "min_nodes", 1, 1000000, &mn, err, errlen) ||
	    cfg_int(a, path, "max_nodes", 1, 1000000, &mx, err, errlen) ||
	    cfg_int(a, path, "max_step", 0, 1000000, &step, err, errlen))
		return -1;
	/* Holt's level at alpha 0 never follows the load: the forecast stays
	 * at its first value. */
	if (cJSON_GetObjectItemCaseSensitive(a, "alpha") && c.alpha <= 0) {
		snprintf(err, errlen,
			 "%s: expected a number in (0, 1] (at 0 the forecast never follows the load), "
			 "got %g",
			 cfg_join(kp, sizeof kp, path, "alpha"), c.alpha);
		return -1;
	}
	/* the jitter defaults to BLIS's proportion of the start-up (30 s of 240) */
	if (!cJSON_GetObjectItemCaseSensitive(a, "startup_jitter_s"))
		c.startup_jitter_s = c.startup_s / 8;
	c.predictor = (enum as_predictor)pred;
	c.window = (int)window;
	if (c.kind == AS_HPA && metric < 0) {
		snprintf(err, errlen,
			 "%s: missing (expected \"queue_per_node\", \"kv_util\", \"busy\" or "
			 "\"rps_per_node\")",
			 cfg_join(kp, sizeof kp, path, "metric"));
		return -1;
	}
	c.metric = metric < 0 ? ASM_QUEUE : (enum as_metric)metric;
	if (c.kind == AS_HPA && !cJSON_GetObjectItemCaseSensitive(a, "target")) {
		snprintf(err, errlen, "%s: missing (the metric's value per node to hold)",
			 cfg_join(kp, sizeof kp, path, "target"));
		return -1;
	}
	if (c.kind == AS_HPA && c.target <= 0) {
		snprintf(err, errlen, "%s: expected a number above 0, got %g",
			 cfg_join(kp, sizeof kp, path, "target"), c.target);
		return -1;
	}
	if (c.kind == AS_HPA && (c.metric == ASM_KV || c.metric == ASM_BUSY) && c.target > 1) {
		snprintf(err, errlen, "%s: %s is a fraction; expected a target in (0, 1], got %g",
			 cfg_join(kp, sizeof kp, path, "target"), metrics[c.metric], c.target);
		return -1;
	}
	if (mx < 0) {
		snprintf(err, errlen, "%s: missing (the most nodes the pool may hold)",
			 cfg_join(kp, sizeof kp, path, "max_nodes"));
		return -1;
	}
	if (mn > mx) {
		snprintf(err, errlen, "%s: expected at most max_nodes (%lld), got %lld",
			 cfg_join(kp, sizeof kp, path, "min_nodes"), (long long)mx, (long long)mn);
		return -1;
	}
	if (nodes < mn || nodes > mx) {
		snprintf(err, errlen,
			 "%s: the pool starts with %d nodes; expected min_nodes <= nodes <= "
			 "max_nodes (%lld..%lld)",
			 path, nodes, (long long)mn, (long long)mx);
		return -1;
	}
	if (c.startup_jitter_s > c.startup_s) {
		snprintf(err, errlen, "%s: expected at most startup_s (%g), got %g",
			 cfg_join(kp, sizeof kp, path, "startup_jitter_s"), c.startup_s,
			 c.startup_jitter_s);
		return -1;
	}
	c.min_nodes = (int)mn;
	c.max_nodes = (int)mx;
	c.max_step = (int)step;
	*out = c;
	return 0;
}
