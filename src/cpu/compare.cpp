#include "cpu/compare.hpp"

#include <sstream>

namespace rooflab::cpu {

std::string Comparison::describe() const {
  if (compared == 0) return "no elements compared";
  if (worst_index < 0) return "all " + std::to_string(compared) + " elements equal";
  std::ostringstream text;
  text.precision(17);
  if (!has_nan && max_error == 0)
    return "all " + std::to_string(compared) + " elements within tolerance";
  text << (has_nan ? "NaN (unwritten or invalid) at " : "worst error at ") << "index "
       << worst_index << ": got " << worst_output << ", expected " << worst_reference;
  return text.str();
}

}  // namespace rooflab::cpu
