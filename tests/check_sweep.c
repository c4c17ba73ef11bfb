/* check_sweep: sweep points, their order and their seeds. */
#include <check.h>
#include <string.h>

#include "sim/hmap.h"
#include "sim/sweep.h"
#include "tests/suites.h"

START_TEST(points_and_seeds)
{
	struct swp a, b;
	char err[256], ca[512], cb[512];
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	ck_assert_int_eq(swp_add_axis(&a, "cluster.nodes=2,4,8", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&a, "workload.sessions_per_s=1,2", err, sizeof err), 0);
	ck_assert_int_eq(a.n_points, 6);
	/* The last axis changes fastest. */
	swp_point_canon(&a, 0, ca, sizeof ca);
	ck_assert_str_eq(ca, "cluster.nodes=2;workload.sessions_per_s=1");
	swp_point_canon(&a, 3, ca, sizeof ca);
	ck_assert_str_eq(ca, "cluster.nodes=4;workload.sessions_per_s=2");
	/* A point's seed depends on the base seed and the point only: the same
	 * point in a smaller sweep gets the same seed. */
	ck_assert_int_eq(swp_add_axis(&b, "cluster.nodes=4", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&b, "workload.sessions_per_s=2", err, sizeof err), 0);
	swp_point_canon(&b, 0, cb, sizeof cb);
	ck_assert_str_eq(ca, cb);
	ck_assert_uint_eq(swp_point_seed(7, ca), swp_point_seed(7, cb));
	ck_assert_uint_ne(swp_point_seed(7, ca), swp_point_seed(8, ca));
	ck_assert_uint_lt(swp_point_seed(7, ca), 1ULL << 53);
	/* Distinct over a larger grid. */
	struct swp c;
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(swp_add_axis(&c, "x=0,1,2,3,4,5,6,7,8,9", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&c, "y=0,1,2,3,4,5,6,7,8,9", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&c, "z=a,b,c,d,e,f,g,h,i,j", err, sizeof err), 0);
	struct hmap seen;
	hmap_init(&seen);
	for (long i = 0; i < c.n_points; i++) {
		swp_point_canon(&c, i, ca, sizeof ca);
		ck_assert_int_eq(hmap_put(&seen, swp_point_seed(1, ca) + 1, 1), 1);
	}
	ck_assert_uint_eq(seen.count, 1000);
	hmap_free(&seen);
	ck_assert_int_eq(swp_add_axis(&c, "x=5", err, sizeof err), -1); /* varied twice */
	ck_assert_int_eq(swp_add_axis(&c, "nothing", err, sizeof err), -1);
	swp_free(&a);
	swp_free(&b);
	swp_free(&c);
}
END_TEST

Suite *sweep_suite(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, points_and_seeds);
	suite_add_tcase(s, tc);
	return s;
}
