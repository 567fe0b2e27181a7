#include "bench/sizes.hpp"

#include <cctype>
#include <limits>

#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

struct TooLarge {};
struct NotASize {};

std::int64_t multiply(std::int64_t a, std::int64_t b) {
  if (a != 0 && b > int64_max / a) throw TooLarge{};
  return a * b;
}

std::int64_t power(std::int64_t base, std::int64_t exponent) {
  std::int64_t result = 1;
  for (std::int64_t i = 0; i < exponent; ++i) result = multiply(result, base);
  return result;
}

std::int64_t read_digits(const std::string& text, std::size_t& pos) {
  const std::size_t start = pos;
  std::int64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    const std::int64_t digit = text[pos] - '0';
    value = multiply(value, 10);
    if (value > int64_max - digit) throw TooLarge{};
    value += digit;
    ++pos;
  }
  if (pos == start) throw NotASize{};
  return value;
}

// One term: digits, then at most one of ^digits, e digits, or a K/M/G/T suffix.
std::int64_t read_term(const std::string& text, std::size_t& pos) {
  const std::int64_t base = read_digits(text, pos);
  if (pos == text.size() || text[pos] == '+') return base;
  const char marker = static_cast<char>(std::tolower(static_cast<unsigned char>(text[pos])));
  if (marker == '^' || marker == 'e') {
    ++pos;
    const std::int64_t exponent = read_digits(text, pos);
    return marker == '^' ? power(base, exponent) : multiply(base, power(10, exponent));
  }
  const std::string suffixes = "kmgt";
  const auto unit = suffixes.find(marker);
  if (unit == std::string::npos) throw NotASize{};
  ++pos;
  return multiply(base, std::int64_t(1) << (10 * (unit + 1)));
}

}  // namespace

std::int64_t parse_size(const std::string& text, const char* option, const char* op) {
  if (!text.empty() && text[0] == '-')
    throw Error(op, option, "must not be negative, got '" + text + "'");
  try {
    std::size_t pos = 0;
    std::int64_t total = 0;
    while (true) {
      const std::int64_t term = read_term(text, pos);
      if (term > int64_max - total) throw TooLarge{};
      total += term;
      if (pos == text.size()) return total;
      if (text[pos] != '+') throw NotASize{};
      ++pos;
    }
  } catch (const TooLarge&) {
    throw Error(op, option, "'" + text + "' does not fit in 64 bits");
  } catch (const NotASize&) {
    throw Error(op, option,
                "'" + text + "' is not a size (examples: 1000, 2^28, 256M, 1G, 5e7, 2^20+7)");
  }
}

}  // namespace rooflab::bench
