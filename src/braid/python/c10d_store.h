// braid's rendezvous over the c10d::Store torch.distributed hands a backend's creator (the
// group's PrefixStore over the TCPStore / FileStore that env://, tcp:// or file:// built), so
// braid finds its peers wherever torch found them, with no port or variable of its own.
//
// braid's keys live under "braid/" in the group's store, apart from whatever torch or the user
// keeps there.
//
// Thread-safety: as the c10d store it wraps; braid's rendezvous uses it from one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "braid/bootstrap/key_value_store.h"

namespace braid::python {

class C10dStore final : public KeyValueStore {
 public:
  // `rank` names this process in the errors.
  C10dStore(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), rank_(rank) {}

  void set(const std::string& key, std::string_view value, Deadline deadline) override;
  std::string get(const std::string& key, Deadline deadline) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;

 private:
  static std::string prefixed(const std::string& key) { return "braid/" + key; }

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
};

}  // namespace braid::python
