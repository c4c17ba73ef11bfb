/* scale_cfg: an autoscaler's keys (cluster.autoscaler, cluster.pools[i].autoscaler). */
#ifndef KVSIM_SCALE_CFG_H
#define KVSIM_SCALE_CFG_H

#include <stddef.h>

struct cJSON;
struct autoscaler_cfg;

/* The autoscaler object a (NULL: none) at path, for a pool that starts
 * with nodes nodes, into *out (kind AS_NONE when a is NULL or "none"). */
int cfg_autoscaler_load(const struct cJSON *a, const char *path, int nodes,
			struct autoscaler_cfg *out, char *err, size_t errlen);

#endif
