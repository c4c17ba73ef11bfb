/* fuzz_set: libFuzzer harness for the command line's --set PATH=VALUE and --vary PATH=v1,v2 parsers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "experiments/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each line of the input is one argument, given both to --set (applied in
 * turn to one scenario tree) and to --vary (axes of one sweep); then the
 * tree is written out and the sweep's points named, as a run does. Memory
 * errors and undefined behaviour are the findings (ASan, UBSan). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	cJSON *root = cJSON_CreateObject();
	struct swp sw;
	memset(&sw, 0, sizeof sw);
	char err[1024], *save = NULL;
	if (!root) {
		free(text);
		return 0;
	}
	for (char *arg = strtok_r(text, "\n", &save); arg; arg = strtok_r(NULL, "\n", &save)) {
		cfg_apply_set(root, arg, err, sizeof err);
		swp_add_axis(&sw, arg, err, sizeof err);
	}
	free(cJSON_PrintUnformatted(root));
	char canon[4096];
	for (long i = 0; i < sw.n_points && i < 64; i++)
		swp_point_canon(&sw, i, canon, sizeof canon);
	swp_free(&sw);
	cJSON_Delete(root);
	free(text);
	return 0;
}
