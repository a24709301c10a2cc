// Sleeping on a 32-bit word in shared memory (Linux futex, shared between processes: the
// non-PRIVATE variants, since the word lives in a MAP_SHARED segment).
#pragma once

#include <atomic>
#include <cstdint>

#include "braid/base/clock.h"

namespace braid::shm {

// Sleeps while *word == expected, at most `timeout`. Returns on a wake-up, a changed value,
// a signal or the timeout; callers re-check their condition in every case.
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, Seconds timeout);
// Wakes every process sleeping on `word`.
void futex_wake_all(std::atomic<std::uint32_t>* word);

}  // namespace braid::shm
