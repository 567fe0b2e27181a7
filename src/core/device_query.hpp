#pragma once
// The device queries the library itself makes (the dispatch, the launch configurations); the lab's
// description of the device and its measured ceilings are in device_info.hpp.
#include <cstdint>
#include <string>

namespace rooflab {

// Empty when a CUDA device can be used; otherwise one line saying why not.
std::string cuda_device_unavailable_reason();

// "13.0" from 13000.
std::string cuda_version_string(int version);

// The current device's multiprocessor count, queried once per device and cached: launch
// configurations that fill the GPU need it on every call.
int current_sm_count();
// The current device's L2 size in bytes, queried once per device and cached likewise.
std::int64_t current_l2_bytes();

}  // namespace rooflab
