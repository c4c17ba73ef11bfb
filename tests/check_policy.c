/* check_policy: exact routing decisions on hand-built views. */
#include <check.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "policies/policy.h"
#include "sim/request.h"
#include "sim/rng.h"
#include "tests/suites.h"

static void *make(const char *name, const char *params_json, struct pol_env *env,
		  const struct pol_ops **ops)
{
	char err[512] = "";
	cJSON *params = params_json ? cJSON_Parse(params_json) : NULL;
	*ops = pol_find(name);
	ck_assert_ptr_nonnull(*ops);
	void *st = (*ops)->create(params, "router.params", env, err, sizeof err);
	cJSON_Delete(params);
	ck_assert_msg(st != NULL, "%s", err);
	return st;
}

/* Routes a request of session sid and, if routed, dispatches it and adds 1
 * to the chosen node's load, as the reference case prescribes. */
static int route_one(const struct pol_ops *ops, void *st, struct pol_node_view *nodes, uint32_t n,
		     uint64_t sid, struct pol_decision *d)
{
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = sid;
	struct pol_view v = {n, nodes, 0};
	ops->route(st, &v, &r, d);
	if (d->action != POL_ROUTE)
		return -1;
	if (ops->on_dispatch)
		ops->on_dispatch(st, &r, d->node);
	nodes[d->node].outstanding++;
	return d->node;
}

START_TEST(session_affinity_reference_case)
{
	struct pol_env env = {2, 16, NULL};
	const struct pol_ops *ops;
	void *st = make("session_affinity", "{\"threshold\": 10}", &env, &ops);
	/* worker_1 = node 0 with load 9, worker_2 = node 1 with load 2. */
	struct pol_node_view nodes[2] = {{.outstanding = 9, .up = 1}, {.outstanding = 2, .up = 1}};
	uint64_t abc = 0xabc, def = 0xdef, ghi = 0x6b1;
	struct pol_decision d;
	/* Session abc is already on worker_1 (counted in its load of 9). */
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = abc;
	ops->on_dispatch(st, &r, 0);

	ck_assert_int_eq(route_one(ops, st, nodes, 2, abc, &d), 0); /* stays: 9 < 10 */
	ck_assert_uint_eq(nodes[0].outstanding, 10);
	ck_assert_int_eq(route_one(ops, st, nodes, 2, def, &d), 1); /* new: least loaded */
	ck_assert_uint_eq(nodes[1].outstanding, 3);
	ck_assert_int_eq(route_one(ops, st, nodes, 2, ghi, &d), 1);
	ck_assert_uint_eq(nodes[1].outstanding, 4);
	/* abc's node is now at the threshold: abc moves to worker_2 and stays. */
	ck_assert_int_eq(route_one(ops, st, nodes, 2, abc, &d), 1);
	nodes[0].outstanding = 0;
	ck_assert_int_eq(route_one(ops, st, nodes, 2, abc, &d), 1);
	/* Nobody under threshold: shed with reason "capacity". */
	nodes[0].outstanding = 10;
	nodes[1].outstanding = 12;
	ck_assert_int_eq(route_one(ops, st, nodes, 2, 0x123, &d), -1);
	ck_assert_int_eq(d.action, POL_SHED);
	ck_assert_str_eq(d.reason, "capacity");
	ops->destroy(st);
}
END_TEST

START_TEST(session_affinity_ties_and_forgetting)
{
	struct pol_env env = {3, 16, NULL};
	const struct pol_ops *ops;
	void *st = make("session_affinity", "{\"threshold\": 5, \"when_full\": \"least_loaded\"}",
			&env, &ops);
	struct pol_node_view nodes[3] = {{.outstanding = 3, .up = 1},
					 {.outstanding = 1, .up = 1},
					 {.outstanding = 1, .up = 1}};
	struct pol_decision d;
	ck_assert_int_eq(route_one(ops, st, nodes, 3, 7, &d), 1); /* tie 1/1: lowest id */
	nodes[0].outstanding = nodes[1].outstanding = nodes[2].outstanding = 9;
	ck_assert_int_eq(route_one(ops, st, nodes, 3, 8, &d), 0); /* all full: least loaded */
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = 7;
	ops->on_complete(st, &r, 1, 1); /* session over: its mapping goes */
	nodes[0].outstanding = 0;
	nodes[1].outstanding = 2;
	ck_assert_int_eq(route_one(ops, st, nodes, 3, 7, &d), 0);
	ops->destroy(st);
}
END_TEST

START_TEST(round_robin_and_least_loaded)
{
	struct pol_env env = {3, 16, NULL};
	const struct pol_ops *ops;
	void *st = make("round_robin", NULL, &env, &ops);
	struct pol_node_view nodes[3] = {{.up = 1}, {.up = 0}, {.up = 1}};
	struct pol_decision d;
	int seq[4];
	for (int i = 0; i < 4; i++)
		seq[i] = route_one(ops, st, nodes, 3, (uint64_t)i + 1, &d);
	ck_assert_int_eq(seq[0], 0);
	ck_assert_int_eq(seq[1], 2); /* node 1 is down: skipped */
	ck_assert_int_eq(seq[2], 0);
	ck_assert_int_eq(seq[3], 2);
	ops->destroy(st);

	st = make("least_loaded", "{\"metric\": \"queued_tokens\"}", &env, &ops);
	struct pol_node_view ll[3] = {{.queued_tokens = 500, .outstanding = 1, .up = 1},
				      {.queued_tokens = 100, .outstanding = 9, .up = 1},
				      {.queued_tokens = 100, .outstanding = 0, .up = 1}};
	ck_assert_int_eq(route_one(ops, st, ll, 3, 1, &d), 1);
	ops->destroy(st);
	st = make("least_loaded", NULL, &env, &ops);
	ck_assert_int_eq(route_one(ops, st, ll, 3, 1, &d), 2);
	ops->destroy(st);
}
END_TEST

START_TEST(random_is_uniform)
{
	gsl_rng *r = rng_stream(42, 7);
	struct pol_env env = {4, 16, r};
	const struct pol_ops *ops;
	void *st = make("random", NULL, &env, &ops);
	struct pol_node_view nodes[4] = {{.up = 1}, {.up = 1}, {.up = 1}, {.up = 1}};
	int count[4] = {0};
	struct pol_decision d;
	for (int i = 0; i < 40000; i++)
		count[route_one(ops, st, nodes, 4, 1, &d)]++;
	for (int i = 0; i < 4; i++) /* 10,000 expected, sd 87 */
		ck_assert_int_lt(abs(count[i] - 10000), 400);
	ops->destroy(st);
	gsl_rng_free(r);
}
END_TEST

START_TEST(prefix_affinity_keys_on_first_tokens)
{
	struct pol_env env = {4, 16, NULL};
	const struct pol_ops *ops;
	void *st = make("prefix_affinity", "{\"prefix_tokens\": 32, \"threshold\": 10}", &env,
			&ops);
	struct pol_node_view nodes[4] = {{.outstanding = 3, .up = 1},
					 {.outstanding = 0, .up = 1},
					 {.outstanding = 1, .up = 1},
					 {.outstanding = 2, .up = 1}};
	uint64_t h1[4] = {11, 22, 33, 44}, h2[4] = {11, 22, 55, 66}, h3[4] = {11, 99, 33, 44};
	struct request r;
	memset(&r, 0, sizeof r);
	r.prompt_tokens = 64;
	r.n_hashes = 4;
	struct pol_view v = {4, nodes, 0};
	struct pol_decision d;
	r.session = 1;
	r.hashes = h1;
	ops->route(st, &v, &r, &d);
	ck_assert_int_eq(d.node, 1);
	ops->on_dispatch(st, &r, d.node);
	nodes[1].outstanding = 5;
	/* Another session sharing the first 32 tokens follows it. */
	r.session = 2;
	r.hashes = h2;
	ops->route(st, &v, &r, &d);
	ck_assert_int_eq(d.node, 1);
	/* One that differs in block 1 does not. */
	r.session = 3;
	r.hashes = h3;
	ops->route(st, &v, &r, &d);
	ck_assert_int_eq(d.node, 2);
	ops->destroy(st);
}
END_TEST

START_TEST(bad_params_name_the_path)
{
	struct pol_env env = {2, 16, NULL};
	char err[512] = "";
	cJSON *p = cJSON_Parse("{\"threshold\": 0}");
	ck_assert_ptr_null(pol_find("session_affinity")->create(p, "router.params", &env, err,
								  sizeof err));
	ck_assert_msg(strstr(err, "router.params.threshold") != NULL, "%s", err);
	cJSON_Delete(p);
	p = cJSON_Parse("{\"treshold\": 5}");
	ck_assert_ptr_null(pol_find("session_affinity")->create(p, "router.params", &env, err,
								  sizeof err));
	ck_assert_msg(strstr(err, "router.params.treshold: unknown key") != NULL, "%s", err);
	cJSON_Delete(p);
	ck_assert_ptr_null(pol_find("no_such_policy"));
}
END_TEST

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, session_affinity_reference_case);
	tcase_add_test(tc, session_affinity_ties_and_forgetting);
	tcase_add_test(tc, round_robin_and_least_loaded);
	tcase_add_test(tc, random_is_uniform);
	tcase_add_test(tc, prefix_affinity_keys_on_first_tokens);
	tcase_add_test(tc, bad_params_name_the_path);
	suite_add_tcase(s, tc);
	return s;
}
