#pragma once
// NumPy's .npy files, the part the lab needs: little-endian float32 and float64 arrays of any
// rank, C or Fortran order, format versions 1.0 and 2.0 (and 3.0, whose UTF-8 header the reader
// treats like 2.0's). Anything else is refused with a std::runtime_error that names the file and
// the reason. (Debian packages no maintained C++ .npy reader.)
#include <cstdint>
#include <string>
#include <vector>

namespace rooflab::cpu {

enum class NpyType { float32, float64 };

struct NpyArray {
  NpyType type = NpyType::float64;
  std::vector<std::int64_t> shape;
  bool fortran_order = false;
  std::vector<unsigned char> bytes;  // the data, little-endian, in the file's order

  std::int64_t elements() const;
  // Element `index` in the file's order, converted to double.
  double at(std::int64_t index) const;
};

NpyArray read_npy(const std::string& path);

// Writes values (in C order for `shape`) as `type`, format version 1.0 (2.0 if the header needs
// it).
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, NpyType type,
               const std::vector<double>& values);

}  // namespace rooflab::cpu
