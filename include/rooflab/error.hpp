#pragma once
// rooflab::Error: every failure the library reports, with the operation, the argument (if one
// was at fault) and the CUDA error (if CUDA reported it), so that a caller can act on each part.
#include <stdexcept>
#include <string>

namespace rooflab {

class Error : public std::runtime_error {
 public:
  // op: the public operation ("reduce", "svd", "DeviceBuffer"); argument: the offending
  // argument's name or empty; problem: what is wrong; cuda_error: the CUDA error's name
  // ("cudaErrorMemoryAllocation"), or empty. what() is "rooflab::<op>: argument '<argument>':
  // <problem> (<cuda_error>)", the parts that are empty left out.
  Error(std::string op, std::string argument, std::string problem, std::string cuda_error = {});

  const std::string& op() const noexcept { return op_; }
  const std::string& argument() const noexcept { return argument_; }
  const std::string& cuda_error() const noexcept { return cuda_error_; }

 private:
  std::string op_;
  std::string argument_;
  std::string cuda_error_;
};

// Throws Error(op, argument, problem) unless condition holds: the check for bad input.
void require(bool condition, const char* op, const char* argument, const std::string& problem);

}  // namespace rooflab
