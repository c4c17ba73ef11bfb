/* mech: the router's mechanisms around a policy (KV transfer, watermark
 * action, tier offload, shedding, health), with per-policy defaults. */
#ifndef KVSIM_MECH_H
#define KVSIM_MECH_H

#include <stddef.h>

#include "config/migration.h"

struct cJSON;

/* What kind of deployment a policy stands for; it decides the defaults of
 * the mechanisms (docs/policies.md, "Mechanisms"). */
enum pol_family {
	POL_BASELINE, /* a plain proxy in front of plain engines */
	POL_SEED,     /* the stateful router kvsim was built to study */
	POL_PRODUCT,  /* a production router at its product's defaults */
};

/* cluster.kv_transfer: the path KV can take between nodes. */
enum kv_path {
	KVX_NONE,    /* none: KV held elsewhere is recomputed */
	KVX_NIXL,    /* GPU to GPU: NVLink in a server, RDMA NICs across */
	KVX_LMCACHE, /* through host memory: PCIe out, the network, PCIe in */
};

enum wm_action {
	WM_NONE,    /* nothing happens at the watermark */
	WM_CLOSE,   /* the node takes no new sessions while above it */
	WM_OFFLOAD, /* cold cached blocks are written down to the tiers */
	WM_MIGRATE, /* idle sessions' KV moves to nodes with room */
};

enum shed_rule {
	SHED_NONE,           /* only the hard queue bound */
	SHED_PREDICTED_WAIT, /* predicted TTFT above a multiple of the SLO */
};

/* Why a session's KV moved to another node (migration.by_reason). */
enum mig_reason {
	MR_POLICY,    /* the policy chose another node */
	MR_THRESHOLD, /* an affinity policy moved it off a node over its threshold */
	MR_HEALTH,    /* its node was unhealthy */
	MR_WATERMARK, /* its node passed the KV watermark (watermark_action migrate) */
	MR_N,
};
const char *mech_reason_name(enum mig_reason r);

/* The mechanisms one column runs with. */
struct mech {
	enum migration_mode migration; /* MIG_AUTO, MIG_TRANSFER or MIG_RECOMPUTE */
	enum wm_action watermark_action;
	int offload;              /* the engines use the servers' DRAM/NVMe tiers */
	enum shed_rule shed;
	double shed_wait_x;       /* predicted TTFT limit, in TTFT SLOs */
	int health;               /* the health filter is on */
	double health_max_temp_c; /* hotter nodes are unhealthy */
	int health_throttled;     /* throttled nodes are unhealthy */
	double health_max_kv_util; /* nodes with more KV in use are unhealthy */
	double report_s;          /* engines' load report interval; 0: exact views */
};

/* Settings given in the scenario: a field below 0 is not set. */
struct mech_set {
	int migration, watermark_action, offload, shed, health, health_throttled;
	double shed_wait_x, health_max_temp_c, health_max_kv_util, report_ms;
};

/* Whether key names a mechanism (the router reads it, not the policy). */
int mech_is_key(const char *key);
/* The mechanism keys of obj (at path) into *out (all unset first); then,
 * when strip, they are removed from obj. 0, or -1 with err. */
int mech_parse(struct cJSON *obj, const char *path, int strip, struct mech_set *out, char *err,
	       size_t errlen);
/* The column's mechanisms: own (router.policy_params.<policy>, read at
 * own_path, for messages) over
 * router (router.<key>) over the family's defaults, and the product's load
 * report interval (report_ms: what its router is told how often; 0:
 * every iteration). resume_c is the thermal model's resume temperature
 * (the health filter's default). A setting the cluster cannot honour (a
 * transfer without a path) is an error: -1 with err. */
int mech_resolve(enum pol_family fam, double report_ms, const struct mech_set *router,
		 const struct mech_set *own, const char *own_path, enum kv_path path,
		 double resume_c, struct mech *out, char *err, size_t errlen);
/* Names, for outputs. */
const char *mech_family_name(enum pol_family f);
const char *mech_path_name(enum kv_path p);
const char *mech_wm_name(enum wm_action a);
const char *mech_shed_name(enum shed_rule r);
const char *mech_migration_name(enum migration_mode m);
/* One line: "kv auto, watermark migrate, offload on, shed predicted_wait
 * (x1 SLO), load reports exact, health on (>80 C, throttled, kv>0.95)". */
void mech_describe(const struct mech *m, char *out, size_t outlen);

#endif
