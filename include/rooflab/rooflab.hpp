#pragma once
// rooflab for plain C++ callers: the public API with its common instantiations compiled into the
// library. Device pointers; operations are asynchronous on the given stream unless stated.
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
