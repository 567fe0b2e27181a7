#pragma once
// The element type the library computes in for a caller's type. C++ spells one integer type in
// several ways that are distinct types: on Linux std::int64_t is `long`, so a caller's
// `long long*` names an instantiation the library does not have (a link error), though the bits
// are the same. The public templates map every spelling of an integer to the fixed-width type of
// its size and signedness, check it against the types the library is compiled for, and forward;
// floating-point and user types stay as they are.
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rooflab::detail {

template <class T, class... Candidates>
inline constexpr bool is_one_of_v = (std::is_same_v<T, Candidates> || ...);

// The standard integer types (bool and the character types other than char are not numbers here).
template <class T>
inline constexpr bool is_standard_integer_v =
    is_one_of_v<T, char, signed char, unsigned char, short, unsigned short, int, unsigned, long,
                unsigned long, long long, unsigned long long>;

template <std::size_t Bytes, bool Signed>
struct fixed_width_integer {};
template <>
struct fixed_width_integer<1, true> {
  using type = std::int8_t;
};
template <>
struct fixed_width_integer<1, false> {
  using type = std::uint8_t;
};
template <>
struct fixed_width_integer<2, true> {
  using type = std::int16_t;
};
template <>
struct fixed_width_integer<2, false> {
  using type = std::uint16_t;
};
template <>
struct fixed_width_integer<4, true> {
  using type = std::int32_t;
};
template <>
struct fixed_width_integer<4, false> {
  using type = std::uint32_t;
};
template <>
struct fixed_width_integer<8, true> {
  using type = std::int64_t;
};
template <>
struct fixed_width_integer<8, false> {
  using type = std::uint64_t;
};

template <class T, bool = is_standard_integer_v<T>>
struct element_type {
  using type = T;
};
template <class T>
struct element_type<T, true> {
  using type = typename fixed_width_integer<sizeof(T), std::is_signed_v<T>>::type;
};

// long long -> std::int64_t, unsigned -> std::uint32_t, float -> float, MyStruct -> MyStruct.
template <class T>
using element_type_t = typename element_type<T>::type;

}  // namespace rooflab::detail
