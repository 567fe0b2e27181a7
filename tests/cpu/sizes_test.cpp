#include <gtest/gtest.h>

#include "bench/sizes.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

TEST(ParseSize, PlainDecimal) { EXPECT_EQ(parse_size("1000", "--n"), 1000); }

TEST(ParseSize, PowerOfTwo) { EXPECT_EQ(parse_size("2^28", "--n"), std::int64_t(1) << 28); }

TEST(ParseSize, BinarySuffixesAnyCase) {
  EXPECT_EQ(parse_size("256M", "--n"), std::int64_t(256) << 20);
  EXPECT_EQ(parse_size("1G", "--n"), std::int64_t(1) << 30);
  EXPECT_EQ(parse_size("4k", "--n"), 4096);
  EXPECT_EQ(parse_size("2T", "--n"), std::int64_t(2) << 40);
}

TEST(ParseSize, ScientificIsDecimal) { EXPECT_EQ(parse_size("5e7", "--n"), 50000000); }

TEST(ParseSize, SumsOfTerms) { EXPECT_EQ(parse_size("2^20+7", "--n"), (1 << 20) + 7); }

TEST(ParseSize, AboveTwoToThe31) {
  EXPECT_EQ(parse_size("2^31+1", "--n"), (std::int64_t(1) << 31) + 1);
}

TEST(ParseSize, RejectsWordsNamingOptionAndText) {
  try {
    parse_size("banana", "--n");
    FAIL() << "banana parsed";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), "--n");
    EXPECT_NE(std::string(error.what()).find("'banana' is not a size"), std::string::npos);
  }
}

TEST(ParseSize, RejectsNegative) { EXPECT_THROW(parse_size("-5", "--n"), Error); }

TEST(ParseSize, RejectsMalformed) {
  for (const char* text : {"", "2^", "^3", "12x", "1.5G", "3++4", "+3", "1e", "M"})
    EXPECT_THROW(parse_size(text, "--n"), Error) << text;
}

TEST(ParseSize, RejectsOverflow) {
  EXPECT_THROW(parse_size("2^63", "--n"), Error);
  EXPECT_THROW(parse_size("99999999999999999999", "--n"), Error);
  EXPECT_THROW(parse_size("8000000000000000000+8000000000000000000", "--n"), Error);
  EXPECT_EQ(parse_size("2^62", "--n"), std::int64_t(1) << 62);
}

}  // namespace
}  // namespace rooflab::bench
