#include "rooflab/error.hpp"

namespace rooflab {
namespace {

std::string compose(const std::string& op, const std::string& argument, const std::string& problem,
                    const std::string& cuda_error) {
  std::string message = "rooflab::" + op + ": ";
  if (!argument.empty()) message += "argument '" + argument + "': ";
  message += problem;
  if (!cuda_error.empty()) message += " (" + cuda_error + ")";
  return message;
}

}  // namespace

Error::Error(std::string op, std::string argument, std::string problem, std::string cuda_error)
    : std::runtime_error(compose(op, argument, problem, cuda_error)),
      op_(std::move(op)),
      argument_(std::move(argument)),
      cuda_error_(std::move(cuda_error)) {}

void require(bool condition, const char* op, const char* argument, const std::string& problem) {
  if (!condition) throw Error(op, argument, problem);
}

}  // namespace rooflab
