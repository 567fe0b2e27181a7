#include "cpu/compare.hpp"

#include <sstream>

namespace rooflab::cpu {

std::string Comparison::describe() const {
  if (worst_index < 0) return "no elements compared";
  std::ostringstream text;
  text.precision(17);
  text << (has_nan ? "NaN (unwritten or invalid) at " : "worst error at ") << "index "
       << worst_index << ": got " << worst_output << ", expected " << worst_reference;
  return text.str();
}

}  // namespace rooflab::cpu
