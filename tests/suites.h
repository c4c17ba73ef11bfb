/* suites: every Check suite of the test runner. */
#ifndef KVSIM_TEST_SUITES_H
#define KVSIM_TEST_SUITES_H

#include <check.h>

Suite *evq_suite(void);
Suite *kv_suite(void);
Suite *cost_suite(void);
Suite *policy_suite(void);
Suite *config_suite(void);
Suite *workload_suite(void);
Suite *sim_suite(void);
Suite *trace_suite(void);
Suite *import_suite(void);
Suite *sweep_suite(void);
Suite *physics_suite(void);
Suite *fidelity_suite(void);
Suite *metric_table_suite(void);
Suite *links_suite(void);
Suite *models_suite(void);
Suite *router_suite(void);
Suite *pd_suite(void);
Suite *scale_suite(void);
Suite *energy_suite(void);
Suite *mech_suite(void);
Suite *benchmarks_suite(void);
Suite *latency_fig_suite(void);

#endif
