// Check macros for the common "expected X, got Y" errors, as Gloo's GLOO_ENFORCE_EQ: the
// message names both expressions and both values, and the ErrorContext names the rank, peer
// and operation, so every such error reads the same way (docs/errors.md):
//
//   BRAID_CHECK_EQ(frame.size(), kHelloBytes, Corrupt, ctx, "hello frame from {}", remote);
//   // braid::Corrupt [rank 1, peer 0, op hello]: hello frame from 10.0.0.2:4000:
//   //   expected frame.size() == kHelloBytes (12 vs 40)
//
//   BRAID_CHECK_EQ(a, b, Kind, context [, format, args...]);   also _NE _LT _LE _GT _GE
//   BRAID_CHECK(condition, Kind, context [, format, args...]); "...: expected <condition>"
//
// Kind is the braid::Error subclass to throw (InvalidArgument for a caller's mistake, Corrupt
// for bytes read off the wire or a file, Mismatch when ranks disagree: the kind decides whether
// the communicator stays usable, error.h). `context` is an ErrorContext expression (a designated
// initializer works: {.rank = r, .op = "recv"}); the optional fmt format string and arguments
// say what was checked. Each operand is evaluated once; the context and the message arguments
// only when the check fails, so a check costs a comparison on the way that passes.
//
// Integers compare by value across signedness (std::cmp_less: -1 < 0u holds), so a check
// never passes or fails because of an implicit conversion. Values are printed with fmt; an
// enum without a formatter prints as its number.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "braid/base/error.h"

#define BRAID_CHECK(condition, Kind, ...)                                            \
  do {                                                                               \
    if (!(condition)) [[unlikely]] {                                                 \
      ::braid::check_internal::fail<Kind>("expected " #condition, __VA_ARGS__);      \
    }                                                                                \
  } while (false)

#define BRAID_CHECK_EQ(a, b, Kind, ...) BRAID_CHECK_OP_(Eq, ==, a, b, Kind, __VA_ARGS__)
#define BRAID_CHECK_NE(a, b, Kind, ...) BRAID_CHECK_OP_(Ne, !=, a, b, Kind, __VA_ARGS__)
#define BRAID_CHECK_LT(a, b, Kind, ...) BRAID_CHECK_OP_(Lt, <, a, b, Kind, __VA_ARGS__)
#define BRAID_CHECK_LE(a, b, Kind, ...) BRAID_CHECK_OP_(Le, <=, a, b, Kind, __VA_ARGS__)
#define BRAID_CHECK_GT(a, b, Kind, ...) BRAID_CHECK_OP_(Gt, >, a, b, Kind, __VA_ARGS__)
#define BRAID_CHECK_GE(a, b, Kind, ...) BRAID_CHECK_OP_(Ge, >=, a, b, Kind, __VA_ARGS__)

#define BRAID_CHECK_OP_(Compare, op, a, b, Kind, ...)                                                    \
  do {                                                                                                   \
    const auto& braid_check_a_ = (a);                                                                    \
    const auto& braid_check_b_ = (b);                                                                    \
    if (!::braid::check_internal::Compare(braid_check_a_, braid_check_b_)) [[unlikely]] {               \
      ::braid::check_internal::fail<Kind>(                                                               \
          ::braid::check_internal::compared("expected " #a " " #op " " #b, braid_check_a_, braid_check_b_), \
          __VA_ARGS__);                                                                                  \
    }                                                                                                    \
  } while (false)

namespace braid::check_internal {

// Integers other than bool and the character types: what std::cmp_equal and friends accept.
template <class T>
inline constexpr bool kPlainInteger =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> && !std::is_same_v<T, wchar_t> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

template <class A, class B>
inline constexpr bool kIntegers = kPlainInteger<std::remove_cvref_t<A>> && kPlainInteger<std::remove_cvref_t<B>>;

template <class A, class B>
constexpr bool Eq(const A& a, const B& b) {
  if constexpr (kIntegers<A, B>) return std::cmp_equal(a, b);
  else return a == b;
}
template <class A, class B>
constexpr bool Ne(const A& a, const B& b) { return !Eq(a, b); }
template <class A, class B>
constexpr bool Lt(const A& a, const B& b) {
  if constexpr (kIntegers<A, B>) return std::cmp_less(a, b);
  else return a < b;
}
template <class A, class B>
constexpr bool Le(const A& a, const B& b) { return !Lt(b, a); }
template <class A, class B>
constexpr bool Gt(const A& a, const B& b) { return Lt(b, a); }
template <class A, class B>
constexpr bool Ge(const A& a, const B& b) { return !Lt(a, b); }

template <class T>
std::string printed(const T& value) {
  if constexpr (fmt::is_formattable<T>::value) {
    return fmt::format("{}", value);
  } else if constexpr (std::is_enum_v<T>) {
    return fmt::format("{}", static_cast<std::underlying_type_t<T>>(value));
  } else {
    return "(not printable)";
  }
}

// "expected a == b (1 vs 2)"
template <class A, class B>
[[gnu::cold, gnu::noinline]] std::string compared(std::string_view expectation, const A& a, const B& b) {
  return fmt::format("{} ({} vs {})", expectation, printed(a), printed(b));
}

// Throws Kind(context, "[<what>: ]<expectation>").
template <class Kind>
[[noreturn, gnu::cold, gnu::noinline]] void fail(std::string_view expectation, ErrorContext context) {
  throw Kind(std::move(context), std::string(expectation));
}
template <class Kind, class... Args>
[[noreturn, gnu::cold, gnu::noinline]] void fail(std::string_view expectation, ErrorContext context,
                                                 fmt::format_string<Args...> what, Args&&... args) {
  throw Kind(std::move(context), fmt::format("{}: {}", fmt::format(what, std::forward<Args>(args)...), expectation));
}

}  // namespace braid::check_internal
