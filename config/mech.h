/* mech: the router's mechanisms around a policy (KV transfer, watermark
 * action, tier offload, shedding, health), with per-policy defaults. */
#ifndef KVSIM_MECH_H
#define KVSIM_MECH_H

#include <stddef.h>
#include <stdio.h>

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

/* Settings given in the scenario: a field below 0 is not set. Each field
 * holds its key's value as given (an enum's value, 0 or 1, a number in the
 * key's units); struct mech_key names it. */
struct mech_set {
	int migration, watermark_action, offload, shed, health, health_throttled;
	double shed_wait_x, health_max_temp_c, health_max_kv_util, report_ms;
};

enum mech_type {
	MECH_ENUM,   /* a string, one of choices */
	MECH_BOOL,   /* true or false */
	MECH_NUMBER, /* a number in [lo, hi] */
};

/* Where a key's default comes from. */
enum mech_from {
	MECH_FROM_FAMILY,  /* fam[], by the policy's family */
	MECH_FROM_POLICY,  /* the policy's own (pol_ops.report_interval_ms) */
	MECH_FROM_THERMAL, /* the thermal model's resume temperature */
};

/* One mechanism key, declared once: parsing (mech_parse, mech_is_key), the
 * defaults (mech_resolve), the outputs (mech_describe, mech_json) and the
 * docs (mech_list, `kvsim list mechanisms`) read it. Adding a key is a row
 * in the table of mech.c, a field in struct mech and struct mech_set, and
 * the code that acts on it. */
struct mech_key {
	/* The key under router (or router.policy_params.<policy>); with obj,
	 * a field of the object key obj (router.health.enabled). The rows of
	 * one obj are consecutive. */
	const char *obj, *name;
	enum mech_type type;
	const char *const *choices; /* MECH_ENUM: the names, NULL-terminated */
	int base;                   /* MECH_ENUM: the enum value of choices[0] */
	double lo, hi;              /* MECH_NUMBER: the range accepted, >= 0 */
	/* MECH_NUMBER: struct mech's field is the value x to_field; outputs
	 * give the field x from_field (a key in ms, a field in s: 1e-3, 1e3) */
	double to_field, from_field;
	/* offsetof the key's field in struct mech_set and in struct mech: an
	 * int (or an enum) for MECH_ENUM and MECH_BOOL, a double for
	 * MECH_NUMBER */
	size_t set_off, off;
	enum mech_from from;
	double fam[3]; /* MECH_FROM_FAMILY: the default by enum pol_family */
	/* mech_describe's words: fmt with the value's word (%s: say[i], or
	 * choices[i] where say is NULL; a NULL word says nothing) or its
	 * number (%g; fmt_zero, if set, for 0). A detail goes in parentheses
	 * after the last key before it that is not one, when that key is on
	 * (its value, or choice index, is not 0). */
	const char *fmt, *fmt_zero;
	const char *const *say;
	int detail;
	const char *doc; /* one line, for the docs */
};

/* The table, in the order of the outputs; *n gets its length. */
const struct mech_key *mech_keys(size_t *n);
/* The top-level keys (health once) into out[0..max), in table order;
 * returns how many there are (the scenario reader has room for
 * MECH_MAX_KEYS). */
#define MECH_MAX_KEYS 32
size_t mech_key_names(const char **out, size_t max);
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
/* One line: "kv auto, watermark migrate, offload on, shed predicted_wait
 * (x1 SLO), load reports exact, health on (>80 C, throttled, kv>0.95)". */
void mech_describe(const struct mech *m, char *out, size_t outlen);
/* Adds each key of m to obj (summary.json's mechanisms), in table order;
 * an obj key as an object. What cannot be allocated is left out. */
void mech_json(const struct mech *m, struct cJSON *obj);
/* The table as Markdown (key, type, range, default per family, doc), one
 * row per key (`kvsim list mechanisms`). */
void mech_list(FILE *f);

#endif
