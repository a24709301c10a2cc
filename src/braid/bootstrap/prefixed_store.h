// A view of a KeyValueStore under a key prefix: "gen/2/" + key. Elastic recovery (comm/
// elastic_group.h) builds each generation's World through its own prefix, so the rendezvous keys
// of generation 2 ("host/0", "job_id", the transports' addresses) never meet generation 1's.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "braid/bootstrap/key_value_store.h"

namespace braid {

class PrefixedStore final : public KeyValueStore {
 public:
  PrefixedStore(std::shared_ptr<KeyValueStore> inner, std::string prefix)
      : inner_(std::move(inner)), prefix_(std::move(prefix)) {}

  void set(const std::string& key, std::string_view value, Deadline deadline) override {
    inner_->set(prefix_ + key, value, deadline);
  }
  std::string get(const std::string& key, Deadline deadline) override { return inner_->get(prefix_ + key, deadline); }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override {
    std::vector<std::string> prefixed;
    prefixed.reserve(keys.size());
    for (const std::string& key : keys) prefixed.push_back(prefix_ + key);
    inner_->wait(prefixed, deadline);
  }

 private:
  std::shared_ptr<KeyValueStore> inner_;
  std::string prefix_;
};

}  // namespace braid
