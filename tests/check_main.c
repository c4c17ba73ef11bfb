/* check_main: runs every suite; exit status 0 only if all pass. */
#include <stdlib.h>

#include "tests/suites.h"

int main(void)
{
	SRunner *sr = srunner_create(evq_suite());
	srunner_add_suite(sr, kv_suite());
	srunner_add_suite(sr, cost_suite());
	srunner_add_suite(sr, policy_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, workload_suite());
	srunner_add_suite(sr, sim_suite());
	srunner_add_suite(sr, physics_suite());
	srunner_add_suite(sr, fidelity_suite());
	srunner_add_suite(sr, trace_suite());
	srunner_add_suite(sr, import_suite());
	srunner_add_suite(sr, sweep_suite());
	srunner_add_suite(sr, metric_table_suite());
	srunner_add_suite(sr, links_suite());
	srunner_add_suite(sr, models_suite());
	srunner_add_suite(sr, router_suite());
	srunner_add_suite(sr, pd_suite());
	srunner_add_suite(sr, scale_suite());
	srunner_add_suite(sr, energy_suite());
	srunner_add_suite(sr, mech_suite());
	srunner_add_suite(sr, benchmarks_suite());
	srunner_add_suite(sr, latency_fig_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
