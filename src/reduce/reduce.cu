// The library's instantiations of rooflab::reduce and rooflab::reduce_rows: float, double, int32,
// int64 and uint32, each with Sum, Min and Max. The templates are in rooflab/detail/reduce.cuh.
#include "rooflab/detail/reduce.cuh"

namespace rooflab::detail {

ROOFLAB_REDUCE_INSTANTIATIONS()

}  // namespace rooflab::detail
