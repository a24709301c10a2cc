// How a poll loop waits when a pass made no progress (DESIGN.md: ranks outnumber cores, so
// waiting never burns a core): a few passes back to back (a message a microsecond away is
// caught at once), then sleeps that double from 20 us to 1 ms; any progress starts over.
//
//   IdleBackoff idle;
//   while (!done()) idle.after_pass(poll_once());
//
// Thread-safety: one thread.
#pragma once

#include <chrono>
#include <thread>

namespace braid::serving {

class IdleBackoff {
 public:
  void after_pass(bool progressed) {
    if (progressed) {
      idle_passes_ = 0;
      sleep_ = kFirstSleep;
      return;
    }
    if (++idle_passes_ <= kSpinPasses) return;
    std::this_thread::sleep_for(sleep_);
    sleep_ = sleep_ * 2 > kLongestSleep ? kLongestSleep : sleep_ * 2;
  }

 private:
  static constexpr int kSpinPasses = 64;
  static constexpr std::chrono::microseconds kFirstSleep{20};
  static constexpr std::chrono::microseconds kLongestSleep{1000};
  int idle_passes_ = 0;
  std::chrono::microseconds sleep_ = kFirstSleep;
};

}  // namespace braid::serving
