#pragma once
// Sizes as people write them: 1000, 2^28, 256M, 1G, 5e7, 2^20+7.
#include <cstdint>
#include <string>

namespace rooflab::bench {

// K, M, G and T are powers of 1024; a^b is a power; terms may be added with '+'; 5e7 is
// 50000000. Throws rooflab::Error(op, option, ...) naming the option and the text on anything
// else, on negative numbers and on overflow of int64.
std::int64_t parse_size(const std::string& text, const char* option, const char* op = "bench");

}  // namespace rooflab::bench
