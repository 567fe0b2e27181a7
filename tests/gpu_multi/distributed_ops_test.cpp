// The sharded primitives on 2 and 4 GPUs of one process, each against the single-GPU library on
// the concatenation of the shards: uneven and empty shards, in-place scans, 64-bit totals, results
// bitwise the same on every rank and from run to run, and bad arguments on one rank thrown on all.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "clique.hpp"
#include "distributed/shard_math.hpp"
#include "rooflab/distributed.hpp"
#include "rooflab/error.hpp"
#include "rooflab/histogram.hpp"
#include "rooflab/reduce.hpp"
#include "rooflab/scan.hpp"

namespace rooflab::testing {
namespace {

using Sizes = std::vector<std::int64_t>;

// Shard-size patterns for `ranks` ranks: uneven, every other shard empty, one element in all.
std::vector<Sizes> size_patterns(int ranks) {
  Sizes uneven, gaps, single(static_cast<std::size_t>(ranks), 0);
  for (int r = 0; r < ranks; ++r) {
    uneven.push_back(100003 * (r + 1) + 17 * r);
    gaps.push_back(r % 2 == 0 ? 0 : 250001 + r);
  }
  single.back() = 1;
  return {uneven, gaps, single};
}

std::string describe(const Sizes& sizes) {
  std::string text = "shards {";
  for (std::size_t r = 0; r < sizes.size(); ++r) text += (r ? ", " : "") + std::to_string(sizes[r]);
  return text + "}";
}

template <class T, class Draw>
std::vector<std::vector<T>> make_shards(const Sizes& sizes, std::uint64_t seed, Draw draw) {
  std::mt19937_64 generator(seed);
  std::vector<std::vector<T>> shards;
  for (std::int64_t size : sizes) {
    std::vector<T> shard(static_cast<std::size_t>(size));
    for (T& value : shard) value = draw(generator);
    shards.push_back(std::move(shard));
  }
  return shards;
}

template <class T>
std::vector<T> concatenation(const std::vector<std::vector<T>>& shards) {
  std::vector<T> all;
  for (const auto& shard : shards) all.insert(all.end(), shard.begin(), shard.end());
  return all;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Runs the single-GPU library on GPU 0 on the concatenation: fn(device input, device output).
template <class T, class Out, class Fn>
std::vector<Out> on_one_gpu(const std::vector<T>& all, std::size_t outputs, Fn fn) {
  check(cudaSetDevice(0), "cudaSetDevice");
  Shard<T> in(all);
  Shard<Out> out(outputs);
  fn(in.data(), out.data());
  check(cudaDeviceSynchronize(), "one-GPU run");
  return out.download(outputs);
}

class Distributed : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const std::string why = gpus_unavailable_reason(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
    clique_ = std::make_unique<Clique>(GetParam());
  }
  int ranks() const { return GetParam(); }
  std::unique_ptr<Clique> clique_;
};

// Each rank's outputs (count per rank) from fn(rank, device input, device output).
template <class T, class Out, class Fn>
std::vector<std::vector<Out>> on_every_rank(const Clique& clique,
                                            const std::vector<std::vector<T>>& shards,
                                            const std::vector<std::size_t>& outputs, Fn fn) {
  std::vector<std::vector<Out>> results(shards.size());
  clique.on_every_rank([&](int r) {
    Shard<T> in(shards[std::size_t(r)]);
    Shard<Out> out(outputs[std::size_t(r)]);
    fn(r, in.data(), out.data());
    check(cudaStreamSynchronize(clique.stream(r)), "sharded run");
    results[std::size_t(r)] = out.download(outputs[std::size_t(r)]);
  });
  return results;
}

TEST_P(Distributed, ReduceFloatSumMatchesOneGpuAndIsBitwiseSameOnEveryRankAndRun) {
  for (const Sizes& sizes : size_patterns(ranks())) {
    SCOPED_TRACE(describe(sizes) + ", seed 11");
    const auto shards = make_shards<float>(
        sizes, 11, [](auto& g) { return std::uniform_real_distribution<float>(-1, 2)(g); });
    const auto all = concatenation(shards);
    const float expected = on_one_gpu<float, float>(all, 1, [&](const float* in, float* out) {
      rooflab::reduce(in, std::int64_t(all.size()), out);
    })[0];
    double magnitude = 0;
    for (float v : all) magnitude += std::fabs(v);
    const std::vector<std::size_t> one(sizes.size(), 1);
    const auto run = [&] {
      return on_every_rank<float, float>(*clique_, shards, one,
                                         [&](int r, const float* in, float* out) {
                                           dist::reduce(clique_->comm(r), in, sizes[std::size_t(r)],
                                                        out, Sum{}, clique_->stream(r));
                                         });
    };
    const auto first = run(), second = run();
    for (int r = 0; r < ranks(); ++r) {
      EXPECT_TRUE(same_bits(first[std::size_t(r)], first[0]))
          << "rank " << r << " differs from rank 0";
      EXPECT_TRUE(same_bits(second[std::size_t(r)], first[std::size_t(r)]))
          << "rank " << r << " differs between runs";
    }
    EXPECT_NEAR(first[0][0], expected, 1e-5 * magnitude + 1e-30);
  }
}

TEST_P(Distributed, ReduceInt64SumIsExactBeyond32Bits) {
  for (const Sizes& sizes : size_patterns(ranks())) {
    SCOPED_TRACE(describe(sizes) + ", seed 12");
    const auto shards = make_shards<std::int64_t>(sizes, 12, [](auto& g) {
      return std::uniform_int_distribution<std::int64_t>(1ll << 39, 1ll << 40)(g);
    });
    const auto all = concatenation(shards);
    std::int64_t expected = 0;
    for (std::int64_t v : all) expected += v;
    const std::vector<std::size_t> one(sizes.size(), 1);
    const auto results = on_every_rank<std::int64_t, std::int64_t>(
        *clique_, shards, one, [&](int r, const std::int64_t* in, std::int64_t* out) {
          dist::reduce(clique_->comm(r), in, sizes[std::size_t(r)], out, Sum{}, clique_->stream(r));
        });
    EXPECT_GT(expected, std::int64_t(1) << 32);
    for (int r = 0; r < ranks(); ++r)
      EXPECT_EQ(results[std::size_t(r)][0], expected) << "rank " << r;
  }
}

TEST_P(Distributed, ReduceMinAndMaxMatchOneGpuExactly) {
  const Sizes sizes = size_patterns(ranks())[1];
  const auto shards = make_shards<double>(
      sizes, 13, [](auto& g) { return std::normal_distribution<double>(0, 1e3)(g); });
  const auto all = concatenation(shards);
  const std::vector<std::size_t> one(sizes.size(), 1);
  const double least = on_one_gpu<double, double>(all, 1, [&](const double* in, double* out) {
    rooflab::reduce(in, std::int64_t(all.size()), out, Min{});
  })[0];
  const double most = on_one_gpu<double, double>(all, 1, [&](const double* in, double* out) {
    rooflab::reduce(in, std::int64_t(all.size()), out, Max{});
  })[0];
  const auto mins = on_every_rank<double, double>(
      *clique_, shards, one, [&](int r, const double* in, double* out) {
        dist::reduce(clique_->comm(r), in, sizes[std::size_t(r)], out, Min{}, clique_->stream(r));
      });
  const auto maxs = on_every_rank<double, double>(
      *clique_, shards, one, [&](int r, const double* in, double* out) {
        dist::reduce(clique_->comm(r), in, sizes[std::size_t(r)], out, Max{}, clique_->stream(r));
      });
  for (int r = 0; r < ranks(); ++r) {
    EXPECT_EQ(mins[std::size_t(r)][0], least) << "rank " << r;
    EXPECT_EQ(maxs[std::size_t(r)][0], most) << "rank " << r;
  }
}

// Every rank's scan output, concatenated in rank order, for fn(rank, in, out).
template <class T, class Fn>
std::vector<T> sharded_scan(const Clique& clique, const std::vector<std::vector<T>>& shards,
                            Fn fn) {
  std::vector<std::size_t> outputs;
  for (const auto& shard : shards) outputs.push_back(shard.size());
  return concatenation(on_every_rank<T, T>(clique, shards, outputs, fn));
}

TEST_P(Distributed, InclusiveScanInt64MatchesOneGpuExactlyBeyond32Bits) {
  for (const Sizes& sizes : size_patterns(ranks())) {
    SCOPED_TRACE(describe(sizes) + ", seed 14");
    const auto shards = make_shards<std::int64_t>(sizes, 14, [](auto& g) {
      return std::uniform_int_distribution<std::int64_t>(-(1ll << 33), 1ll << 34)(g);
    });
    const auto all = concatenation(shards);
    const auto expected = on_one_gpu<std::int64_t, std::int64_t>(
        all, all.size(), [&](const std::int64_t* in, std::int64_t* out) {
          rooflab::inclusive_scan(in, out, std::int64_t(all.size()));
        });
    const auto got =
        sharded_scan(*clique_, shards, [&](int r, const std::int64_t* in, std::int64_t* out) {
          dist::inclusive_scan(clique_->comm(r), in, out, sizes[std::size_t(r)],
                               clique_->stream(r));
        });
    EXPECT_EQ(got, expected);
  }
}

TEST_P(Distributed, ExclusiveScanInt32InPlaceMatchesOneGpuExactly) {
  for (const Sizes& sizes : size_patterns(ranks())) {
    SCOPED_TRACE(describe(sizes) + ", seed 15");
    const auto shards = make_shards<std::int32_t>(sizes, 15, [](auto& g) {
      return std::uniform_int_distribution<std::int32_t>(-1000, 100000)(g);
    });
    const auto all = concatenation(shards);
    const auto expected = on_one_gpu<std::int32_t, std::int32_t>(
        all, all.size(), [&](const std::int32_t* in, std::int32_t* out) {
          rooflab::exclusive_scan(in, out, std::int64_t(all.size()));
        });
    std::vector<std::size_t> outputs(sizes.size(), 1);
    std::vector<std::int32_t> got;
    std::vector<std::vector<std::int32_t>> per_rank(sizes.size());
    clique_->on_every_rank([&](int r) {
      Shard<std::int32_t> data(shards[std::size_t(r)]);
      dist::exclusive_scan(clique_->comm(r), data.data(), data.data(), sizes[std::size_t(r)],
                           clique_->stream(r));
      check(cudaStreamSynchronize(clique_->stream(r)), "scan");
      per_rank[std::size_t(r)] = data.download(std::size_t(sizes[std::size_t(r)]));
    });
    EXPECT_EQ(concatenation(per_rank), expected);
  }
}

TEST_P(Distributed, InclusiveScanFloatMatchesOneGpuWithinTheBoundAndRepeatsBitwise) {
  const Sizes sizes = size_patterns(ranks())[0];
  const auto shards = make_shards<float>(
      sizes, 16, [](auto& g) { return std::uniform_real_distribution<float>(-1, 2)(g); });
  const auto all = concatenation(shards);
  const auto expected = on_one_gpu<float, float>(all, all.size(), [&](const float* in, float* out) {
    rooflab::inclusive_scan(in, out, std::int64_t(all.size()));
  });
  const auto run = [&] {
    return sharded_scan(*clique_, shards, [&](int r, const float* in, float* out) {
      dist::inclusive_scan(clique_->comm(r), in, out, sizes[std::size_t(r)], clique_->stream(r));
    });
  };
  const auto first = run(), second = run();
  EXPECT_TRUE(same_bits(first, second)) << "two runs differ";
  double magnitude = 0;
  std::size_t worst = 0;
  double worst_error = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    magnitude += std::fabs(all[i]);
    // The bounds of the earlier shards' reduce (docs/reduce.md) and of the scan continued from
    // their totals (docs/scan.md), plus the rank-order fold of the totals.
    const double error =
        std::fabs(double(first[i]) - double(expected[i])) / (magnitude * 1e-5 + 1e-30);
    if (error > worst_error) worst_error = error, worst = i;
  }
  EXPECT_LE(worst_error, 1.0) << "element " << worst << ": " << first[worst] << " vs "
                              << expected[worst];
}

TEST_P(Distributed, HistogramFloatMatchesOneGpuExactlyOnEveryRank) {
  for (const Sizes& sizes : size_patterns(ranks())) {
    SCOPED_TRACE(describe(sizes) + ", seed 17");
    const auto shards = make_shards<float>(
        sizes, 17, [](auto& g) { return std::uniform_real_distribution<float>(-0.25f, 1.25f)(g); });
    const auto all = concatenation(shards);
    const int bins = 1000;
    const auto expected =
        on_one_gpu<float, std::uint64_t>(all, bins, [&](const float* in, std::uint64_t* out) {
          rooflab::histogram_even(in, std::int64_t(all.size()), bins, 0.0, 1.0, out);
        });
    const std::vector<std::size_t> outputs(sizes.size(), bins);
    const auto results = on_every_rank<float, std::uint64_t>(
        *clique_, shards, outputs, [&](int r, const float* in, std::uint64_t* out) {
          dist::histogram_even(clique_->comm(r), in, sizes[std::size_t(r)], bins, 0.0, 1.0, out,
                               clique_->stream(r));
        });
    for (int r = 0; r < ranks(); ++r) EXPECT_EQ(results[std::size_t(r)], expected) << "rank " << r;
  }
}

// 2^31 + 1 equal bytes a rank: the one bin's count passes 2^32 (2 GiB a rank).
TEST_P(Distributed, HugeHistogramCountsBeyond32Bits) {
  const std::int64_t n = (std::int64_t(1) << 31) + 1;
  std::vector<std::uint64_t> counts_rank0;
  std::vector<std::vector<std::uint64_t>> counts(static_cast<std::size_t>(ranks()));
  clique_->on_every_rank([&](int r) {
    std::uint8_t* data = nullptr;
    std::uint64_t* out = nullptr;
    check(cudaMalloc(reinterpret_cast<void**>(&data), std::size_t(n)), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&out), 4 * sizeof(std::uint64_t)), "cudaMalloc");
    check(cudaMemset(data, 200, std::size_t(n)), "fill");
    dist::histogram_even(clique_->comm(r), data, n, 4, 0.0, 256.0, out, clique_->stream(r));
    check(cudaStreamSynchronize(clique_->stream(r)), "histogram");
    counts[std::size_t(r)].resize(4);
    check(cudaMemcpy(counts[std::size_t(r)].data(), out, 4 * sizeof(std::uint64_t),
                     cudaMemcpyDeviceToHost),
          "download");
    cudaFree(data);
    cudaFree(out);
  });
  const std::vector<std::uint64_t> expected = {0, 0, 0, std::uint64_t(n) * std::uint64_t(ranks())};
  for (int r = 0; r < ranks(); ++r) EXPECT_EQ(counts[std::size_t(r)], expected) << "rank " << r;
}

TEST_P(Distributed, ReduceRowsSplitAcrossRanksMatchesOneGpu) {
  const std::int64_t cols = 333;
  Sizes rows;
  for (int r = 0; r < ranks(); ++r) rows.push_back(r == 1 ? 0 : 97 * (r + 1) + 5);
  Sizes elements;
  for (std::int64_t count : rows) elements.push_back(count * cols);
  const auto shards = make_shards<std::int32_t>(elements, 18, [](auto& g) {
    return std::uniform_int_distribution<std::int32_t>(-100000, 100000)(g);
  });
  const auto all = concatenation(shards);
  const std::int64_t total_rows = dist::shard_offsets(rows).back();
  const auto expected = on_one_gpu<std::int32_t, std::int32_t>(
      all, std::size_t(total_rows), [&](const std::int32_t* in, std::int32_t* out) {
        rooflab::reduce_rows(in, total_rows, cols, out);
      });
  const std::vector<std::size_t> outputs(rows.size(), std::size_t(total_rows));
  const auto results = on_every_rank<std::int32_t, std::int32_t>(
      *clique_, shards, outputs, [&](int r, const std::int32_t* in, std::int32_t* out) {
        dist::reduce_rows(clique_->comm(r), in, rows[std::size_t(r)], cols, out, Sum{},
                          clique_->stream(r));
      });
  for (int r = 0; r < ranks(); ++r) EXPECT_EQ(results[std::size_t(r)], expected) << "rank " << r;
}

// Every rank's exception text, or "no exception".
std::vector<std::string> messages(const Clique& clique, const std::function<void(int)>& call) {
  std::vector<std::string> texts(std::size_t(clique.ranks()), "no exception");
  clique.on_every_rank([&](int r) {
    try {
      call(r);
    } catch (const rooflab::Error& error) {
      texts[std::size_t(r)] = error.what();
    }
  });
  return texts;
}

TEST_P(Distributed, BadArgumentOnOneRankThrowsOnEveryRankNamingThatRank) {
  const auto texts = messages(*clique_, [&](int r) {
    Shard<float> in(std::vector<float>(100, 1.0f));
    Shard<float> out(1);
    dist::reduce(clique_->comm(r), in.data(), r == 1 ? -5 : 100, out.data(), Sum{},
                 clique_->stream(r));
  });
  for (int r = 0; r < ranks(); ++r) {
    EXPECT_NE(texts[std::size_t(r)].find("rank 1 of " + std::to_string(ranks())), std::string::npos)
        << texts[std::size_t(r)];
    EXPECT_NE(texts[std::size_t(r)].find("'n'"), std::string::npos) << texts[std::size_t(r)];
  }
}

TEST_P(Distributed, DifferentBinsAcrossRanksThrowOnEveryRank) {
  const auto texts = messages(*clique_, [&](int r) {
    Shard<float> in(std::vector<float>(100, 0.5f));
    Shard<std::uint64_t> counts(64);
    dist::histogram_even(clique_->comm(r), in.data(), 100, r == ranks() - 1 ? 64 : 32, 0.0, 1.0,
                         counts.data(), clique_->stream(r));
  });
  for (const std::string& text : texts) EXPECT_NE(text.find("'bins'"), std::string::npos) << text;
}

TEST_P(Distributed, HostPointerOnOneRankThrowsOnEveryRank) {
  std::vector<float> host(100, 1.0f);
  const auto texts = messages(*clique_, [&](int r) {
    Shard<float> in(host);
    Shard<float> out(1);
    dist::reduce(clique_->comm(r), r == 0 ? host.data() : in.data(), 100, out.data(), Sum{},
                 clique_->stream(r));
  });
  for (const std::string& text : texts)
    EXPECT_NE(text.find("rank 0 of"), std::string::npos) << text;
}

TEST_P(Distributed, ReduceOfOnlyEmptyShardsThrowsOnEveryRank) {
  const auto texts = messages(*clique_, [&](int r) {
    Shard<float> out(1);
    dist::reduce(clique_->comm(r), static_cast<const float*>(nullptr), 0, out.data(), Sum{},
                 clique_->stream(r));
  });
  for (const std::string& text : texts) EXPECT_NE(text.find("empty"), std::string::npos) << text;
}

std::string gpus_name(const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "Gpus";
}
INSTANTIATE_TEST_SUITE_P(Distributed, Distributed, ::testing::Values(2, 4), gpus_name);

}  // namespace
}  // namespace rooflab::testing
