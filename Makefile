# The two commands of rooflab. Both install what is missing, configure and build in Release.
#   make test    the whole test suite; tests that skipped (GPU tests on a machine without a GPU)
#                are summed up at the end, one line per reason
#   make bench   rooflab report: every ladder measured, into $(REPORT_DIR)
REPORT_DIR ?= rooflab-report
JOBS ?= $(shell nproc)
TEST_REPORT = $(CURDIR)/build/release/test-results.xml

.PHONY: test bench build deps clean

# ctest's own exit status is make's: skipped tests pass, a failed one fails.
test: build
	rm -f $(TEST_REPORT)
	ctest --preset release -j $(JOBS) --output-junit $(TEST_REPORT); status=$$?; \
	scripts/test-skips.sh $(TEST_REPORT); exit $$status

bench: build
	build/release/rooflab report --out $(REPORT_DIR)

build: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)

deps:
	scripts/install-deps.sh

clean:
	rm -rf build
