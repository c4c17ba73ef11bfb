/* mech: the router's mechanisms, their settings and per-policy defaults. */
#include "config/mech.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"

static const char *const keys[] = {"migration", "watermark_action", "offload", "shed",
				   "shed_wait_slo_multiple", "health", "load_report_interval_ms",
				   NULL};
static const char *const migs[] = {"auto", "transfer", "recompute", NULL};
static const char *const wms[] = {"none", "close", "offload", "migrate", NULL};
static const char *const sheds[] = {"none", "predicted_wait", NULL};

int mech_is_key(const char *key)
{
	for (size_t i = 0; keys[i]; i++)
		if (!strcmp(keys[i], key))
			return 1;
	return 0;
}

int mech_parse(cJSON *obj, const char *path, int strip, struct mech_set *out, char *err,
	       size_t errlen)
{
	*out = (struct mech_set){-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
	if (!obj)
		return 0;
	int mig = -1, wm = -1, shed = -1, off = -1;
	double x = -1, rep = -1;
	if (cfg_enum(obj, path, "migration", migs, &mig, err, errlen) ||
	    cfg_number(obj, path, "load_report_interval_ms", 0, 1e9, &rep, err, errlen) ||
	    cfg_enum(obj, path, "watermark_action", wms, &wm, err, errlen) ||
	    cfg_bool(obj, path, "offload", &off, err, errlen) ||
	    cfg_enum(obj, path, "shed", sheds, &shed, err, errlen) ||
	    cfg_number(obj, path, "shed_wait_slo_multiple", 0.01, 1e6, &x, err, errlen))
		return -1;
	out->migration = mig < 0 ? -1 : MIG_AUTO + mig;
	out->watermark_action = wm;
	out->offload = off;
	out->shed = shed;
	out->shed_wait_x = x;
	out->report_ms = rep;
	cJSON *h = cJSON_GetObjectItemCaseSensitive(obj, "health");
	if (h) {
		static const char *const hkeys[] = {"enabled", "max_temperature_c", "throttled",
						    "max_kv_util", NULL};
		static const char *const thr[] = {"ignore", "avoid", NULL};
		char hp[160];
		snprintf(hp, sizeof hp, "%s.health", path);
		int en = -1, t = -1;
		double tc = -1, ku = -1;
		if (cfg_expect_object(h, hp, err, errlen) || cfg_check_keys(h, hp, hkeys, err, errlen) ||
		    cfg_bool(h, hp, "enabled", &en, err, errlen) ||
		    cfg_number(h, hp, "max_temperature_c", 0, 500, &tc, err, errlen) ||
		    cfg_enum(h, hp, "throttled", thr, &t, err, errlen) ||
		    cfg_number(h, hp, "max_kv_util", 0.01, 1, &ku, err, errlen))
			return -1;
		out->health = en;
		out->health_max_temp_c = tc;
		out->health_throttled = t;
		out->health_max_kv_util = ku;
	}
	if (strip)
		for (size_t i = 0; keys[i]; i++)
			cJSON_DeleteItemFromObjectCaseSensitive(obj, keys[i]);
	return 0;
}

/* Each family's defaults (docs/policies.md, "Mechanisms", names the
 * product behaviour each stands for). The health filter's thresholds:
 * the thermal model's resume temperature (a node above it is at or near
 * its throttle point), throttled nodes, and 95% of KV blocks in use (our
 * choice: at that share the next long prompt preempts). */
static struct mech family_default(enum pol_family f, double resume_c)
{
	struct mech m = {MIG_RECOMPUTE, WM_NONE, 0, SHED_NONE, 1.0, 0, resume_c, 1, 0.95, 0};
	if (f == POL_SEED) {
		m.migration = MIG_AUTO;
		m.watermark_action = WM_MIGRATE;
		m.offload = 1;
		m.shed = SHED_PREDICTED_WAIT;
		m.health = 1;
	}
	return m;
}

static void apply(const struct mech_set *s, struct mech *m)
{
	if (s->migration >= 0)
		m->migration = (enum migration_mode)s->migration;
	if (s->watermark_action >= 0)
		m->watermark_action = (enum wm_action)s->watermark_action;
	if (s->offload >= 0)
		m->offload = s->offload;
	if (s->shed >= 0)
		m->shed = (enum shed_rule)s->shed;
	if (s->shed_wait_x >= 0)
		m->shed_wait_x = s->shed_wait_x;
	if (s->health >= 0)
		m->health = s->health;
	if (s->health_max_temp_c >= 0)
		m->health_max_temp_c = s->health_max_temp_c;
	if (s->health_throttled >= 0)
		m->health_throttled = s->health_throttled;
	if (s->health_max_kv_util >= 0)
		m->health_max_kv_util = s->health_max_kv_util;
	if (s->report_ms >= 0)
		m->report_s = s->report_ms * 1e-3;
}

int mech_resolve(enum pol_family fam, double report_ms, const struct mech_set *router,
		 const struct mech_set *own, const char *own_path, enum kv_path path,
		 double resume_c, struct mech *out, char *err, size_t errlen)
{
	*out = family_default(fam, resume_c);
	out->report_s = report_ms * 1e-3;
	apply(router, out);
	apply(own, out);
	if (path == KVX_NONE) {
		if (out->migration == MIG_TRANSFER) {
			snprintf(err, errlen, "%s.migration: \"transfer\" needs a KV transfer path, "
					      "and cluster.kv_transfer is \"none\"",
				 own->migration >= 0 ? own_path : "router");
			return -1;
		}
		out->migration = MIG_RECOMPUTE; /* auto has nothing to choose from */
	}
	if (out->watermark_action == WM_OFFLOAD && !out->offload) {
		snprintf(err, errlen, "%s.watermark_action: \"offload\" writes blocks down to the "
				      "tiers, which this column does not use; set offload: true too",
			 own->watermark_action >= 0 ? own_path : "router");
		return -1;
	}
	return 0;
}

const char *mech_family_name(enum pol_family f)
{
	return f == POL_SEED ? "seed" : f == POL_PRODUCT ? "production" : "baseline";
}

const char *mech_path_name(enum kv_path p)
{
	return p == KVX_NONE ? "none" : p == KVX_LMCACHE ? "lmcache" : "nixl";
}

const char *mech_wm_name(enum wm_action a)
{
	return wms[a];
}

const char *mech_shed_name(enum shed_rule r)
{
	return sheds[r];
}

const char *mech_migration_name(enum migration_mode m)
{
	return m >= MIG_AUTO && m <= MIG_RECOMPUTE ? migs[m - MIG_AUTO] : "auto";
}

void mech_describe(const struct mech *m, char *out, size_t outlen)
{
	int k = snprintf(out, outlen, "kv %s, watermark %s, offload %s, shed %s",
			 mech_migration_name(m->migration), mech_wm_name(m->watermark_action),
			 m->offload ? "on" : "off", mech_shed_name(m->shed));
	if (k > 0 && (size_t)k < outlen && m->shed == SHED_PREDICTED_WAIT)
		k += snprintf(out + k, outlen - (size_t)k, " (x%g SLO)", m->shed_wait_x);
	if (k > 0 && (size_t)k < outlen) {
		if (m->report_s > 0)
			k += snprintf(out + k, outlen - (size_t)k, ", load reports every %g ms",
				      m->report_s * 1e3);
		else
			k += snprintf(out + k, outlen - (size_t)k, ", load reports exact");
	}
	if (k > 0 && (size_t)k < outlen)
		k += snprintf(out + k, outlen - (size_t)k, ", health %s", m->health ? "on" : "off");
	if (k > 0 && (size_t)k < outlen && m->health)
		snprintf(out + k, outlen - (size_t)k, " (>%g C%s, kv>%g)", m->health_max_temp_c,
			 m->health_throttled ? ", throttled" : "", m->health_max_kv_util);
}

const char *mech_reason_name(enum mig_reason r)
{
	static const char *const names[] = {"policy", "threshold", "health", "watermark"};
	return r < MR_N ? names[r] : "policy";
}
