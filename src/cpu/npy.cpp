#include "cpu/npy.hpp"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>

namespace rooflab::cpu {
namespace {

constexpr char magic[] = "\x93NUMPY";
constexpr std::size_t magic_bytes = 6;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

std::size_t element_bytes(NpyType type) { return type == NpyType::float32 ? 4 : 8; }

// The header is a Python dict literal; these read the three keys NumPy writes.
std::string value_of(const std::string& header, const std::string& key, const std::string& path) {
  const std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(path, "header has no '" + key + "'");
  const std::size_t colon = header.find(':', at);
  if (colon == std::string::npos) fail(path, "header's '" + key + "' has no value");
  std::size_t begin = colon + 1;
  while (begin < header.size() && std::isspace(static_cast<unsigned char>(header[begin]))) ++begin;
  if (begin >= header.size()) fail(path, "header's '" + key + "' has no value");
  std::size_t end = begin;
  if (header[begin] == '\'') {
    end = header.find('\'', begin + 1);
    if (end == std::string::npos) fail(path, "header's '" + key + "' is not a closed string");
    return header.substr(begin + 1, end - begin - 1);
  }
  if (header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos) fail(path, "header's '" + key + "' is not a closed tuple");
    return header.substr(begin, end - begin + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string value = header.substr(begin, end - begin);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  return value;
}

std::vector<std::int64_t> parse_shape(const std::string& tuple, const std::string& path) {
  std::vector<std::int64_t> shape;
  std::size_t i = 1;  // past '('
  while (i < tuple.size()) {
    const char c = tuple[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',') {
      ++i;
    } else if (c == ')') {
      break;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t value = 0;
      while (i < tuple.size() && std::isdigit(static_cast<unsigned char>(tuple[i]))) {
        if (value > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
          fail(path, "shape too large");
        value = value * 10 + (tuple[i++] - '0');
      }
      if (i < tuple.size() && tuple[i] == 'L') ++i;  // Python 2's long suffix
      shape.push_back(value);
    } else {
      fail(path, "shape " + tuple + " is not a tuple of non-negative integers");
    }
  }
  return shape;
}

std::int64_t product(const std::vector<std::int64_t>& shape, const std::string& path) {
  std::int64_t count = 1;
  for (const std::int64_t extent : shape) {
    if (extent != 0 && count > std::numeric_limits<std::int64_t>::max() / 8 / extent)
      fail(path, "array too large");
    count *= extent;
  }
  return count;
}

void put_little_endian(std::string& out, std::uint64_t value, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(char((value >> (8 * b)) & 0xFF));
}

}  // namespace

std::int64_t NpyArray::elements() const { return product(shape, "array"); }

double NpyArray::at(std::int64_t index) const {
  // The lab runs on little-endian hosts (x86-64, aarch64), so the bytes are the native layout.
  if (type == NpyType::float32) {
    float value;
    std::memcpy(&value, bytes.data() + index * 4, 4);
    return value;
  }
  double value;
  std::memcpy(&value, bytes.data() + index * 8, 8);
  return value;
}

NpyArray read_npy(const std::string& path) {
  // A directory opens as a stream on Linux and fails only at the first read, with the library's
  // "basic_filebuf::underflow error": say what it is instead.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    fail(path, "cannot read: it is a directory, not a file");
  std::ifstream file(path, std::ios::binary);
  if (!file) fail(path, "cannot open");
  std::string content;
  try {
    content.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    fail(path, "cannot read (an error while reading the file)");
  }
  if (content.size() < magic_bytes + 2 || content.compare(0, magic_bytes, magic) != 0)
    fail(path, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(content[magic_bytes]);
  std::size_t header_length = 0, header_start = 0;
  if (major == 1) {
    if (content.size() < 10) fail(path, "truncated header");
    header_length = static_cast<unsigned char>(content[8]) | static_cast<unsigned char>(content[9])
                                                                 << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (content.size() < 12) fail(path, "truncated header");
    for (int b = 3; b >= 0; --b)
      header_length = header_length << 8 | static_cast<unsigned char>(content[8 + b]);
    header_start = 12;
  } else {
    fail(path, "format version " + std::to_string(major) + " is not 1, 2 or 3");
  }
  if (content.size() < header_start + header_length) fail(path, "truncated header");
  const std::string header = content.substr(header_start, header_length);

  NpyArray array;
  const std::string descr = value_of(header, "descr", path);
  if (descr == "<f4")
    array.type = NpyType::float32;
  else if (descr == "<f8")
    array.type = NpyType::float64;
  else
    fail(path, "dtype '" + descr + "' is not float32 or float64 little-endian ('<f4', '<f8')");
  const std::string order = value_of(header, "fortran_order", path);
  if (order != "True" && order != "False")
    fail(path, "fortran_order is '" + order + "', not True or False");
  array.fortran_order = order == "True";
  const std::string shape = value_of(header, "shape", path);
  if (shape.empty() || shape.front() != '(') fail(path, "shape '" + shape + "' is not a tuple");
  array.shape = parse_shape(shape, path);

  const std::size_t data_bytes =
      std::size_t(product(array.shape, path)) * element_bytes(array.type);
  const std::size_t data_start = header_start + header_length;
  if (content.size() - data_start < data_bytes)
    fail(path, "holds " + std::to_string(content.size() - data_start) +
                   " bytes of data, its shape needs " + std::to_string(data_bytes));
  array.bytes.assign(content.begin() + std::ptrdiff_t(data_start),
                     content.begin() + std::ptrdiff_t(data_start + data_bytes));
  return array;
}

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, NpyType type,
               const std::vector<double>& values) {
  std::string tuple = "(";
  for (const std::int64_t extent : shape) tuple += std::to_string(extent) + ", ";
  if (shape.size() > 1) tuple.resize(tuple.size() - 2);
  if (shape.size() == 1) tuple.resize(tuple.size() - 1);  // "(5,)"
  tuple += ")";
  std::string header = std::string("{'descr': '") + (type == NpyType::float32 ? "<f4" : "<f8") +
                       "', 'fortran_order': False, 'shape': " + tuple + ", }";
  // Preamble + header + '\n' padded with spaces to a multiple of 64 bytes, as NumPy writes.
  const bool version2 = header.size() + 11 > 65535;
  const std::size_t preamble = version2 ? 12 : 10;
  const std::size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  std::string out(magic, magic_bytes);
  out.push_back(char(version2 ? 2 : 1));
  out.push_back(0);
  put_little_endian(out, header.size(), version2 ? 4 : 2);
  out += header;
  const std::size_t bytes = element_bytes(type);
  out.reserve(out.size() + values.size() * bytes);
  for (const double value : values) {
    char buffer[8];
    if (type == NpyType::float32) {
      const float narrow = float(value);
      std::memcpy(buffer, &narrow, 4);
    } else {
      std::memcpy(buffer, &value, 8);
    }
    out.append(buffer, bytes);
  }
  std::ofstream file(path, std::ios::binary);
  if (!file) fail(path, "cannot write");
  file.write(out.data(), std::streamsize(out.size()));
  if (!file) fail(path, "write failed");
}

}  // namespace rooflab::cpu
