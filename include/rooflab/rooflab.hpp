#pragma once
// rooflab for plain C++ callers: the public API with its common instantiations compiled into the
// library. Device pointers; operations are asynchronous on the given stream unless stated.
// nvcc users who need custom operators or types include rooflab.cuh instead.
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/histogram.hpp"
#include "rooflab/operators.hpp"
#include "rooflab/reduce.hpp"
#include "rooflab/scan.hpp"
#include "rooflab/svd.hpp"
#include "rooflab/transpose.hpp"
