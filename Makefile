# kvsim: build, run, test, benchmark. `make help` lists the targets.
CC      ?= cc
PKGS    := gsl libcjson yaml-0.1 check
# chromium: headless, for tests/browser.sh (report.html in a real browser) and make docs.
APT_PKGS := libgsl-dev libcjson-dev libyaml-dev check gnuplot-nox pkg-config parallel
VERSION := 0.1.0$(shell git rev-parse --short HEAD >/dev/null 2>&1 && echo "+g$$(git rev-parse --short HEAD)")
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
CFLAGS  ?= -O2 -g
B       ?= build
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(CFLAGS) $(WARN) -I. -I$(B) \
             $(shell pkg-config --cflags gsl libcjson yaml-0.1 2>/dev/null)
LIBS     = $(shell pkg-config --libs gsl libcjson yaml-0.1 2>/dev/null) -lm
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

LIB_SRC  := $(wildcard base/*.c) $(wildcard model/*.c) $(wildcard config/*.c) \
            $(wildcard sim/*.c) $(wildcard experiments/*.c) $(wildcard policies/*.c) \
            $(wildcard workloads/*.c) $(wildcard results/*.c)
LIB_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRC)) $(B)/obj/embedded.o
CLI_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(wildcard cli/*.c))
TEST_SRC := $(wildcard tests/check_*.c) tests/helpers.c
TEST_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(TEST_SRC))
EMBED    := kv_embedded_gpus=model/catalog/gpus.json kv_embedded_models=model/catalog/models.json \
            kv_embedded_links=model/catalog/links.json kv_embedded_servers=model/catalog/servers.json \
            kv_embedded_default_scenario=workloads/scenarios/default.json \
            kv_plot_common=plot/common.gp kv_plot_latency_cdf=plot/latency_cdf.gp \
            kv_plot_node_timeline=plot/node_timeline.gp kv_plot_tokens=plot/tokens.gp \
            kv_plot_counts=plot/counts.gp kv_plot_latency_load=plot/latency_load.gp \
            kv_plot_ttft_split=plot/ttft_split.gp kv_plot_pools=plot/pools.gp \
            kv_plot_scaling=plot/scaling.gp kv_plot_cluster=plot/cluster.gp

.PHONY: all deps deps-test deps-fuzz run check test bench validate clean help regress rebaseline plot check-asan check-valgrind fuzz FORCE
all: $(B)/kvsim

help:
	@echo "make deps    install GSL, cJSON, Check, gnuplot, chromium (apt, as root) if missing"
	@echo "make         build build/kvsim"
	@echo "make run     compare the RUN_POLICIES ($(RUN_POLICIES)) on the default scenario: table, figures, report"
	@echo "make check   build and run every test"
	@echo "make bench   performance figures (the BENCHMARKS.md cases)"
	@echo "make validate  regenerate VALIDATION.md (accuracy vs measurements)"
	@echo "make docs    rewrite the documents' example outputs and docs/report.png from a real run"
	@echo "make regress re-run the scenarios and diff against results/baselines/"
	@echo "make rebaseline  rewrite results/baselines/ from a fresh run"
	@echo "make plot OUT=DIR  figures for a 'kvsim compare' output folder"
	@echo "make check-asan     the tests under ASan + UBSan"
	@echo "make check-valgrind the tests under valgrind"
	@echo "make fuzz FUZZ_SECONDS=N  libFuzzer on the scenario parser and trace readers"
	@echo "make clean   remove build/ and out/"

deps:
	@if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $(PKGS) && \
	    command -v gnuplot >/dev/null 2>&1 && command -v parallel >/dev/null 2>&1; then \
		echo "deps: gsl, libcjson, libyaml, check, gnuplot, parallel present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing $(APT_PKGS)"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(APT_PKGS); \
	else \
		echo "deps: missing packages; as root run:"; \
		echo "  apt-get update"; \
		echo "  apt-get install -y $(APT_PKGS)"; \
		exit 1; \
	fi

# The tests also render a report in a real browser (tests/browser.sh):
# Debian's chromium, installed here rather than by deps, which make run needs.
deps-test: deps
	@if command -v chromium >/dev/null 2>&1; then \
		echo "deps: chromium present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing chromium"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	else \
		echo "deps: chromium missing (the browser test needs it); as root run:"; \
		echo "  apt-get update"; \
		echo "  apt-get install -y chromium"; \
		exit 1; \
	fi

$(B)/tools/embed: experiments/tools/embed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 $(WARN) -o $@ $<

$(B)/embedded.c: $(B)/tools/embed model/catalog/gpus.json model/catalog/models.json \
                  model/catalog/links.json model/catalog/servers.json \
                  workloads/scenarios/default.json $(wildcard plot/*.gp)
	$(B)/tools/embed $@ $(EMBED)

$(B)/obj/embedded.o: $(B)/embedded.c
	@mkdir -p $(@D)
	$(CC) -std=c11 $(CFLAGS) -c -o $@ $<

# Rewritten only when the version changes, so it rebuilds only what uses it.
$(B)/version.h: FORCE
	@mkdir -p $(@D)
	@echo '#define KVSIM_VERSION "$(VERSION)"' >$@.new
	@cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@

$(B)/obj/%.o: %.c | $(B)/version.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/kvsim: $(CLI_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/check_kvsim: $(TEST_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

$(B)/validate: $(B)/obj/experiments/tools/validate.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/bench: $(B)/obj/experiments/tools/bench.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

RUN_POLICIES := round_robin,least_loaded,session_affinity,prefix_affinity,kv_cost
# The loads (sessions/s) make run finds each policy's capacity over, besides the
# scenario's own 45: round robin leaves its steady state between 35 and 45, the
# affinity policies above 55 (docs/choosing-a-router.md); two more points keep
# make run near 15 s on two cores.
RUN_RATES := 35,55
run: deps
	@$(MAKE) --no-print-directory build/kvsim
	build/kvsim compare --policies $(RUN_POLICIES) --rates $(RUN_RATES) -j 2 --out out/run --report

# The whole suite: unit tests, end-to-end scenarios, CLI checks.
check: deps-test
	@$(MAKE) --no-print-directory test

test: $(B)/kvsim $(B)/check_kvsim $(B)/bench
	$(B)/check_kvsim
	KVSIM=$(B)/kvsim sh tests/cli.sh
	KVSIM=$(B)/kvsim sh tests/bad_inputs.sh
	BENCH=$(B)/bench sh tests/bench_cli.sh
	KVSIM=$(B)/kvsim sh tests/docs.sh
	KVSIM=$(B)/kvsim sh tests/browser.sh
	sh tests/layout.sh

# The documents' example outputs (blocks marked <!-- example: ARGS -->) rewritten
# from what build/kvsim prints; `make test` fails when they drift. docs/report.png is
# the first 3000 px of `make run`'s report.html at 1280 px wide in headless Chromium
# (out/docs holds the run; the height keeps the verdict, the table and the first
# figure, the TTFT tail, while the PNG stays under 700 KB).
.PHONY: docs
docs: $(B)/kvsim
	KVSIM=$(B)/kvsim sh tests/docs.sh --write
	$(B)/kvsim compare --policies $(RUN_POLICIES) --rates $(RUN_RATES) -j 2 --out out/docs --report >/dev/null
	timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	  --window-size=1280,3000 --virtual-time-budget=2000 \
	  --screenshot="$$PWD/docs/report.png" "file://$$PWD/out/docs/report.html" 2>/dev/null

bench: deps
	@$(MAKE) --no-print-directory build/bench
	build/bench

# VALIDATION.md: predictions vs measurements, published figures and theory
# (reads data/profiles and data/traces; about a minute).
validate: deps
	@$(MAKE) --no-print-directory build/validate
	build/validate

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer (leaks too),
# built apart in build/asan. CI runs it.
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check-asan: deps-test
	@$(MAKE) --no-print-directory B=build/asan CFLAGS="$(SAN_FLAGS)" test

# The Check suites and the bad-input catalogue under valgrind (memcheck,
# leaks): slow, not in CI (the CLI checks run under ASan there).
check-valgrind: deps
	@$(MAKE) --no-print-directory build/kvsim build/check_kvsim
	CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect build/check_kvsim
	KVSIM=tests/valgrind-kvsim.sh sh tests/bad_inputs.sh

# libFuzzer harnesses (clang) for the scenario parser, each trace reader and
# the --set/--vary argument parsers,
# FUZZ_SECONDS each, from the seed corpus in tests/fuzz/corpus (new inputs go
# to build/fuzz/corpus). A crash leaves its input in build/fuzz/.
FUZZ_SECONDS ?= 30
FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZERS := scenario mooncake azure kvsim set
deps-fuzz:
	@if echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' | \
	    clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then \
		echo "deps-fuzz: clang with libFuzzer present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y clang libclang-rt-14-dev; \
	else \
		echo "deps-fuzz: as root run: apt-get update && apt-get install -y clang libclang-rt-14-dev"; \
		exit 1; \
	fi

fuzz: deps deps-fuzz
	@$(MAKE) --no-print-directory B=build/fuzz CC=clang CFLAGS="$(FUZZ_FLAGS)" fuzzers
	@for f in $(FUZZERS); do \
		mkdir -p build/fuzz/corpus/$$f; \
		echo "fuzz: $$f for $(FUZZ_SECONDS) s"; \
		(cd build/fuzz && ./fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		   -print_final_stats=1 corpus/$$f ../../tests/fuzz/corpus/$$f 2>&1 | \
		   grep -E "stat::number_of_executed_units|Done|ERROR|SUMMARY|crash-|leak-|timeout-" ) ; \
		found=$$(find build/fuzz -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \)); \
		if [ -n "$$found" ]; then echo "fuzz: FINDING: $$found"; exit 1; fi; \
	done; echo "fuzz: no findings"

fuzzers: $(B)/fuzz_scenario $(B)/fuzz_mooncake $(B)/fuzz_azure $(B)/fuzz_kvsim $(B)/fuzz_set
$(B)/fuzz_scenario: tests/fuzz/fuzz_scenario.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)
$(B)/fuzz_mooncake: tests/fuzz/fuzz_trace.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -DFUZZ_FORMAT=TRACE_MOONCAKE -fsanitize=fuzzer -o $@ $^ $(LIBS)
$(B)/fuzz_azure: tests/fuzz/fuzz_trace.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -DFUZZ_FORMAT=TRACE_AZURE -DFUZZ_NO_STATS -fsanitize=fuzzer -o $@ $^ $(LIBS)
$(B)/fuzz_kvsim: tests/fuzz/fuzz_trace.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -DFUZZ_FORMAT=TRACE_KVSIM -fsanitize=fuzzer -o $@ $^ $(LIBS)
$(B)/fuzz_set: tests/fuzz/fuzz_set.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

# CI regression benchmarks: every scenario under every policy against the
# committed results/baselines/ (zero tolerance); rebaseline rewrites them.
regress: deps
	@$(MAKE) --no-print-directory build/kvsim
	KVSIM=build/kvsim sh tests/regress.sh

# Figures for a `kvsim compare` output folder: make plot OUT=out/run
plot: deps
	@$(MAKE) --no-print-directory build/kvsim
	build/kvsim plot $(if $(OUT),$(OUT),out/run)

rebaseline: deps
	@$(MAKE) --no-print-directory build/kvsim
	KVSIM=build/kvsim sh tests/regress.sh --rebaseline

clean:
	rm -rf build out

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
