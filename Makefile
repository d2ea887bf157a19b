# SPDX-License-Identifier: BSD-3-Clause
# Monel: the two commands are `make run` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all build run test test-gpu test-deps format format-check clean sanitize tsan \
	install uninstall deb wheel

all: build

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: all_reduce_perf over every local GPU, or over 4 CPU ranks without one. On a first
# build with the GPU engine, the CPU engine's job runs first, from a CPU-only build of a minute
# (tools/run/first-result), before the GPU kernels build.
run:
	@JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" tools/run/first-result $(BUILD)
	@$(MAKE) --no-print-directory build
	@tools/run/main-job $(BUILD)

# Everything that can run on this machine.
test: test-deps build
	@tests/run-all $(BUILD)

test-gpu: build
	@tests/gpu/run $(BUILD)

test-deps:
	@tests/install-deps

# Installs into $(DESTDIR)$(PREFIX) by the CMake install rules (cmake/MonelInstall.cmake: lib/,
# include/, bin/, libexec/monel/, lib/pkgconfig/, lib/cmake/Monel/, share/doc/monel/).
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# Removes what the last `make install` from $(BUILD) installed, then the directories it created.
uninstall:
	@cmake -DBUILD="$(abspath $(BUILD))" -P cmake/MonelUninstall.cmake

# Debian packages libmonel2, libmonel-dev, monel-tools in $(BUILD)/packages (tools/package/deb).
deb:
	@tools/package/deb $(BUILD)

# The Python wheel (the monel package with the library inside) in $(BUILD)/dist.
wheel:
	@tools/package/wheel $(BUILD)

sanitize:
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMONEL_SANITIZE=ON -DMONEL_CUDA=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)

tsan:
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DMONEL_TSAN=ON -DMONEL_CUDA=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS)

format:
	@git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

format-check:
	@git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) $(BUILD)-first build-asan build-tsan
