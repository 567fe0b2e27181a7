// The interconnect ladder, in the order of the story: through the host, then GPU to GPU by the
// copy engines, then by a kernel's own loads across the link, then collectives: NCCL's and a ring
// written by hand over the same peer loads.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "distributed/lab/interconnect.hpp"
#include "distributed/shard_math.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::dist::lab {
namespace {

constexpr const char* op = "interconnect";

void nccl(ncclResult_t result, const char* what) {
  if (result != ncclSuccess)
    throw Error(op, "", std::string(what) + " failed: " + ncclGetErrorString(result));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// 16-byte loads from the peer's memory, over the link; the stores stay local.
__global__ void copy_from_peer(int4* local, const int4* peer, std::int64_t count) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    local[i] = peer[i];
}

__global__ void add_from_peer(float4* local, const float4* peer, std::int64_t count) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const float4 a = local[i], b = peer[i];
    local[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
}

__global__ void fill(float* data, std::int64_t count, float value) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = value;
}

unsigned blocks_for(int device) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return unsigned(sms * 4);
}

struct Gpus {
  int count = 0;
  std::vector<cudaStream_t> streams;
  std::vector<float*> a, b;  // two buffers of `bytes` a GPU
  std::vector<cudaEvent_t> done;
  cudaEvent_t start = nullptr, stop = nullptr;

  Gpus(int gpus, std::size_t bytes) : count(gpus), streams(gpus), a(gpus), b(gpus), done(gpus) {
    for (int g = 0; g < gpus; ++g) {
      ROOFLAB_CUDA(op, "selecting a GPU", cudaSetDevice(g));
      ROOFLAB_CUDA(op, "creating a stream",
                   cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
      ROOFLAB_CUDA(op, "allocating", cudaMalloc(reinterpret_cast<void**>(&a[g]), bytes));
      ROOFLAB_CUDA(op, "allocating", cudaMalloc(reinterpret_cast<void**>(&b[g]), bytes));
      ROOFLAB_CUDA(op, "zeroing", cudaMemset(a[g], 0, bytes));
      ROOFLAB_CUDA(op, "zeroing", cudaMemset(b[g], 0, bytes));
      ROOFLAB_CUDA(op, "creating an event",
                   cudaEventCreateWithFlags(&done[g], cudaEventDisableTiming));
    }
    ROOFLAB_CUDA(op, "selecting GPU 0", cudaSetDevice(0));
    ROOFLAB_CUDA(op, "creating an event", cudaEventCreate(&start));
    ROOFLAB_CUDA(op, "creating an event", cudaEventCreate(&stop));
  }
  ~Gpus() {
    for (int g = 0; g < count; ++g) {
      cudaSetDevice(g);
      cudaFree(a[g]);
      cudaFree(b[g]);
      cudaStreamDestroy(streams[g]);
      cudaEventDestroy(done[g]);
    }
    cudaSetDevice(0);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }

  // Seconds of work(), which queues on every GPU's stream: GPU 0 records the start, the other
  // streams wait for it, and GPU 0 records the stop after every stream's last work.
  double time(const std::function<void()>& work) {
    for (int g = 0; g < count; ++g) {
      cudaSetDevice(g);
      ROOFLAB_CUDA(op, "synchronizing", cudaDeviceSynchronize());
    }
    cudaSetDevice(0);
    ROOFLAB_CUDA(op, "recording the start", cudaEventRecord(start, streams[0]));
    for (int g = 1; g < count; ++g)
      ROOFLAB_CUDA(op, "waiting for the start", cudaStreamWaitEvent(streams[g], start, 0));
    work();
    for (int g = 0; g < count; ++g) {
      cudaSetDevice(g);
      ROOFLAB_CUDA(op, "recording", cudaEventRecord(done[g], streams[g]));
    }
    cudaSetDevice(0);
    for (int g = 1; g < count; ++g)
      ROOFLAB_CUDA(op, "joining", cudaStreamWaitEvent(streams[0], done[g], 0));
    ROOFLAB_CUDA(op, "recording the stop", cudaEventRecord(stop, streams[0]));
    ROOFLAB_CUDA(op, "waiting for the stop", cudaEventSynchronize(stop));
    float ms = 0;
    ROOFLAB_CUDA(op, "reading the time", cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  }

  // Every stream waits for every other's work so far: a step boundary of the ring.
  void barrier() {
    for (int g = 0; g < count; ++g) {
      cudaSetDevice(g);
      ROOFLAB_CUDA(op, "recording a step", cudaEventRecord(done[g], streams[g]));
    }
    for (int g = 0; g < count; ++g)
      for (int h = 0; h < count; ++h)
        if (g != h)
          ROOFLAB_CUDA(op, "waiting for a step", cudaStreamWaitEvent(streams[g], done[h], 0));
  }
};

bool enable_peer_access(int gpus, std::string& why) {
  for (int g = 0; g < gpus; ++g)
    for (int h = 0; h < gpus; ++h) {
      if (g == h) continue;
      int can = 0;
      cudaDeviceCanAccessPeer(&can, g, h);
      if (!can) {
        why = "GPU " + std::to_string(g) + " cannot access GPU " + std::to_string(h) + "'s memory";
        return false;
      }
      cudaSetDevice(g);
      const cudaError_t status = cudaDeviceEnablePeerAccess(h, 0);
      if (status != cudaSuccess && status != cudaErrorPeerAccessAlreadyEnabled) {
        why = std::string("enabling peer access: ") + cudaGetErrorString(status);
        return false;
      }
      cudaGetLastError();
    }
  cudaSetDevice(0);
  return true;
}

LinkRow row(int rung, const char* name, const char* idea, Collective collective,
            const char* convention, int ranks, double bytes, const std::vector<double>& seconds) {
  LinkRow result;
  result.rung = rung;
  result.name = name;
  result.idea = idea;
  result.convention = convention;
  result.ranks = ranks;
  result.bytes = bytes;
  result.seconds = median(seconds);
  result.algbw = algorithm_bandwidth(bytes, result.seconds);
  result.busbw = bus_bandwidth(collective, ranks, bytes, result.seconds);
  return result;
}

}  // namespace

std::vector<LinkRow> measure_interconnect(int gpus, std::size_t bytes, int reps) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  bytes = bytes / (16 * std::size_t(gpus)) *
          (16 * std::size_t(gpus));  // whole float4s in every ring chunk
  std::vector<LinkRow> rows;
  Gpus g(gpus, bytes);
  std::string peer_why;
  const bool peer = enable_peer_access(gpus, peer_why);
  const auto repeat = [&](const std::function<void()>& work) {
    std::vector<double> seconds;
    g.time(work);  // warm-up
    for (int i = 0; i < reps; ++i) seconds.push_back(g.time(work));
    return seconds;
  };

  // Rung 1: GPU 0 -> pinned host -> GPU 1: the bytes cross PCIe twice, one after the other.
  {
    void* pinned = nullptr;
    ROOFLAB_CUDA(op, "allocating pinned memory", cudaMallocHost(&pinned, bytes));
    rows.push_back(
        row(1, "host-staged", "device to pinned host, then host to the other device: PCIe twice",
            Collective::send_recv, "copy", 2, double(bytes), repeat([&] {
              cudaSetDevice(0);
              cudaMemcpyAsync(pinned, g.a[0], bytes, cudaMemcpyDeviceToHost, g.streams[0]);
              cudaEventRecord(g.done[0], g.streams[0]);
              cudaSetDevice(1);
              cudaStreamWaitEvent(g.streams[1], g.done[0], 0);
              cudaMemcpyAsync(g.b[1], pinned, bytes, cudaMemcpyHostToDevice, g.streams[1]);
            })));
    cudaFreeHost(pinned);
  }
  // Rung 2: the copy engines over the peer link (NVLink where there is one).
  rows.push_back(row(2, "memcpy-peer",
                     "cudaMemcpyPeerAsync: the copy engines, GPU to GPU over the link",
                     Collective::send_recv, "copy", 2, double(bytes), repeat([&] {
                       cudaSetDevice(0);
                       cudaMemcpyPeerAsync(g.b[1], 1, g.a[0], 0, bytes, g.streams[0]);
                     })));
  // Rung 3: SMs of GPU 1 load GPU 0's memory directly (peer access), 16 bytes a load.
  if (peer) {
    rows.push_back(row(3, "peer-kernel",
                       "a kernel on GPU 1 loading GPU 0's memory: the SMs' loads cross the link",
                       Collective::send_recv, "copy", 2, double(bytes), repeat([&] {
                         cudaSetDevice(1);
                         copy_from_peer<<<blocks_for(1), 512, 0, g.streams[1]>>>(
                             reinterpret_cast<int4*>(g.b[1]), reinterpret_cast<const int4*>(g.a[0]),
                             std::int64_t(bytes / 16));
                       })));
  } else {
    LinkRow skipped;
    skipped.rung = 3;
    skipped.name = "peer-kernel";
    skipped.skipped = peer_why;
    rows.push_back(skipped);
  }

  // Rungs 4 and 5: NCCL's all-reduce and all-gather over every GPU.
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(gpus));
  nccl(ncclCommInitAll(comms.data(), gpus, nullptr), "ncclCommInitAll");
  const std::size_t floats = bytes / sizeof(float);
  rows.push_back(
      row(4, "nccl-all-reduce", "ncclAllReduce (sum of floats), NCCL's choice of ring or tree",
          Collective::all_reduce, "all-reduce", gpus, double(bytes), repeat([&] {
            ncclGroupStart();
            for (int r = 0; r < gpus; ++r)
              ncclAllReduce(g.a[r], g.b[r], floats, ncclFloat32, ncclSum, comms[r], g.streams[r]);
            ncclGroupEnd();
          })));
  const std::size_t part = floats / std::size_t(gpus);
  rows.push_back(row(
      5, "nccl-all-gather", "ncclAllGather: each rank's 1/n of the buffer to every rank",
      Collective::all_gather, "all-gather", gpus, double(part * gpus * sizeof(float)), repeat([&] {
        ncclGroupStart();
        for (int r = 0; r < gpus; ++r)
          ncclAllGather(g.a[r] + part * r, g.a[r], part, ncclFloat32, comms[r], g.streams[r]);
        ncclGroupEnd();
      })));
  for (ncclComm_t comm : comms) ncclCommDestroy(comm);

  // Rung 6: a ring all-reduce written by hand over peer loads: n-1 reduce-scatter steps (add the
  // left neighbour's chunk) and n-1 all-gather steps (copy it), every GPU waiting for every other
  // between steps.
  if (peer) {
    const std::int64_t chunk = std::int64_t(part / 4);  // float4s a chunk
    const auto ring = [&] {
      for (int step = 0; step + 1 < gpus; ++step) {
        g.barrier();
        for (int r = 0; r < gpus; ++r) {
          const int left = (r + gpus - 1) % gpus, c = ((r - 1 - step) % gpus + gpus) % gpus;
          cudaSetDevice(r);
          add_from_peer<<<blocks_for(r), 512, 0, g.streams[r]>>>(
              reinterpret_cast<float4*>(g.a[r]) + c * chunk,
              reinterpret_cast<const float4*>(g.a[left]) + c * chunk, chunk);
        }
      }
      for (int step = 0; step + 1 < gpus; ++step) {
        g.barrier();
        for (int r = 0; r < gpus; ++r) {
          const int left = (r + gpus - 1) % gpus, c = ((r - step) % gpus + gpus) % gpus;
          cudaSetDevice(r);
          copy_from_peer<<<blocks_for(r), 512, 0, g.streams[r]>>>(
              reinterpret_cast<int4*>(g.a[r]) + c * chunk,
              reinterpret_cast<const int4*>(g.a[left]) + c * chunk, chunk);
        }
      }
    };
    const auto refill = [&] {
      for (int r = 0; r < gpus; ++r) {
        cudaSetDevice(r);
        fill<<<blocks_for(r), 512, 0, g.streams[r]>>>(g.a[r], std::int64_t(part * gpus),
                                                      float(r + 1));
      }
    };
    std::vector<double> seconds;
    for (int i = 0; i <= reps; ++i) {
      refill();
      const double s = g.time(ring);
      if (i > 0) seconds.push_back(s);  // the first is the warm-up
    }
    LinkRow result = row(
        6, "ring-all-reduce", "hand-written ring over peer loads: reduce-scatter, then all-gather",
        Collective::all_reduce, "all-reduce", gpus, double(part * gpus * sizeof(float)), seconds);
    const float expected = float(gpus * (gpus + 1) / 2);
    for (int r = 0; r < gpus && result.check.empty(); ++r) {
      cudaSetDevice(r);
      for (std::size_t at : {std::size_t(0), part * gpus / 2, part * gpus - 1}) {
        float value = 0;
        cudaMemcpy(&value, g.a[r] + at, sizeof(float), cudaMemcpyDeviceToHost);
        if (value != expected)
          result.check = "GPU " + std::to_string(r) + " element " + std::to_string(at) + " = " +
                         std::to_string(value) + ", expected " + std::to_string(expected);
      }
    }
    rows.push_back(result);
  }
  for (int r = 0; r < gpus; ++r) {
    cudaSetDevice(r);
    ROOFLAB_CUDA(op, "finishing the ladder", cudaDeviceSynchronize());
  }
  cudaSetDevice(0);
  return rows;
}

}  // namespace rooflab::dist::lab
