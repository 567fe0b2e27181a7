#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/random.hpp"
#include "core/event_timer.hpp"
#include "core/l2_flush.hpp"
#include "gpu_test.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"

namespace rooflab {
namespace {

class DeviceMemory : public testing::GpuTest {};
class DeviceQuery : public testing::GpuTest {};
class LaunchCheck : public testing::GpuTest {};
class RandomFill : public testing::GpuTest {};
class Timing : public testing::GpuTest {};

__global__ void write_index(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i;
}

TEST_F(DeviceMemory, DeviceBufferRoundTripsData) {
  const std::vector<double> values{1.5, -2.25, 3e100, 0.0, -1e-300};
  DeviceBuffer<double> buffer(values);
  EXPECT_EQ(buffer.size(), values.size());
  EXPECT_EQ(buffer.bytes(), values.size() * sizeof(double));
  EXPECT_EQ(buffer.download(), values);
}

TEST_F(DeviceMemory, DeviceBufferMoveTransfersOwnership) {
  DeviceBuffer<int> first(std::vector<int>{1, 2, 3});
  const int* pointer = first.data();
  DeviceBuffer<int> second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(first.size(), 0u);
  EXPECT_EQ(second.data(), pointer);
  DeviceBuffer<int> third;
  third = std::move(second);
  EXPECT_EQ(third.download(), (std::vector<int>{1, 2, 3}));
}

TEST_F(DeviceMemory, DeviceBufferRejectsUploadOfAnotherSize) {
  DeviceBuffer<int> buffer(4);
  EXPECT_THROW(buffer.upload(std::vector<int>{1, 2}), Error);
}

TEST_F(DeviceMemory, DeviceBufferOfImpossibleSizeThrowsOutOfMemorySayingWhatItAllocated) {
  try {
    DeviceBuffer<char> huge(std::size_t(1) << 50);
    FAIL() << "a petabyte was allocated";
  } catch (const Error& error) {
    EXPECT_EQ(error.cuda_error(), "cudaErrorMemoryAllocation") << error.what();
    EXPECT_NE(std::string(error.what()).find("allocating 1.0 PiB of device memory failed"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(DeviceMemory, AHandledCudaErrorDoesNotLingerForTheNextLaunchCheck) {
  EXPECT_THROW(DeviceBuffer<char>(std::size_t(1) << 50), Error);
  DeviceBuffer<int> out(32);
  write_index<<<1, 32>>>(out.data(), 32);
  EXPECT_NO_THROW(detail::check_launch("test", "write_index"));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(DeviceMemory, StreamBufferIsUsableOnItsStream) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  DeviceBuffer<int> result(1000);
  {
    StreamBuffer scratch(1000 * sizeof(int), stream, "test");
    write_index<<<4, 256, 0, stream>>>(scratch.as<int>(), 1000);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(result.data(), scratch.data(), scratch.bytes(),
                              cudaMemcpyDeviceToDevice, stream),
              cudaSuccess);
  }  // freed in stream order, after the copy
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const auto host = result.download();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(host[i], i);
  cudaStreamDestroy(stream);
}

TEST_F(DeviceMemory, StreamBufferMemoryStaysMappedAcrossSynchronizations) {
  const cudaMemPool_t pool = detail::scratch_pool("test");
  std::uint64_t threshold = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
            cudaSuccess);
  EXPECT_EQ(threshold, scratch_retained_bytes);
  constexpr std::size_t bytes = std::size_t(8) << 20;
  { StreamBuffer scratch(bytes, nullptr, "test"); }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::uint64_t reserved = 0, used = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
            cudaSuccess);
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  EXPECT_GE(reserved - used, bytes) << "the freed scratch went back to the system";
}

TEST_F(LaunchCheck, CheckLaunchReportsABadConfiguration) {
  int* nothing = nullptr;
  write_index<<<0, 32>>>(nothing, 0);  // a grid of no blocks cannot be launched
  try {
    detail::check_launch("test", "write_index");
    FAIL() << "the bad launch went unnoticed";
  } catch (const Error& error) {
    // CUDA 13 names this cudaErrorInvalidValue, older runtimes cudaErrorInvalidConfiguration.
    EXPECT_EQ(error.cuda_error().rfind("cudaErrorInvalid", 0), 0u) << error.what();
    EXPECT_NE(std::string(error.what()).find("launching write_index failed"), std::string::npos)
        << error.what();
  }
}

TEST_F(Timing, EventTimerMeasuresQueuedWork) {
  DeviceBuffer<unsigned char> buffer(std::size_t(256) << 20);
  EventTimer timer;
  timer.start(nullptr);
  buffer.fill_bytes(1);
  timer.stop(nullptr);
  EXPECT_GT(timer.elapsed_ms(), 0.0f);
}

TEST_F(Timing, L2FlushRunsByReadingAndByWriting) {
  const DeviceInfo device = query_device();
  L2Flush flush(std::size_t(device.l2_bytes));
  flush(nullptr);
  flush.by_writing(nullptr);
  flush(nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(DeviceQuery, QueryDeviceReportsWhatTheCeilingsNeed) {
  const DeviceInfo device = query_device();
  EXPECT_FALSE(device.name.empty());
  EXPECT_GT(device.sm_count, 0);
  EXPECT_GT(device.sm_clock_khz, 0);
  EXPECT_GT(device.memory_clock_khz, 0);
  EXPECT_GT(device.memory_bus_bits, 0);
  EXPECT_GT(device.l2_bytes, 0);
  EXPECT_EQ(current_sm_count(), device.sm_count);
}

TEST_F(DeviceQuery, MeasuredCeilingsArePlausibleFractionsOfTheTheoretical) {
  const DeviceInfo device = query_device();
  const MeasuredCeilings ceilings = measure_ceilings(device);
  // Loose bounds: these catch a broken measurement (bytes miscounted, timing unsynchronized), not
  // a slow device.
  EXPECT_GT(ceilings.copy_bandwidth, 0.3 * device.theoretical_bandwidth());
  EXPECT_LT(ceilings.copy_bandwidth, 1.05 * device.theoretical_bandwidth());
  EXPECT_GT(ceilings.read_bandwidth, 0.3 * device.theoretical_bandwidth());
  EXPECT_LT(ceilings.read_bandwidth, 1.05 * device.theoretical_bandwidth());
}

TEST_F(RandomFill, DeviceRandomFillsEqualTheHostStreams) {
  const std::int64_t n = (1 << 20) + 7;
  DeviceBuffer<float> floats(n);
  DeviceBuffer<double> doubles(n);
  DeviceBuffer<std::int32_t> ints(n);
  DeviceBuffer<std::uint8_t> bytes(n);
  bench::fill_random(floats.data(), n, 11, nullptr);
  bench::fill_random(doubles.data(), n, 12, nullptr);
  bench::fill_random_integers(ints.data(), n, 13, -1000, 1000, nullptr);
  bench::fill_random_integers(bytes.data(), n, 14, 0, 255, nullptr);
  const auto f = floats.download();
  const auto d = doubles.download();
  const auto i = ints.download();
  const auto b = bytes.download();
  for (std::int64_t k = 0; k < n; ++k) {
    ASSERT_EQ(f[k], bench::random_float(11, k)) << k;
    ASSERT_EQ(d[k], bench::random_double(12, k)) << k;
    ASSERT_EQ(i[k], bench::random_integer(13, k, -1000, 1000)) << k;
    ASSERT_EQ(b[k], bench::random_integer(14, k, 0, 255)) << k;
  }
}

}  // namespace
}  // namespace rooflab
