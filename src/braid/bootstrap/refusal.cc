#include "braid/bootstrap/refusal.h"

#include <fmt/format.h>

#include "braid/bootstrap/key_value_store.h"

namespace braid {

namespace {
constexpr std::string_view kRefused = "refused: ";
}  // namespace

void publish_refusal(KeyValueStore& store, const std::string& key, const Error& error, Deadline deadline) noexcept {
  try {
    store.set(key, std::string(kRefused) + error.detail(), deadline);
  } catch (...) {
  }
}

void throw_if_refused(std::string_view value, const ErrorContext& context, std::string_view what) {
  if (!value.starts_with(kRefused)) return;
  throw InvalidArgument(context, fmt::format("rank {} refused its {}: {}", context.peer, what, value.substr(kRefused.size())));
}

}  // namespace braid
