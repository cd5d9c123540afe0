# The README's two commands: `make test` and `make bench`. Each installs what is missing
# (Debian packages, as root), configures, builds incrementally and runs.
BUILD     ?= build
JOBS      ?= $(shell nproc)
CMAKE_ARGS ?=
QUICK     ?=
WERROR    ?= OFF

configure = cmake -S . -B $(1) -G Ninja -DLRPC_WERROR=$(WERROR) $(2) $(CMAKE_ARGS) >/dev/null
# The test builds keep line tables only (-g1): backtraces and sanitizer reports still name the
# file and line, and a fresh build of the suite takes about a third less time than with full -g,
# which is most of CI's budget on two cores. For a debugger's view of variables, configure a
# build directory of your own (cmake -DCMAKE_BUILD_TYPE=Debug).
lines_only = -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_DEBUG="-g1"

# clang takes its memory from malloc: with transparent huge pages for that heap, a sanitizer
# build compiles about a sixth faster on CI's kind of machine (fewer page faults). A glibc
# tunable for the compiler processes only; nothing changes where huge pages are off.
compilers_heap = GLIBC_TUNABLES=glibc.malloc.hugetlb=1

.PHONY: all deps build test test-asan test-tsan bench fuzz clean

all: build

deps:
	@bash cmake/install-deps.sh

build: deps
	@$(call configure,$(BUILD),-DLRPC_BUILD_TESTS=ON $(lines_only))
	$(compilers_heap) cmake --build $(BUILD) -j $(JOBS)

# Every test, in the normal build.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang so
# that the libFuzzer targets build too and run for a fixed number of iterations.
test-asan: deps
	@$(call configure,build-asan,-DLRPC_BUILD_TESTS=ON -DLRPC_BUILD_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	  -DLRPC_SANITIZE=address$(comma)undefined $(lines_only))
	$(compilers_heap) cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) --timeout 600

# The concurrency tests (ctest label "concurrency") under ThreadSanitizer, $(JOBS) at a time like
# the other suites: they must pass with the cores oversubscribed anyway, and one at a time
# takes about twice as long.
test-tsan: deps
	@$(call configure,build-tsan,-DLRPC_BUILD_TESTS=ON \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DLRPC_SANITIZE=thread $(lines_only))
	$(compilers_heap) cmake --build build-tsan -j $(JOBS) --target lrpc_concurrency_tests
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -L concurrency --timeout 600

# The main benchmark table (QUICK=1 for a one-minute run).
bench:
	@bash cmake/install-deps.sh bench
	@$(call configure,$(BUILD),-DLRPC_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release)
	cmake --build $(BUILD) -j $(JOBS)
	bash bench/run.sh $(BUILD) $(if $(QUICK),--quick,)

# Every libFuzzer target (clang, ASan+UBSan) run for FUZZ_SECONDS each; new inputs go to
# build-fuzz/corpus/<target>, never into the checked-in seeds. A crash stops the run and
# leaves its input (crash-*) in the current directory.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = tests/fuzz/dispatch_fuzz:tests/fuzz/corpus/dispatch \
               tests/fuzz/packet_fuzz:tests/fuzz/corpus/packet \
               tests/fuzz/segment_fuzz:tests/fuzz/corpus/segment \
               tests/fuzz/handshake_fuzz:tests/fuzz/corpus/handshake \
               tests/fuzz/nested_fuzz:tests/fuzz/corpus/nested \
               tests/fuzz/caps_fuzz:tests/fuzz/corpus/caps \
               tests/fuzz/secure_endpoint_fuzz:tests/fuzz/corpus/secure_endpoint \
               tests/fuzz/secure_fuzz:
fuzz: deps
	@$(call configure,build-fuzz,-DLRPC_BUILD_TESTS=ON -DLRPC_BUILD_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DLRPC_SANITIZE=address$(comma)undefined)
	cmake --build build-fuzz -j $(JOBS) --target $(foreach t,$(FUZZ_TARGETS),$(notdir $(firstword $(subst :, ,$(t)))))
	@set -e; for t in $(FUZZ_TARGETS); do \
	  bin=build-fuzz/$${t%%:*}; seeds=$${t#*:}; scratch=build-fuzz/corpus/$$(basename $$bin); \
	  mkdir -p $$scratch; echo "fuzz: $$bin for $(FUZZ_SECONDS) s"; \
	  $$bin -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$scratch $$seeds; \
	done

clean:
	rm -rf build build-asan build-tsan

comma := ,
