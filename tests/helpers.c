/* helpers: scenario construction for the tests. */
#include "tests/helpers.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

void th_scenario(const char *json, const char *const *sets, struct scenario *s)
{
	char err[1024] = "";
	cJSON *root = cJSON_Parse(json);
	ck_assert_msg(root != NULL, "test scenario is not JSON: %s", json);
	for (; sets && *sets; sets++)
		ck_assert_msg(cfg_apply_set(root, *sets, err, sizeof err) == 0, "%s", err);
	int rc = cfg_scenario_load(s, root, NULL, err, sizeof err);
	cJSON_Delete(root);
	ck_assert_msg(rc == 0, "scenario rejected: %s", err);
}

int th_scenario_err(const char *json, struct scenario *s, char *err, size_t errlen)
{
	cJSON *root = cJSON_Parse(json);
	if (!root)
		return -2;
	int rc = cfg_scenario_load(s, root, NULL, err, errlen);
	cJSON_Delete(root);
	return rc;
}

char *th_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

char *th_summary_without_perf(const char *path)
{
	char *text = th_slurp(path);
	cJSON *j = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(j);
	cJSON_DeleteItemFromObject(j, "perf");
	char *out = cJSON_Print(j);
	cJSON_Delete(j);
	return out;
}
