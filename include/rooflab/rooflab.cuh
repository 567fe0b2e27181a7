#pragma once
// rooflab for nvcc users: everything in rooflab.hpp plus the templates themselves, so that
// reduce, reduce_rows and the other generic primitives work with custom operators and types.
#include "rooflab/rooflab.hpp"
#include "rooflab/detail/reduce.cuh"
