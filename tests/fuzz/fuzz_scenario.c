/* fuzz_scenario: libFuzzer harness for the scenario parser and validation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	cJSON *root = cJSON_Parse(text);
	free(text);
	if (!root)
		return 0;
	struct scenario s;
	char err[1024];
	/* --set on the way in, as the command line does. */
	cfg_apply_set(root, "name=fuzz", err, sizeof err);
	if (cfg_scenario_load(&s, root, NULL, err, sizeof err) == 0) {
		sim_validate(&s, err, sizeof err);
		cfg_scenario_free(&s);
	}
	cJSON_Delete(root);
	return 0;
}
