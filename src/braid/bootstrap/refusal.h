// How a rank says it will not take part in a set-up step (one of its settings is invalid, or
// asks for more than the machine can give): it stores why under the key its peers are about to
// wait for, so that they fail at once, naming it, instead of waiting for it until
// BRAID_TIMEOUT, and, for shared memory, before anything exists that would need cleaning up.
#pragma once

#include <string>
#include <string_view>

#include "braid/base/clock.h"
#include "braid/base/error.h"

namespace braid {

class KeyValueStore;

// Stores "refused: <error's detail>" under `key`. A store that is gone is ignored: the peers then learn
// of this rank's exit themselves, and the caller is about to rethrow `error`.
void publish_refusal(KeyValueStore& store, const std::string& key, const Error& error, Deadline deadline) noexcept;

// Throws InvalidArgument with `context` ("rank P refused its <what>: ...") if `value`, read
// from peer context.peer's key, is a refusal.
void throw_if_refused(std::string_view value, const ErrorContext& context, std::string_view what);

}  // namespace braid
