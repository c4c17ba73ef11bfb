/* check_mech: the mechanism key table against the parser, the defaults and
 * the outputs that read it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "config/mech.h"
#include "tests/helpers.h"
#include "tests/suites.h"

static int row_int(const void *base, size_t off)
{
	int v;
	memcpy(&v, (const char *)base + off, sizeof v);
	return v;
}

static double row_double(const void *base, size_t off)
{
	double v;
	memcpy(&v, (const char *)base + off, sizeof v);
	return v;
}

/* The JSON path and object that row r is read at, under "router". */
static cJSON *object_for(const struct mech_key *r, cJSON *router, char *path, size_t len)
{
	if (!r->obj) {
		snprintf(path, len, "router.%s", r->name);
		return router;
	}
	snprintf(path, len, "router.%s.%s", r->obj, r->name);
	return cJSON_AddObjectToObject(router, r->obj);
}

/* Parses {"<key>": v} (or {"<obj>": {"<key>": v}}) for row r; the return
 * of mech_parse, with the set and the message. */
static int parse_one(const struct mech_key *r, cJSON *v, struct mech_set *set, char *path,
		     size_t pathlen, char *err, size_t errlen)
{
	cJSON *router = cJSON_CreateObject();
	cJSON_AddItemToObject(object_for(r, router, path, pathlen), r->name, v);
	err[0] = '\0';
	int rc = mech_parse(router, "router", 0, set, err, errlen);
	cJSON_Delete(router);
	return rc;
}

/* Every row's default, family by family, is what mech_resolve gives with
 * nothing set; and those are the defaults each family stands for
 * (docs/policies.md, "Mechanisms"), written out by hand. */
START_TEST(defaults_are_the_tables)
{
	size_t n;
	const struct mech_key *t = mech_keys(&n);
	struct mech_set none;
	char err[256];
	ck_assert_int_eq(mech_parse(NULL, "router", 0, &none, err, sizeof err), 0);
	for (int f = POL_BASELINE; f <= POL_PRODUCT; f++) {
		struct mech m;
		ck_assert_int_eq(mech_resolve((enum pol_family)f, 50, &none, &none, "p", KVX_NIXL, 77,
					      &m, err, sizeof err),
				 0);
		for (size_t i = 0; i < n; i++) {
			const struct mech_key *r = &t[i];
			double want = r->from == MECH_FROM_POLICY    ? 50
				      : r->from == MECH_FROM_THERMAL ? 77
								     : r->fam[f];
			if (r->type == MECH_NUMBER)
				ck_assert_msg(row_double(&m, r->off) == want * r->to_field,
					      "%s: family %d default %g", r->name, f,
					      row_double(&m, r->off));
			else
				ck_assert_msg(row_int(&m, r->off) == (int)want, "%s: family %d default %d",
					      r->name, f, row_int(&m, r->off));
		}
		int seed = f == POL_SEED;
		ck_assert_int_eq(m.migration, seed ? MIG_AUTO : MIG_RECOMPUTE);
		ck_assert_int_eq(m.watermark_action, seed ? WM_MIGRATE : WM_NONE);
		ck_assert_int_eq(m.offload, seed);
		ck_assert_int_eq(m.shed, seed ? SHED_PREDICTED_WAIT : SHED_NONE);
		ck_assert_double_eq(m.shed_wait_x, 1.0);
		ck_assert_int_eq(m.health, seed);
		ck_assert_double_eq(m.health_max_temp_c, 77);
		ck_assert_int_eq(m.health_throttled, 1);
		ck_assert_double_eq(m.health_max_kv_util, 0.95);
		ck_assert_double_eq(m.report_s, 50 * 1e-3);
	}
}
END_TEST

/* With nothing given every field of the set is unset; the table covers
 * each one. */
START_TEST(nothing_given_is_unset)
{
	struct mech_set s;
	char err[256];
	memset(&s, 0, sizeof s);
	cJSON *empty = cJSON_CreateObject();
	ck_assert_int_eq(mech_parse(empty, "router", 0, &s, err, sizeof err), 0);
	cJSON_Delete(empty);
	const int ints[] = {s.migration, s.watermark_action, s.offload, s.shed, s.health,
			    s.health_throttled};
	const double dbls[] = {s.shed_wait_x, s.health_max_temp_c, s.health_max_kv_util,
			       s.report_ms};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		ck_assert_int_lt(ints[i], 0);
	for (size_t i = 0; i < sizeof dbls / sizeof dbls[0]; i++)
		ck_assert_double_lt(dbls[i], 0);
}
END_TEST

/* Every key takes each valid value (each choice, true and false, the ends
 * of its range), into its set field and, resolved, into its struct mech
 * field. */
START_TEST(every_key_takes_its_values)
{
	size_t n;
	const struct mech_key *t = mech_keys(&n);
	char path[128], err[256];
	for (size_t i = 0; i < n; i++) {
		const struct mech_key *r = &t[i];
		double vals[8];
		size_t nv = 0;
		if (r->type == MECH_ENUM)
			for (; r->choices[nv]; nv++)
				vals[nv] = nv;
		else if (r->type == MECH_BOOL)
			vals[nv++] = 0, vals[nv++] = 1;
		else
			vals[nv++] = r->lo, vals[nv++] = r->hi, vals[nv++] = (r->lo + r->hi) / 2;
		for (size_t k = 0; k < nv; k++) {
			cJSON *v = r->type == MECH_ENUM   ? cJSON_CreateString(r->choices[(int)vals[k]])
				   : r->type == MECH_BOOL ? cJSON_CreateBool((int)vals[k])
							  : cJSON_CreateNumber(vals[k]);
			struct mech_set set;
			ck_assert_msg(parse_one(r, v, &set, path, sizeof path, err, sizeof err) == 0,
				      "%s: %s", path, err);
			struct mech m, want;
			struct mech_set none;
			mech_parse(NULL, "router", 0, &none, err, sizeof err);
			/* the seed family offloads, so watermark_action offload resolves */
			ck_assert_msg(mech_resolve(POL_SEED, 0, &set, &none, "p", KVX_NIXL, 80, &m,
						   err, sizeof err) == 0,
				      "%s: %s", path, err);
			ck_assert_int_eq(mech_resolve(POL_SEED, 0, &none, &none, "p", KVX_NIXL, 80,
						      &want, err, sizeof err),
					 0);
			if (r->type == MECH_NUMBER) {
				ck_assert_double_eq(row_double(&set, r->set_off), vals[k]);
				ck_assert_double_eq(row_double(&m, r->off), vals[k] * r->to_field);
				memcpy((char *)&want + r->off, (const char *)&m + r->off, sizeof(double));
			} else {
				int e = r->type == MECH_ENUM ? r->base + (int)vals[k] : (int)vals[k];
				ck_assert_int_eq(row_int(&set, r->set_off), e);
				ck_assert_int_eq(row_int(&m, r->off), e);
				memcpy((char *)&want + r->off, (const char *)&m + r->off, sizeof(int));
			}
			/* and nothing else changed */
			ck_assert_msg(!memcmp(&m, &want, sizeof m), "%s changed another field", path);
		}
	}
}
END_TEST

/* Every key refuses a value of the wrong type or out of its range, with a
 * message naming its JSON path. */
START_TEST(every_key_refuses_bad_values)
{
	size_t n;
	const struct mech_key *t = mech_keys(&n);
	char path[128], err[256], want[256];
	for (size_t i = 0; i < n; i++) {
		const struct mech_key *r = &t[i];
		struct mech_set set;
		cJSON *bad[4];
		size_t nb = 0;
		bad[nb++] = cJSON_CreateString("bogus");
		bad[nb++] = cJSON_CreateNull();
		if (r->type == MECH_NUMBER) {
			bad[nb++] = cJSON_CreateNumber(r->hi * 2 + 1);
			bad[nb++] = cJSON_CreateNumber(r->lo - 0.001);
		}
		for (size_t k = 0; k < nb; k++) {
			ck_assert_msg(parse_one(r, bad[k], &set, path, sizeof path, err, sizeof err) == -1,
				      "%s: a bad value was taken", path);
			if (r->type == MECH_ENUM)
				snprintf(want, sizeof want, "%s: expected one of ", path);
			else if (r->type == MECH_BOOL)
				snprintf(want, sizeof want, "%s: expected true or false", path);
			else
				snprintf(want, sizeof want, "%s: expected a number in [%g, %g], got", path,
					 r->lo, r->hi);
			ck_assert_msg(!strncmp(err, want, strlen(want)), "\"%s\" is not \"%s...\"", err,
				      want);
		}
		ck_assert_double_ge(r->lo, 0); /* below 0 means "not set" */
	}
}
END_TEST

/* The names: each top-level key is a mechanism key, once; an object key's
 * rows are consecutive; the scenario reader has room for them all; a
 * scenario accepts each under router and under policy_params, where it is
 * stripped before the policy sees it. */
START_TEST(names_and_the_scenario)
{
	size_t n;
	const struct mech_key *t = mech_keys(&n);
	const char *names[MECH_MAX_KEYS];
	size_t nn = mech_key_names(names, MECH_MAX_KEYS);
	ck_assert_uint_le(mech_key_names(NULL, 0), MECH_MAX_KEYS);
	ck_assert_uint_eq(nn, mech_key_names(NULL, 0));
	for (size_t i = 0; i < nn; i++) {
		ck_assert(mech_is_key(names[i]));
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(names[i], names[j]);
	}
	ck_assert(!mech_is_key("enabled"));
	ck_assert(!mech_is_key("policy"));
	for (size_t i = 1; i < n; i++)
		for (size_t j = 0; j + 1 < i; j++)
			if (t[i].obj && t[j].obj && !strcmp(t[i].obj, t[j].obj))
				ck_assert_msg(t[i - 1].obj && !strcmp(t[i - 1].obj, t[i].obj),
					      "%s.%s is apart from its object's other rows", t[i].obj,
					      t[i].name);
	char json[256];
	for (size_t i = 0; i < nn; i++) {
		struct scenario s;
		snprintf(json, sizeof json,
			 "{\"router\": {\"policy\": \"round_robin\", \"%s\": {}, \"policy_params\": "
			 "{\"round_robin\": {\"%s\": {}}}}}",
			 names[i], names[i]);
		char err[512] = "";
		int rc = th_scenario_err(json, &s, err, sizeof err);
		/* {} is a bad value for every key but an object's: the message is
		 * about its value, not an unknown key */
		if (rc == 0) {
			ck_assert_ptr_null(cJSON_GetObjectItem(s.router.params, names[i]));
			cfg_scenario_free(&s);
		} else {
			ck_assert_msg(!strstr(err, "unknown key"), "%s: %s", names[i], err);
		}
	}
}
END_TEST

/* The line under the comparison table and summary.json's mechanisms, for
 * the defaults of each family and a few settings. */
START_TEST(describe_and_json)
{
	struct mech_set none;
	struct mech m;
	char err[256], line[256];
	mech_parse(NULL, "router", 0, &none, err, sizeof err);
	mech_resolve(POL_BASELINE, 0, &none, &none, "p", KVX_NIXL, 80, &m, err, sizeof err);
	mech_describe(&m, line, sizeof line);
	ck_assert_str_eq(line, "kv recompute, watermark none, offload off, shed none, load reports "
			       "exact, health off");
	mech_resolve(POL_SEED, 0, &none, &none, "p", KVX_NIXL, 80, &m, err, sizeof err);
	mech_describe(&m, line, sizeof line);
	ck_assert_str_eq(line, "kv auto, watermark migrate, offload on, shed predicted_wait (x1 SLO), "
			       "load reports exact, health on (>80 C, throttled, kv>0.95)");
	m.health_throttled = 0;
	m.report_s = 0.05;
	m.shed_wait_x = 2.5;
	mech_describe(&m, line, sizeof line);
	ck_assert_str_eq(line, "kv auto, watermark migrate, offload on, shed predicted_wait (x2.5 "
			       "SLO), load reports every 50 ms, health on (>80 C, kv>0.95)");
	char small[12];
	mech_describe(&m, small, sizeof small);
	ck_assert_str_eq(small, "kv auto, wa");

	cJSON *o = cJSON_CreateObject();
	mech_json(&m, o);
	char *text = cJSON_PrintUnformatted(o);
	ck_assert_str_eq(text, "{\"migration\":\"auto\",\"watermark_action\":\"migrate\","
			       "\"offload\":true,\"shed\":\"predicted_wait\","
			       "\"shed_wait_slo_multiple\":2.5,\"load_report_interval_ms\":50,"
			       "\"health\":{\"enabled\":true,\"max_temperature_c\":80,"
			       "\"throttled\":\"ignore\",\"max_kv_util\":0.95}}");
	cJSON_free(text);
	cJSON_Delete(o);
}
END_TEST

/* `kvsim list mechanisms`: a header, a rule and one row per key. */
START_TEST(list_has_a_row_per_key)
{
	size_t n;
	mech_keys(&n);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	mech_list(f);
	fclose(f);
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	ck_assert_uint_eq(lines, n + 2);
	ck_assert_ptr_nonnull(strstr(buf, "\n| health.max_kv_util "));
	free(buf);
}
END_TEST

Suite *mech_suite(void)
{
	Suite *s = suite_create("mech");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, defaults_are_the_tables);
	tcase_add_test(tc, nothing_given_is_unset);
	tcase_add_test(tc, every_key_takes_its_values);
	tcase_add_test(tc, every_key_refuses_bad_values);
	tcase_add_test(tc, names_and_the_scenario);
	tcase_add_test(tc, describe_and_json);
	tcase_add_test(tc, list_has_a_row_per_key);
	suite_add_tcase(s, tc);
	return s;
}
