// One process per GPU, as under a launcher on one node or many: the test re-runs this program once
// per rank (fork and exec, so that no child inherits the parent's CUDA state); rank 0 calls
// ncclGetUniqueId and passes the id to the others through a file; every rank checks the sharded ops
// against the single-GPU library on its own GPU, and that a float result has the same bits on every
// rank. This file has its own main: a child runs its rank and exits, the parent runs GoogleTest.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
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

std::vector<std::int64_t> child_sizes(int ranks) {
  std::vector<std::int64_t> sizes;
  for (int r = 0; r < ranks; ++r) sizes.push_back(r == 1 ? 0 : 200003 * (r + 1) + r);
  return sizes;
}

ncclUniqueId shared_id(int rank, const std::string& path) {
  ncclUniqueId id{};
  if (rank == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    {
      std::ofstream file(path + ".partial", std::ios::binary);
      file.write(id.internal, sizeof(id.internal));
    }
    if (std::rename((path + ".partial").c_str(), path.c_str()) != 0)
      throw std::runtime_error("rename " + path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::ifstream file(path, std::ios::binary);
    if (file && file.read(id.internal, sizeof(id.internal))) return id;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("no NCCL id in " + path);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

template <class T>
T* upload(const std::vector<T>& values) {
  T* device = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&device), (values.size() + 1) * sizeof(T)),
        "cudaMalloc");
  if (!values.empty())
    check(cudaMemcpy(device, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
          "upload");
  return device;
}
template <class T>
std::vector<T> download(const T* device, std::size_t n) {
  std::vector<T> host(n);
  if (n) check(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return host;
}

// One rank of the multi-process test; returns the number of failed checks.
int run_child(int rank, int ranks, const std::string& id_path) {
  keep_nvls_off();
  check(cudaSetDevice(rank), "cudaSetDevice");
  const ncclUniqueId id = shared_id(rank, id_path);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  int failures = 0;
  const auto fail = [&](const std::string& what) {
    std::cerr << "rank " << rank << ": " << what << "\n";
    ++failures;
  };

  // Every process draws every shard (same seed), so each knows the whole input.
  const std::vector<std::int64_t> sizes = child_sizes(ranks);
  const std::vector<std::int64_t> offsets = dist::shard_offsets(sizes);
  std::mt19937_64 generator(21);
  std::vector<float> all_f(std::size_t(offsets.back()));
  for (float& v : all_f) v = std::uniform_real_distribution<float>(-1, 2)(generator);
  std::vector<std::int64_t> all_i(all_f.size());
  for (std::int64_t& v : all_i)
    v = std::uniform_int_distribution<std::int64_t>(-(1ll << 35), 1ll << 36)(generator);
  const std::int64_t n = sizes[std::size_t(rank)];
  const auto begin = std::size_t(offsets[std::size_t(rank)]);
  const std::vector<float> mine_f(all_f.begin() + std::ptrdiff_t(begin),
                                  all_f.begin() + std::ptrdiff_t(begin + std::size_t(n)));
  const std::vector<std::int64_t> mine_i(all_i.begin() + std::ptrdiff_t(begin),
                                         all_i.begin() + std::ptrdiff_t(begin + std::size_t(n)));

  float* whole_f = upload(all_f);
  std::int64_t* whole_i = upload(all_i);
  float* shard_f = upload(mine_f);
  std::int64_t* shard_i = upload(mine_i);
  float* result_f = upload(std::vector<float>(std::size_t(ranks), 0.0f));
  std::int64_t* scanned = upload(std::vector<std::int64_t>(std::size_t(n) + 1, -1));
  std::int64_t* expected_scan = upload(std::vector<std::int64_t>(all_i.size(), 0));
  std::uint64_t* counts = upload(std::vector<std::uint64_t>(100, 7));
  std::uint64_t* expected_counts = upload(std::vector<std::uint64_t>(100, 9));

  // reduce: near the one-GPU sum, and the same bits on every rank (all-gathered to compare).
  dist::reduce(comm, shard_f, n, result_f + rank, Sum{}, stream);
  check(ncclAllGather(result_f + rank, result_f, 1, ncclFloat32, comm, stream), "ncclAllGather");
  rooflab::reduce(whole_f, std::int64_t(all_f.size()), result_f + ranks, Sum{},
                  stream);  // slot `ranks`: spare
  check(cudaStreamSynchronize(stream), "reduce");
  const std::vector<float> results = download(result_f, std::size_t(ranks) + 1);
  for (int r = 1; r < ranks; ++r)
    if (std::memcmp(&results[std::size_t(r)], &results[0], sizeof(float)) != 0)
      fail("reduce: rank " + std::to_string(r) + " differs from rank 0");
  double magnitude = 0;
  for (float v : all_f) magnitude += std::fabs(v);
  if (std::fabs(double(results[0]) - double(results[std::size_t(ranks)])) > 1e-5 * magnitude)
    fail("reduce: " + std::to_string(results[0]) + " vs one GPU " +
         std::to_string(results[std::size_t(ranks)]));

  // inclusive scan of int64: this rank's part of the one-GPU scan, exactly.
  dist::inclusive_scan(comm, shard_i, scanned, n, stream);
  rooflab::inclusive_scan(whole_i, expected_scan, std::int64_t(all_i.size()), stream);
  check(cudaStreamSynchronize(stream), "scan");
  const auto got = download(scanned, std::size_t(n));
  const auto want = download(expected_scan + begin, std::size_t(n));
  if (got != want) fail("inclusive_scan differs from the one-GPU scan");

  // histogram: the one-GPU counts, exactly.
  dist::histogram_even(comm, shard_f, n, 100, -1.0, 2.0, counts, stream);
  rooflab::histogram_even(whole_f, std::int64_t(all_f.size()), 100, -1.0, 2.0, expected_counts,
                          stream);
  check(cudaStreamSynchronize(stream), "histogram");
  if (download(counts, 100) != download(expected_counts, 100))
    fail("histogram_even differs from one GPU");

  // A bad argument on rank 0 is thrown on every rank, naming rank 0, and nobody hangs.
  try {
    dist::histogram_even(comm, shard_f, n, rank == 0 ? 0 : 100, -1.0, 2.0, counts, stream);
    fail("bins = 0 on rank 0 did not throw");
  } catch (const rooflab::Error& error) {
    if (std::string(error.what()).find("rank 0 of") == std::string::npos)
      fail(std::string("message: ") + error.what());
  }

  for (void* p : std::initializer_list<void*>{whole_f, whole_i, shard_f, shard_i, result_f, scanned,
                                              expected_scan, counts, expected_counts})
    cudaFree(p);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  if (failures == 0) std::cerr << "rank " << rank << " of " << ranks << ": every check passed\n";
  return failures;
}

std::string this_program() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return {};
  path[length] = '\0';
  return path;
}

class DistributedProcesses : public ::testing::TestWithParam<int> {};

TEST_P(DistributedProcesses, OneProcessPerGpuMatchesOneGpu) {
  const int ranks = GetParam();
  const std::string why = gpus_unavailable_reason(ranks);
  if (!why.empty()) GTEST_SKIP() << why;
  char directory[] = "/tmp/rooflab_dist_XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string id_path = std::string(directory) + "/nccl_id";
  const std::string program = this_program();
  ASSERT_FALSE(program.empty());
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      setenv("ROOFLAB_DIST_RANK", std::to_string(r).c_str(), 1);
      setenv("ROOFLAB_DIST_RANKS", std::to_string(ranks).c_str(), 1);
      setenv("ROOFLAB_DIST_ID_FILE", id_path.c_str(), 1);
      execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    children.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  std::vector<int> status(children.size(), -1);
  std::size_t running = children.size();
  while (running > 0) {
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (status[i] != -1) continue;
      int code = 0;
      if (waitpid(children[i], &code, WNOHANG) == children[i]) {
        status[i] = code;
        --running;
      }
    }
    if (running > 0 && std::chrono::steady_clock::now() > deadline) {
      for (std::size_t i = 0; i < children.size(); ++i)
        if (status[i] == -1) kill(children[i], SIGKILL), waitpid(children[i], &status[i], 0);
      ADD_FAILURE() << "the ranks did not finish within 180 s (killed)";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::size_t i = 0; i < children.size(); ++i)
    EXPECT_TRUE(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0)
        << "rank " << i << " failed (status " << status[i] << "), its messages are above";
  std::remove(id_path.c_str());
  rmdir(directory);
}

std::string gpus_name(const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "Gpus";
}
INSTANTIATE_TEST_SUITE_P(Distributed, DistributedProcesses, ::testing::Values(2, 4), gpus_name);

}  // namespace
}  // namespace rooflab::testing

int main(int argc, char** argv) {
  if (const char* rank = std::getenv("ROOFLAB_DIST_RANK")) {
    try {
      return rooflab::testing::run_child(std::atoi(rank),
                                         std::atoi(std::getenv("ROOFLAB_DIST_RANKS")),
                                         std::getenv("ROOFLAB_DIST_ID_FILE")) == 0
                 ? 0
                 : 1;
    } catch (const std::exception& error) {
      std::cerr << "rank " << rank << ": " << error.what() << "\n";
      return 2;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
