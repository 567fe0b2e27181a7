// The add op: problem, model, workspace and the CPU rung. GPU rungs are in ladder.cu.
#include <cmath>
#include <limits>

#include "add/add_workspace.hpp"
#include "bench/random.hpp"
#include "cpu/add.hpp"
#include "cpu/compare.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

AddWorkspace::AddWorkspace(std::int64_t n) : n(n), a(n), b(n), out(n) {}

void AddWorkspace::refill(std::uint64_t seed) {
  seed_a_ = 2 * seed;
  seed_b_ = 2 * seed + 1;
  fill_random(a.data(), n, seed_a_, nullptr);
  fill_random(b.data(), n, seed_b_, nullptr);
  out.fill_bytes(0xFF);  // NaN: an element no thread writes fails the check
  host_a.clear();
  host_b.clear();
  host_out.clear();
}

void AddWorkspace::prepare_host() {
  if (!host_a.empty()) return;
  host_a = a.download();
  host_b = b.download();
  host_out.assign(n, std::numeric_limits<float>::quiet_NaN());
}

Check AddWorkspace::check(Where where) {
  const std::vector<float> result = where == Where::gpu ? out.download() : host_out;
  if (std::int64_t(result.size()) != n) return Check{false, 0, 0, "no output"};
  // a + b rounded once to float is within half an ulp of the exact sum (2^-24 relative).
  const double tolerance = std::ldexp(1.0, -24);
  const auto comparison = cpu::compare_relative(
      result.data(), n,
      [&](std::int64_t i) {
        return double(random_float(seed_a_, i)) + double(random_float(seed_b_, i));
      },
      std::ldexp(1.0, -100));
  return Check{comparison.within(tolerance), comparison.max_error, tolerance,
               comparison.describe()};
}

namespace {

ROOFLAB_OP(vector_add_op<AddWorkspace>(
    "add",
    "The limiting-factors lecture's vector add (it adds in place, x += y), out = "
    "a + b over n floats (12 bytes per element)",
    28, 24));

// Rung 0 — the CPU loop: one core streaming three arrays; rooflab's baseline (the lecture has
// none).
ROOFLAB_VARIANT(Variant{"add", 0, "cpu-loop", "one CPU core, one loop (the baseline)", Where::cpu,
                        false, no_limit, on<AddWorkspace>([](AddWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          cpu::add_serial(w.host_a.data(), w.host_b.data(), w.host_out.data(), w.n);
                        })});

// Rung 31 — every CPU core, rung 0's loop on a contiguous range each: the fair CPU baseline of a
// streaming op is the host's memory bandwidth, which one core does not reach. "vs CPU" is against
// the faster CPU rung of the run.
ROOFLAB_VARIANT(Variant{
    "add", 31, "cpu-threads", "every CPU core, rung 0's loop on a range each", Where::cpu, false,
    no_limit, on<AddWorkspace>([](AddWorkspace& w, cudaStream_t) {
      w.prepare_host();
      cpu::add_threads(w.host_a.data(), w.host_b.data(), w.host_out.data(), w.n);
    })});

}  // namespace
}  // namespace rooflab::bench
