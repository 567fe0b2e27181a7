// rooflab bench OP --gpus N: the sharded ops over N GPUs of this process against the same work on
// one GPU, at 2^30 elements a rank by default; the latency of small calls beside NCCL's own; and
// the interconnect ladder. Every rank has its own host thread; a repetition's time is the slowest
// rank's, from CUDA events around the call on each rank's stream, the ranks released together.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iomanip>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/environment.hpp"
#include "bench/random.hpp"
#include "distributed/lab/distributed_lab.hpp"
#include "distributed/lab/interconnect.hpp"
#include "distributed/lab/nvml_links.hpp"
#include "distributed/shard_math.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/distributed.hpp"
#include "rooflab/error.hpp"
#include "rooflab/histogram.hpp"
#include "rooflab/reduce.hpp"
#include "rooflab/scan.hpp"

namespace rooflab::dist::lab {
namespace {

using nlohmann::json;
constexpr const char* op_name = "bench --gpus";

class Barrier {
 public:
  explicit Barrier(int parties) : parties_(parties) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++waiting_ == parties_) {
      waiting_ = 0;
      ++generation_;
      released_.notify_all();
    } else {
      released_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int parties_, waiting_ = 0;
  long generation_ = 0;
};

struct Summary {
  double median = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  if (seconds.empty()) return {};
  return {seconds[seconds.size() / 2], seconds.front(), seconds.back()};
}
json to_json(const Summary& s) {
  return {{"median_s", s.median}, {"min_s", s.min}, {"max_s", s.max}};
}

// Communicators and streams for GPUs 0..n-1 of this process.
struct Clique {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit Clique(int n) : comms(std::size_t(n)), streams(std::size_t(n)) {
    setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast off, as in every test and benchmark
    if (const ncclResult_t r = ncclCommInitAll(comms.data(), n, nullptr); r != ncclSuccess)
      throw Error(op_name, "", std::string("ncclCommInitAll failed: ") + ncclGetErrorString(r));
    for (int g = 0; g < n; ++g) {
      ROOFLAB_CUDA(op_name, "selecting a GPU", cudaSetDevice(g));
      ROOFLAB_CUDA(op_name, "creating a stream",
                   cudaStreamCreateWithFlags(&streams[std::size_t(g)], cudaStreamNonBlocking));
    }
  }
  ~Clique() {
    for (std::size_t g = 0; g < comms.size(); ++g) {
      cudaSetDevice(int(g));
      cudaStreamDestroy(streams[g]);
      ncclCommDestroy(comms[g]);
    }
  }
  int size() const { return int(comms.size()); }
};

// fn(rank) on a thread per rank; rethrows the first failure.
void on_every_rank(int ranks, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        ROOFLAB_CUDA(op_name, "selecting a GPU", cudaSetDevice(r));
        fn(r);
      } catch (...) {
        failures[std::size_t(r)] = std::current_exception();
      }
    });
  for (auto& thread : threads) thread.join();
  for (auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

// Per repetition, the slowest rank's event time of call(rank); `ranks` threads released together.
std::vector<double> time_ranks(int ranks, const std::vector<cudaStream_t>& streams, int warmup,
                               int reps, const std::function<void(int)>& call) {
  std::vector<std::vector<double>> times(static_cast<std::size_t>(ranks));
  Barrier barrier(ranks);
  on_every_rank(ranks, [&](int r) {
    cudaEvent_t start, stop;
    ROOFLAB_CUDA(op_name, "creating events", cudaEventCreate(&start));
    ROOFLAB_CUDA(op_name, "creating events", cudaEventCreate(&stop));
    for (int i = 0; i < warmup + reps; ++i) {
      ROOFLAB_CUDA(op_name, "synchronizing", cudaStreamSynchronize(streams[std::size_t(r)]));
      barrier.wait();
      ROOFLAB_CUDA(op_name, "recording", cudaEventRecord(start, streams[std::size_t(r)]));
      call(r);
      ROOFLAB_CUDA(op_name, "recording", cudaEventRecord(stop, streams[std::size_t(r)]));
      ROOFLAB_CUDA(op_name, "waiting", cudaEventSynchronize(stop));
      float ms = 0;
      ROOFLAB_CUDA(op_name, "reading the time", cudaEventElapsedTime(&ms, start, stop));
      if (i >= warmup) times[std::size_t(r)].push_back(ms * 1e-3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  });
  std::vector<double> slowest(std::size_t(reps), 0);
  for (const auto& rank_times : times)
    for (int i = 0; i < reps; ++i)
      slowest[std::size_t(i)] = std::max(slowest[std::size_t(i)], rank_times[std::size_t(i)]);
  return slowest;
}

// Buffers of one rank: n floats in, n floats out, counts.
struct RankBuffers {
  float* in = nullptr;
  float* out = nullptr;
  std::uint64_t* counts = nullptr;
  std::int64_t n = 0;
  void allocate(std::int64_t count, bool with_output, std::uint64_t seed, cudaStream_t stream) {
    n = count;
    ROOFLAB_CUDA(op_name, "allocating the input",
                 cudaMalloc(reinterpret_cast<void**>(&in), std::size_t(n) * 4));
    if (with_output)
      ROOFLAB_CUDA(op_name, "allocating the output",
                   cudaMalloc(reinterpret_cast<void**>(&out), std::size_t(n) * 4));
    else
      ROOFLAB_CUDA(op_name, "allocating the output",
                   cudaMalloc(reinterpret_cast<void**>(&out), 64));
    ROOFLAB_CUDA(op_name, "allocating counts",
                 cudaMalloc(reinterpret_cast<void**>(&counts), 256 * 8));
    bench::fill_random(in, n, seed, stream);
    ROOFLAB_CUDA(op_name, "filling", cudaStreamSynchronize(stream));
  }
  ~RankBuffers() {
    cudaFree(in);
    cudaFree(out);
    cudaFree(counts);
  }
};

constexpr int histogram_bins = 256;

// The sharded call of `op` on rank r, and the same work of one GPU's share on its own.
void sharded_call(const std::string& op, const Clique& clique, RankBuffers& b, int r) {
  const cudaStream_t s = clique.streams[std::size_t(r)];
  if (op == "reduce")
    dist::reduce(clique.comms[std::size_t(r)], b.in, b.n, b.out, Sum{}, s);
  else if (op == "histogram")
    dist::histogram_even(clique.comms[std::size_t(r)], b.in, b.n, histogram_bins, -1.0, 1.0,
                         b.counts, s);
  else
    dist::inclusive_scan(clique.comms[std::size_t(r)], b.in, b.out, b.n, s);
}
void one_gpu_call(const std::string& op, RankBuffers& b, cudaStream_t s) {
  if (op == "reduce")
    rooflab::reduce(b.in, b.n, b.out, Sum{}, s);
  else if (op == "histogram")
    rooflab::histogram_even(b.in, b.n, histogram_bins, -1.0, 1.0, b.counts, s);
  else
    rooflab::inclusive_scan(b.in, b.out, b.n, s);
}
double bytes_per_element(const std::string& op) { return op == "scan" ? 8.0 : 4.0; }
double target(const std::string& op) { return op == "scan" ? 0.85 : 0.90; }

// Checks the sharded result on every rank against the ranks' one-GPU results.
std::string validate(const std::string& op, const Clique& clique,
                     std::vector<RankBuffers>& buffers) {
  const int ranks = clique.size();
  std::vector<double> local_sum(static_cast<std::size_t>(ranks)),
      sharded(static_cast<std::size_t>(ranks));
  std::vector<std::vector<std::uint64_t>> local_counts(static_cast<std::size_t>(ranks)),
      global_counts(static_cast<std::size_t>(ranks));
  on_every_rank(ranks, [&](int r) {
    RankBuffers& b = buffers[std::size_t(r)];
    const cudaStream_t s = clique.streams[std::size_t(r)];
    sharded_call(op, clique, b, r);
    ROOFLAB_CUDA(op_name, "validating", cudaStreamSynchronize(s));
    float value = 0;
    if (op == "reduce") cudaMemcpy(&value, b.out, 4, cudaMemcpyDeviceToHost);
    if (op == "scan") cudaMemcpy(&value, b.out + (b.n - 1), 4, cudaMemcpyDeviceToHost);
    sharded[std::size_t(r)] = value;
    global_counts[std::size_t(r)].resize(histogram_bins);
    cudaMemcpy(global_counts[std::size_t(r)].data(), b.counts, histogram_bins * 8,
               cudaMemcpyDeviceToHost);
    // The shard's own sum (one GPU) and counts.
    rooflab::reduce(b.in, b.n, b.out, Sum{}, s);
    rooflab::histogram_even(b.in, b.n, histogram_bins, -1.0, 1.0, b.counts, s);
    ROOFLAB_CUDA(op_name, "validating", cudaStreamSynchronize(s));
    cudaMemcpy(&value, b.out, 4, cudaMemcpyDeviceToHost);
    local_sum[std::size_t(r)] = value;
    local_counts[std::size_t(r)].resize(histogram_bins);
    cudaMemcpy(local_counts[std::size_t(r)].data(), b.counts, histogram_bins * 8,
               cudaMemcpyDeviceToHost);
  });
  double total = 0, magnitude = 0;
  for (int r = 0; r < ranks; ++r)
    total += local_sum[std::size_t(r)], magnitude += double(buffers[std::size_t(r)].n);
  const double tolerance = 1e-5 * magnitude;  // |x| < 1: sum |x| < elements
  if (op == "reduce") {
    for (int r = 0; r < ranks; ++r) {
      if (std::memcmp(&sharded[std::size_t(r)], &sharded[0], sizeof(double)) != 0)
        return "rank " + std::to_string(r) + " differs from rank 0";
    }
    if (std::fabs(sharded[0] - total) > tolerance)
      return "sum " + std::to_string(sharded[0]) + " vs " + std::to_string(total);
  } else if (op == "scan") {
    const double last = sharded[std::size_t(ranks - 1)];
    if (std::fabs(last - total) > tolerance)
      return "last prefix " + std::to_string(last) + " vs " + std::to_string(total);
  } else {
    std::vector<std::uint64_t> sum(histogram_bins, 0);
    for (const auto& counts : local_counts)
      for (int i = 0; i < histogram_bins; ++i) sum[std::size_t(i)] += counts[std::size_t(i)];
    for (int r = 0; r < ranks; ++r)
      if (global_counts[std::size_t(r)] != sum)
        return "rank " + std::to_string(r) + "'s counts differ from the ranks' sum";
  }
  return {};
}

json bench_op(std::ostream& out, const std::string& op, const ShardedBenchOptions& options,
              std::int64_t n, int& failures) {
  const int ranks = options.gpus;
  Clique clique(ranks);
  std::vector<RankBuffers> buffers(static_cast<std::size_t>(ranks));
  on_every_rank(ranks, [&](int r) {
    buffers[std::size_t(r)].allocate(n, op == "scan", 1000 + std::uint64_t(r),
                                     clique.streams[std::size_t(r)]);
  });
  const std::string check = validate(op, clique, buffers);
  json row = {{"op", op},
              {"dtype", "float"},
              {"ranks", ranks},
              {"n_per_rank", n},
              {"bytes_per_rank", bytes_per_element(op) * double(n)},
              {"target", target(op)}};
  if (!check.empty()) {
    ++failures;
    row["check"] = "FAILED: " + check;
    out << op << ": FAILED validation: " << check << "\n";
    return row;
  }
  const std::vector<cudaStream_t> one_stream = {clique.streams[0]};
  const Summary one = summarize(time_ranks(1, one_stream, options.warmup, options.reps, [&](int) {
    one_gpu_call(op, buffers[0], clique.streams[0]);
  }));
  const Summary sharded =
      summarize(time_ranks(ranks, clique.streams, options.warmup, options.reps,
                           [&](int r) { sharded_call(op, clique, buffers[std::size_t(r)], r); }));
  const double bytes = bytes_per_element(op) * double(n);
  const double one_bw = bytes / one.median, aggregate = bytes * ranks / sharded.median;
  const double efficiency = aggregate / (ranks * one_bw);
  row["one_gpu"] = to_json(one);
  row["one_gpu_GBps"] = one_bw / 1e9;
  row["sharded"] = to_json(sharded);
  row["aggregate_GBps"] = aggregate / 1e9;
  row["efficiency"] = efficiency;
  row["meets_target"] = efficiency >= target(op);
  row["check"] = "passed";
  std::ostringstream line;
  line << std::fixed << std::setprecision(1) << std::left << std::setw(10) << op << " one GPU "
       << std::setw(8) << one.median * 1e3 << " ms " << std::setw(8) << one_bw / 1e9 << " GB/s | "
       << ranks << " GPUs " << std::setw(8) << sharded.median * 1e3 << " ms " << std::setw(8)
       << aggregate / 1e9 << " GB/s aggregate | " << efficiency * 100 << "% of " << ranks
       << " x one GPU (target " << target(op) * 100 << "%)\n";
  out << line.str() << std::flush;
  return row;
}

json bench_latency(std::ostream& out, const ShardedBenchOptions& options) {
  const int ranks = options.gpus;
  const std::int64_t n = 1024;
  const int reps = std::max(options.reps, 100);
  Clique clique(ranks);
  std::vector<RankBuffers> buffers(static_cast<std::size_t>(ranks));
  on_every_rank(ranks, [&](int r) {
    buffers[std::size_t(r)].allocate(n, true, 2000 + std::uint64_t(r),
                                     clique.streams[std::size_t(r)]);
  });
  json rows = json::array();
  const auto measure = [&](const std::string& name, int parties,
                           const std::function<void(int)>& call) {
    const std::vector<cudaStream_t> streams(clique.streams.begin(),
                                            clique.streams.begin() + parties);
    const Summary s = summarize(time_ranks(parties, streams, 10, reps, call));
    rows.push_back(
        {{"call", name}, {"ranks", parties}, {"n_per_rank", n}, {"latency", to_json(s)}});
    out << "  " << std::left << std::setw(44) << name << std::fixed << std::setprecision(1)
        << s.median * 1e6 << " us (min " << s.min * 1e6 << ", max " << s.max * 1e6 << ")\n"
        << std::flush;
  };
  out << "latency, 2^10 floats a rank, median of " << reps << " (slowest rank's events):\n";
  measure("rooflab::reduce, one GPU", 1,
          [&](int) { one_gpu_call("reduce", buffers[0], clique.streams[0]); });
  for (const std::string op : {"reduce", "histogram", "scan"})
    measure("rooflab::dist::" + op + ", " + std::to_string(ranks) + " GPUs", ranks,
            [&, op](int r) { sharded_call(op, clique, buffers[std::size_t(r)], r); });
  measure("ncclAllReduce 2^10 floats, " + std::to_string(ranks) + " GPUs", ranks, [&](int r) {
    ncclAllReduce(buffers[std::size_t(r)].in, buffers[std::size_t(r)].out, std::size_t(n),
                  ncclFloat32, ncclSum, clique.comms[std::size_t(r)],
                  clique.streams[std::size_t(r)]);
  });
  measure("ncclAllGather 192 bytes a rank (the check)", ranks, [&](int r) {
    ncclAllGather(buffers[std::size_t(r)].in, buffers[std::size_t(r)].out, 192, ncclUint8,
                  clique.comms[std::size_t(r)], clique.streams[std::size_t(r)]);
  });
  return rows;
}

json interconnect_json(std::ostream& out, int gpus, int reps) {
  const std::vector<LinkRow> rows =
      measure_interconnect(gpus, std::size_t(1) << 30, std::max(reps, 5));
  const LinkTheory theory = nvlink_theory(0);
  double peer = 0;
  for (const LinkRow& row : rows)
    if (row.name == "memcpy-peer") peer = row.busbw;
  json result = {
      {"gpus", gpus},
      {"bytes", double(std::size_t(1) << 30)},
      {"measured_peer_GBps", peer / 1e9},
      {"link_theory_GBps", theory.known ? json(theory.bytes_per_second / 1e9) : json(nullptr)},
      {"link_theory", theory.why},
      {"rungs", json::array()}};
  out << "interconnect ladder, " << gpus
      << " GPUs, 1 GiB a rank (nccl-tests' algbw and busbw; copies between GPUs 0 "
      << "and 1)\n  link theory: " << std::fixed << std::setprecision(1);
  if (theory.known) out << theory.bytes_per_second / 1e9 << " GB/s a direction, ";
  out << theory.why << "\n  measured peer bandwidth (memcpy-peer): " << peer / 1e9 << " GB/s\n";
  for (const LinkRow& row : rows) {
    json entry = {{"rung", row.rung},
                  {"name", row.name},
                  {"idea", row.idea},
                  {"convention", row.convention},
                  {"ranks", row.ranks},
                  {"bytes", row.bytes},
                  {"seconds", row.seconds},
                  {"algbw_GBps", row.algbw / 1e9},
                  {"busbw_GBps", row.busbw / 1e9}};
    if (!row.skipped.empty()) entry["skipped"] = row.skipped;
    if (!row.check.empty()) entry["check"] = "FAILED: " + row.check;
    result["rungs"].push_back(entry);
    out << "  " << row.rung << " " << std::left << std::setw(16) << row.name;
    if (!row.skipped.empty()) {
      out << "skipped: " << row.skipped << "\n";
      continue;
    }
    out << std::right << std::setw(9) << row.seconds * 1e3 << " ms  algbw " << std::setw(7)
        << row.algbw / 1e9 << " GB/s  busbw " << std::setw(7) << row.busbw / 1e9 << " GB/s  "
        << std::setw(5) << (peer > 0 ? row.busbw / peer * 100 : 0) << "% of peer";
    if (theory.known)
      out << "  " << std::setw(5) << row.busbw / theory.bytes_per_second * 100 << "% of link";
    if (!row.check.empty()) out << "  FAILED: " << row.check;
    out << "\n";
  }
  out << std::flush;
  return result;
}

std::string nccl_version_text() {
  int version = 0;
  ncclGetVersion(&version);
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace

const char* sharded_bench_ops() { return "reduce, histogram, scan, latency, interconnect, all"; }

int visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

void interconnect_table(std::ostream& out, int gpus) { interconnect_json(out, gpus, 5); }

int sharded_bench(std::ostream& out, const ShardedBenchOptions& options) {
  const std::vector<std::string> known = {"reduce",  "histogram",    "scan",
                                          "latency", "interconnect", "all"};
  if (std::find(known.begin(), known.end(), options.op) == known.end())
    throw Error(
        op_name, "OP",
        "'" + options.op + "' is not a sharded op (with --gpus: " + sharded_bench_ops() + ")");
  const int available = visible_gpus();
  if (options.gpus < 1 || options.gpus > available)
    throw Error(op_name, "--gpus",
                "asks for " + std::to_string(options.gpus) + " GPUs; this process sees " +
                    std::to_string(available));
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  const std::int64_t n = options.n_per_rank > 0 ? options.n_per_rank : (std::int64_t(1) << 30);
  std::vector<std::string> devices;
  for (int g = 0; g < options.gpus; ++g) {
    cudaDeviceProp properties{};
    cudaGetDeviceProperties(&properties, g);
    devices.push_back(properties.name);
  }
  json results = {{"kind", "distributed"},
                  {"gpus", options.gpus},
                  {"devices", devices},
                  {"nccl_version", nccl_version_text()},
                  {"NCCL_NVLS_ENABLE", "0"},
                  {"date", bench::utc_now_iso8601()},
                  {"commit", bench::build_commit()},
                  {"version", bench::build_version()},
                  {"reps", options.reps},
                  {"ops", json::array()}};
  out << "rooflab bench " << options.op << " --gpus " << options.gpus << ": " << devices[0] << " x"
      << options.gpus << ", NCCL " << nccl_version_text() << ", NCCL_NVLS_ENABLE=0, n = " << n
      << " floats a rank, median of " << options.reps << "\n";
  int failures = 0;
  const bool all = options.op == "all";
  for (const std::string op : {"reduce", "histogram", "scan"})
    if (all || options.op == op) results["ops"].push_back(bench_op(out, op, options, n, failures));
  if (all || options.op == "latency") results["latency"] = bench_latency(out, options);
  if ((all || options.op == "interconnect") && options.gpus > 1)
    results["interconnect"] = interconnect_json(out, options.gpus, options.reps);
  if (!options.out.empty()) {
    std::ofstream file(options.out);
    if (!file) throw Error(op_name, "--out", "cannot write " + options.out);
    file << results.dump(2) << "\n";
  }
  if (options.format == "json") out << results.dump(2) << "\n";
  return failures;
}

}  // namespace rooflab::dist::lab
