/* fuzz_trace: libFuzzer harness for a trace reader and trace stats
 * (FUZZ_FORMAT: TRACE_MOONCAKE, TRACE_AZURE or TRACE_KVSIM). With
 * FUZZ_NO_STATS the reader alone: Azure lines name up to 10^8 tokens, whose
 * 512-token blocks make trace stats (covered by the other harnesses) slow. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workloads/trace.h"
#include "workloads/tracestats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("trace", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64], err[1024];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	for (int skip = 0; skip < 2; skip++) {
		struct trace_reader tr;
		struct trace_rec rec;
		memset(&rec, 0, sizeof rec);
		if (trace_open(&tr, path, FUZZ_FORMAT, skip, err, sizeof err) == 0) {
			while (trace_next(&tr, &rec, err, sizeof err) == 1)
				;
			trace_close(&tr);
		}
		trace_rec_free(&rec);
	}
#ifndef FUZZ_NO_STATS
	uint64_t caches[2] = {4, 64};
	struct trace_stats st;
	tstats_run(path, FUZZ_FORMAT, 1, caches, 2, &st, err, sizeof err);
#endif
	close(fd);
	return 0;
}
