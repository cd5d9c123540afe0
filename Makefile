# The README's two commands: `make test` and `make bench`. Each installs what is missing
# (Debian packages, as root), configures, builds incrementally and runs.
BUILD     ?= build
JOBS      ?= $(shell nproc)
CMAKE_ARGS ?=
QUICK     ?=
WERROR    ?= OFF

configure = cmake -S . -B $(1) -G Ninja -DLRPC_WERROR=$(WERROR) $(2) $(CMAKE_ARGS) >/dev/null

.PHONY: all deps build test test-asan test-tsan bench fuzz clean

all: build

deps:
	@bash cmake/install-deps.sh

build: deps
	@$(call configure,$(BUILD),-DLRPC_BUILD_TESTS=ON)
	cmake --build $(BUILD) -j $(JOBS)

# Every test, in the normal build.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang so
# that the libFuzzer targets build too and run for a fixed number of iterations.
test-asan: deps
	@$(call configure,build-asan,-DLRPC_BUILD_TESTS=ON -DLRPC_BUILD_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	  -DLRPC_SANITIZE=address$(comma)undefined)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) --timeout 600

# The concurrency tests (ctest label "concurrency") under ThreadSanitizer.
test-tsan: deps
	@$(call configure,build-tsan,-DLRPC_BUILD_TESTS=ON \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DLRPC_SANITIZE=thread)
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -L concurrency --timeout 600

# The main benchmark table (QUICK=1 for a one-minute run).
bench:
	@bash cmake/install-deps.sh bench
	@$(call configure,$(BUILD),-DLRPC_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release)
	cmake --build $(BUILD) -j $(JOBS)
	bash bench/run.sh $(BUILD) $(if $(QUICK),--quick,)

clean:
	rm -rf build build-asan build-tsan

comma := ,
