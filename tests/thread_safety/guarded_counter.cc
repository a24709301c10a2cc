// Compiled by check_analysis.sh with clang -fsyntax-only -Werror=thread-safety: clean as it
// is, and refused with each BRAID_TSA_VIOLATION, which proves the annotations of
// base/mutex.h are seen by the analysis (on gcc they expand to nothing and prove nothing).
#include <deque>

#include "braid/base/mutex.h"

namespace {

class Counter {
 public:
  void add(int v) {
    braid::MutexLock lock(mu_);
    add_locked(v);
    changed_.notify_all();
  }
  int wait_for_nonzero() {
    braid::MutexLock lock(mu_);
    changed_.wait(mu_, [&]() BRAID_REQUIRES(mu_) { return total_ != 0; });
    return total_;
  }
#if BRAID_TSA_VIOLATION == 1
  int unlocked_read() { return total_; }  // reading 'total_' requires holding mutex 'mu_'
#elif BRAID_TSA_VIOLATION == 2
  void unlocked_call() { add_locked(1); }  // calling 'add_locked' requires holding mutex 'mu_'
#elif BRAID_TSA_VIOLATION == 3
  int unannotated_predicate() {  // the predicate reads 'total_' without saying BRAID_REQUIRES(mu_)
    braid::MutexLock lock(mu_);
    changed_.wait(mu_, [&] { return total_ != 0; });
    return total_;
  }
#elif BRAID_TSA_VIOLATION == 4
  void lock_twice() {  // acquiring mutex 'mu_' that is already held
    braid::MutexLock lock(mu_);
    braid::MutexLock again(mu_);
  }
#endif

 private:
  void add_locked(int v) BRAID_REQUIRES(mu_) { total_ += v; }

  braid::Mutex mu_;
  braid::CondVar changed_;
  int total_ BRAID_GUARDED_BY(mu_) = 0;
};

}  // namespace

int use_counter() {
  Counter c;
  c.add(1);
  return c.wait_for_nonzero();
}
