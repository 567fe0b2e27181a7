#include "bench/dtype.hpp"

#include <algorithm>

#include "rooflab/error.hpp"

namespace rooflab::bench {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u32: return "uint32";
    case DType::u8: return "uint8";
  }
  return "?";
}

DType parse_dtype(const std::string& text, const std::vector<DType>& allowed, DType fallback,
                  const char* op) {
  if (text.empty()) return fallback;
  const std::pair<const char*, DType> short_names[] = {{"f32", DType::f32}, {"f64", DType::f64},
                                                       {"i32", DType::i32}, {"i64", DType::i64},
                                                       {"u32", DType::u32}, {"u8", DType::u8}};
  for (DType dtype : allowed) {
    if (text == dtype_name(dtype)) return dtype;
    for (const auto& [name, value] : short_names)
      if (value == dtype && text == name) return dtype;
  }
  std::string names;
  for (DType dtype : allowed) names += (names.empty() ? "" : ", ") + std::string(dtype_name(dtype));
  throw Error(op, "--dtype", "'" + text + "' is not a type of this op (" + names + ")");
}

}  // namespace rooflab::bench
