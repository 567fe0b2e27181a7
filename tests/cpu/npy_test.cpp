// The .npy reader and writer: round trips, NumPy's own byte layout (headers written by hand as
// NumPy writes them), Fortran order, version 2 headers, and clear refusals.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cpu/npy.hpp"
#include "scratch_directory.hpp"

namespace rooflab::cpu {
namespace {

class Npy : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return scratch_.file(name); }

  // A file as NumPy lays it out: magic, version, header length, dict, padding, data.
  void write_raw(const std::string& name, int major, const std::string& dict,
                 const std::string& data) {
    std::string header = dict;
    const std::size_t preamble = major == 1 ? 10 : 12;
    const std::size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
    header.append(total - preamble - header.size() - 1, ' ');
    header.push_back('\n');
    std::string bytes = std::string("\x93NUMPY", 6) + char(major) + char(0);
    for (std::size_t b = 0; b < (major == 1 ? 2u : 4u); ++b)
      bytes.push_back(char((header.size() >> (8 * b)) & 0xFF));
    bytes += header + data;
    std::ofstream(path(name), std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }

  std::string expect_refused(const std::string& name) {
    try {
      read_npy(path(name));
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
      return error.what();
    }
    ADD_FAILURE() << name << " was accepted";
    return {};
  }

 private:
  const ScratchDirectory scratch_{"rooflab_npy"};
};

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

TEST_F(Npy, RoundTripsFloat32AndFloat64OfEveryRank) {
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {5}, {3, 4}, {2, 3, 5}, {1, 1, 1, 7}};
  for (const NpyType type : {NpyType::float32, NpyType::float64})
    for (const auto& shape : shapes) {
      std::int64_t count = 1;
      for (const std::int64_t extent : shape) count *= extent;
      std::vector<double> values(count);
      for (std::int64_t i = 0; i < count; ++i) values[i] = 0.25 * double(i) - 1.5;
      write_npy(path("a.npy"), shape, type, values);
      const NpyArray array = read_npy(path("a.npy"));
      EXPECT_EQ(array.type, type);
      EXPECT_EQ(array.shape, shape);
      EXPECT_FALSE(array.fortran_order);
      ASSERT_EQ(array.elements(), count);
      for (std::int64_t i = 0; i < count; ++i) EXPECT_EQ(array.at(i), values[i]);
    }
}

TEST_F(Npy, WrittenHeaderIsNumpysLayout) {
  write_npy(path("b.npy"), {2, 3}, NpyType::float64, std::vector<double>(6, 1.0));
  std::ifstream file(path("b.npy"), std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_GE(content.size(), 64u + 48u);
  EXPECT_EQ(content.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_length =
      static_cast<unsigned char>(content[8]) | static_cast<unsigned char>(content[9]) << 8;
  EXPECT_EQ((10 + header_length) % 64, 0u);
  EXPECT_EQ(content[10 + header_length - 1], '\n');
  EXPECT_NE(content.find("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_EQ(content.size(), 10 + header_length + 48);
}

TEST_F(Npy, ReadsFortranOrderAndVersion2Headers) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  write_raw("f.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
            raw_bytes(values));
  const NpyArray fortran = read_npy(path("f.npy"));
  EXPECT_TRUE(fortran.fortran_order);
  EXPECT_EQ(fortran.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(fortran.at(5), 6.0);
  const std::vector<double> more = {0.5, -0.5};
  write_raw("v2.npy", 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
            raw_bytes(more));
  const NpyArray version2 = read_npy(path("v2.npy"));
  EXPECT_EQ(version2.shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(version2.at(1), -0.5);
}

TEST_F(Npy, RefusesOtherTypesByteOrdersAndBrokenFiles) {
  const std::string eight(8, '\0');
  write_raw("big.npy", 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", eight);
  EXPECT_NE(expect_refused("big.npy").find("'>f8'"), std::string::npos);
  write_raw("int.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", eight);
  EXPECT_NE(expect_refused("int.npy").find("float32 or float64"), std::string::npos);
  write_raw("short.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }", eight);
  EXPECT_NE(expect_refused("short.npy").find("bytes of data"), std::string::npos);
  write_raw("noshape.npy", 1, "{'descr': '<f8', 'fortran_order': False, }", eight);
  EXPECT_NE(expect_refused("noshape.npy").find("'shape'"), std::string::npos);
  write_raw("v9.npy", 9, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", eight);
  EXPECT_NE(expect_refused("v9.npy").find("version"), std::string::npos);
  std::ofstream(path("text.npy")) << "not numpy at all";
  EXPECT_NE(expect_refused("text.npy").find("magic"), std::string::npos);
  EXPECT_NE(expect_refused("missing.npy").find("cannot open"), std::string::npos);
}

TEST_F(Npy, RefusesADirectoryAsUnreadable) {
  std::filesystem::create_directories(path("matrix.npy"));
  const std::string message = expect_refused("matrix.npy");
  EXPECT_NE(message.find("cannot read: it is a directory"), std::string::npos) << message;
}

}  // namespace
}  // namespace rooflab::cpu
