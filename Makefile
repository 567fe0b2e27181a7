# The commands of rooflab. Each installs what is missing, configures and builds in Release.
#   make test    the whole test suite, the library built for every GPU from sm_75 to sm_120, the
#                Python package's pytest suite included (against the module this build makes);
#                tests that skipped (GPU tests on a machine without a GPU) are summed up at the
#                end, one line per reason
#   make bench   rooflab report --quick on this machine's GPU (built for it alone): every ladder
#                at smaller sizes, with charts, into $(REPORT_DIR)
#   make report  rooflab report: every ladder at its full report sizes, into $(REPORT_DIR)
REPORT_DIR ?= rooflab-report
JOBS ?= $(shell nproc)
TEST_REPORT = $(CURDIR)/build/release/test-results.xml

.PHONY: test bench report build build-native deps gpu clean

# ctest's own exit status is make's: skipped tests pass, a failed one fails.
test: build
	rm -f $(TEST_REPORT)
	ctest --preset release -j $(JOBS) --output-junit $(TEST_REPORT); status=$$?; \
	scripts/test-skips.sh $(TEST_REPORT); exit $$status

bench: build-native
	build/native/rooflab report --quick --out $(REPORT_DIR)

report: build-native
	build/native/rooflab report --out $(REPORT_DIR)

build: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)

# The benchmarks need a GPU: the build is for that GPU only, several times faster to compile.
build-native: gpu deps
	cmake --preset native
	cmake --build --preset native -j $(JOBS)

deps:
	scripts/install-deps.sh

# Says so in one line where there is no GPU to build for and measure on (make test needs none).
gpu:
	@nvidia-smi -L >/dev/null 2>&1 || { echo "make: no NVIDIA GPU found (nvidia-smi lists none); make bench and make report need one, make test does not" >&2; exit 1; }

clean:
	rm -rf build
