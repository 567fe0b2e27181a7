# The two commands of rooflab. Both install what is missing, configure and build in Release.
#   make test    the whole test suite (GPU tests skip, saying why, on machines without a GPU)
#   make bench   rooflab report: every ladder measured, into $(REPORT_DIR)
REPORT_DIR ?= rooflab-report
JOBS ?= $(shell nproc)

.PHONY: test bench build deps clean

test: build
	ctest --preset release -j $(JOBS)

bench: build
	build/release/rooflab report --out $(REPORT_DIR)

build: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)

deps:
	scripts/install-deps.sh

clean:
	rm -rf build
