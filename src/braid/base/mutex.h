// The lock types braid's shared state uses: std::mutex and std::condition_variable behind
// names clang's thread-safety analysis understands (thread_annotations.h), as LevelDB's
// port::Mutex / MutexLock / CondVar. Everything is inline and forwards to the standard type,
// so a MutexLock costs what a std::lock_guard does.
//
//   braid::Mutex mu_;
//   braid::CondVar changed_;
//   bool ready_ BRAID_GUARDED_BY(mu_) = false;
//
//   void set() { { braid::MutexLock lock(mu_); ready_ = true; } changed_.notify_all(); }
//   void wait() {
//     braid::MutexLock lock(mu_);
//     changed_.wait(mu_, [&]() BRAID_REQUIRES(mu_) { return ready_; });
//   }
//
// A predicate passed to CondVar reads guarded members, so it says BRAID_REQUIRES(mu_): it runs with
// the mutex held (the analysis checks each lambda as a function of its own).
//
// Thread-safety: as the standard types they wrap.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "braid/base/thread_annotations.h"

namespace braid {

class BRAID_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() BRAID_ACQUIRE() { mu_.lock(); }
  void unlock() BRAID_RELEASE() { mu_.unlock(); }
  bool try_lock() BRAID_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the mutex (checks nothing at run time).
  void assert_held() const BRAID_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction (std::lock_guard).
class BRAID_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) BRAID_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() BRAID_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// std::condition_variable waiting on a braid::Mutex the caller holds (and holds again when a
// wait returns, also when it throws).
class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

  template <class Predicate>
  void wait(Mutex& mu, Predicate ready) BRAID_REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait(lock.lock, std::move(ready));
  }
  // False when `timeout` passed and `ready()` is still false.
  template <class Rep, class Period, class Predicate>
  bool wait_for(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout, Predicate ready) BRAID_REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_for(lock.lock, timeout, std::move(ready));
  }

 private:
  // The caller's lock, seen by the standard wait as a unique_lock it may unlock and relock;
  // given back without unlocking, so the caller's MutexLock still owns it.
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace braid
