#pragma once
// Element types of the lab's ops, by name ("float", "int32", ...), and a visitor that turns a
// run-time type into a compile-time one, so an op's workspace factory is one call, not a switch.
#include <cstdint>
#include <string>
#include <vector>

namespace rooflab::bench {

enum class DType { f32, f64, i32, i64, u32, u8 };

const char* dtype_name(DType dtype);  // "float", "double", "int32", "int64", "uint32", "uint8"

// Accepts the names above and f32, f64, i32, i64, u32, u8; an empty text gives `fallback`.
// Throws rooflab::Error(op, "--dtype", ...) listing `allowed` for anything else.
DType parse_dtype(const std::string& text, const std::vector<DType>& allowed, DType fallback,
                  const char* op);

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<std::uint32_t>() {
  return DType::u32;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::u8;
}

// fn(T{}) with T the C++ type of `dtype`.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::i32: return fn(std::int32_t{});
    case DType::i64: return fn(std::int64_t{});
    case DType::u32: return fn(std::uint32_t{});
    case DType::u8: break;
  }
  return fn(std::uint8_t{});
}

}  // namespace rooflab::bench
