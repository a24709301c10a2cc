#include "braid/base/kv_block_layout.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

void KvBlockLayout::validate(const char* op) const {
  const auto check = [&](int value, const char* field) {
    if (value < 1) {
      throw InvalidArgument({.op = op}, fmt::format("KV block layout: {} must be at least 1, got {}", field, value));
    }
  };
  check(layers, "layers");
  check(kv_heads, "kv_heads");
  check(head_dim, "head_dim");
  check(block_tokens, "block_tokens");
  check(element_bytes, "element_bytes");
}

std::string KvBlockLayout::describe() const {
  return fmt::format("{} layers x {} heads x {} dims, {}-token blocks, {} B", layers, kv_heads, head_dim,
                     block_tokens, element_bytes);
}

}  // namespace braid
