// The transpose's CPU side: the CPU loop for every element size, the element-exact check, the
// lab's op, and transpose's argument checks (which fail before any GPU work).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/transpose.hpp"
#include "rooflab/error.hpp"
#include "rooflab/transpose.hpp"
#include "transpose/transpose_workspace.hpp"

namespace rooflab {
namespace {

std::vector<unsigned char> counting_bytes(std::size_t count) {
  std::vector<unsigned char> bytes(count);
  for (std::size_t b = 0; b < count; ++b) bytes[b] = static_cast<unsigned char>(b * 7 + b / 251);
  return bytes;
}

TEST(TransposeCpu, EveryElementSizeLandsEveryElementInPlace) {
  for (const std::size_t size : {1, 2, 4, 8, 16}) {
    for (const auto& [rows, cols] :
         {std::pair{7, 13}, std::pair{1, 5}, std::pair{5, 1}, std::pair{16, 16}}) {
      const auto in = counting_bytes(std::size_t(rows * cols) * size);
      std::vector<unsigned char> out(in.size(), 0xFF);
      cpu::transpose_serial(in.data(), rows, cols, size, out.data());
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
          for (std::size_t b = 0; b < size; ++b)
            ASSERT_EQ(out[(std::size_t(j) * rows + i) * size + b],
                      in[(std::size_t(i) * cols + j) * size + b])
                << size << "-byte, " << rows << " x " << cols << ", element (" << i << ", " << j
                << ")";
    }
  }
}

// The tiled baselines (one core and every core) write what the double loop writes, at shapes
// that end inside a tile and shapes with many bands of tile rows.
TEST(TransposeCpu, TiledBaselinesEqualTheDoubleLoop) {
  for (const std::size_t size : {1, 2, 4, 8, 16}) {
    for (const auto& [rows, cols] : {std::pair{7, 13}, std::pair{1, 500}, std::pair{500, 1},
                                     std::pair{33, 65}, std::pair{4099, 37}, std::pair{64, 4096}}) {
      const auto in = counting_bytes(std::size_t(rows * cols) * size);
      std::vector<unsigned char> expected(in.size(), 0xFF);
      cpu::transpose_serial(in.data(), rows, cols, size, expected.data());
      for (const bool every_core : {false, true}) {
        std::vector<unsigned char> out(in.size(), 0xFF);
        cpu::transpose_tiled(in.data(), rows, cols, size, out.data(), every_core);
        EXPECT_EQ(out, expected) << size << "-byte, " << rows << " x " << cols
                                 << (every_core ? ", every core" : ", one core");
      }
    }
  }
}

TEST(TransposeCpu, CheckFindsTheFirstMisplacedElement) {
  const std::int64_t rows = 300, cols = 500;
  const std::size_t size = 8;
  const auto in = counting_bytes(std::size_t(rows * cols) * size);
  std::vector<unsigned char> out(in.size());
  cpu::transpose_serial(in.data(), rows, cols, size, out.data());
  const auto input_byte = [&](std::int64_t b) { return in[std::size_t(b)]; };
  EXPECT_EQ(cpu::compare_transposed(out.data(), rows, cols, size, input_byte).count, 0);
  out[(777 * size) + 3] ^= 1;
  out[(140000 * size)] ^= 0x80;
  const auto mismatches = cpu::compare_transposed(out.data(), rows, cols, size, input_byte);
  EXPECT_EQ(mismatches.count, 2);
  EXPECT_EQ(mismatches.first, 777);
}

TEST(TransposeOp, ResolvesSeed000DefaultsAndNamesEveryElementType) {
  const bench::Op& op = bench::registry().op("transpose");
  const bench::Problem problem = op.resolve(bench::Problem{});
  EXPECT_EQ(problem.rows, 4096);
  EXPECT_EQ(problem.cols, 4096);
  EXPECT_EQ(op.describe(problem), "4096 x 4096, float");
  EXPECT_DOUBLE_EQ(op.model(problem).bytes, 2.0 * 4096 * 4096 * 4);
  for (const auto& [name, bytes] :
       {std::pair{"double", 8}, std::pair{"u8", 1}, std::pair{"uint16", 2}, std::pair{"float4", 16},
        std::pair{"f32", 4}}) {
    EXPECT_EQ(bench::transpose_element(name).bytes, std::size_t(bytes)) << name;
  }
  bench::Problem bad;
  bad.dtype = "int8";
  EXPECT_THROW(op.resolve(bad), Error);
  std::vector<std::string> names;
  for (const bench::Variant* variant : bench::registry().variants("transpose"))
    names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "cpu-loop", "naive", "shared-tile", "padded-tile", "block-rows",
                       "wide-access", "tile32-rows8", "tile32-col-order", "production",
                       "tile128x32-col-order", "cublas-geam", "cpu-tiled", "cpu-threads"}));
  std::vector<int> rungs;
  for (const bench::Variant* variant : bench::registry().variants("transpose"))
    rungs.push_back(variant->rung);
  EXPECT_EQ(rungs, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 30, 31}));
}

TEST(TransposeOp, CpuRungIsLimitedOddShapesSkipTheWideRungAndCandidatesTakeFloat) {
  const bench::Op& op = bench::registry().op("transpose");
  bench::Problem big;
  big.rows = big.cols = 16384;
  big = op.resolve(big);
  bench::Problem odd;
  odd.rows = 4097;
  odd.cols = 4099;
  odd = op.resolve(odd);
  for (const bench::Variant* variant : bench::registry().variants("transpose")) {
    if (variant->name == "cpu-loop") {
      EXPECT_FALSE(variant->limit(big).empty());
    } else if (variant->name == "wide-access") {
      EXPECT_FALSE(variant->limit(odd).empty());
    } else if (variant->name == "production") {
      EXPECT_TRUE(variant->limit(odd).empty());
    } else if (variant->name.find("tile128") == 0) {  // the float candidates
      EXPECT_TRUE(variant->limit(odd).empty()) << variant->name;
      bench::Problem odd_double = odd;
      odd_double.dtype = "double";
      EXPECT_FALSE(variant->limit(odd_double).empty()) << variant->name;
    }
  }
}

// transpose checks its arguments before it touches the GPU: these run without one.
TEST(TransposeBadInput, EveryBadArgumentThrowsNamingIt) {
  std::vector<float> storage(64);
  const float* in = storage.data();
  float* out = storage.data() + 32;
  const auto argument_of = [](auto call) -> std::string {
    try {
      call();
    } catch (const Error& error) {
      return error.argument();
    }
    return "(nothing thrown)";
  };
  EXPECT_EQ(argument_of([&] { transpose(in, 0, 4, out); }), "rows");
  EXPECT_EQ(argument_of([&] { transpose(in, -3, 4, out); }), "rows");
  EXPECT_EQ(argument_of([&] { transpose(in, 4, 0, out); }), "cols");
  EXPECT_EQ(argument_of([&] { transpose(static_cast<const float*>(nullptr), 4, 4, out); }), "in");
  EXPECT_EQ(argument_of([&] { transpose(in, 4, 4, static_cast<float*>(nullptr)); }), "out");
  EXPECT_EQ(argument_of([&] { transpose(in, 8, 8, storage.data() + 10); }), "out");  // overlaps
  EXPECT_EQ(argument_of([&] { transpose(in, std::int64_t(1) << 40, std::int64_t(1) << 40, out); }),
            "rows");
  EXPECT_THROW(detail::transpose_bytes(in, 2, 2, 3, out, nullptr), Error);
}

}  // namespace
}  // namespace rooflab
