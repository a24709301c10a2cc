// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), in
// the shape of abseil's and LevelDB's port/thread_annotations.h. Under clang they let
// -Wthread-safety check at compile time that a member is only touched with its mutex held;
// under any other compiler they expand to nothing. The clang tree of scripts/thread_safety.sh
// (run by CI) builds the library with -Werror=thread-safety.
//
//   class Queue {
//     void push(int v) BRAID_EXCLUDES(mu_);         // takes mu_ itself
//     void push_locked(int v) BRAID_REQUIRES(mu_);  // the caller holds mu_
//     braid::Mutex mu_;
//     std::deque<int> items_ BRAID_GUARDED_BY(mu_);
//   };
//
// braid::Mutex / MutexLock / CondVar (mutex.h) are the annotated lock types: libstdc++'s
// std::mutex is not declared a capability, so the analysis cannot see it.
// The macros carry braid's prefix because this header is installed (public headers use them):
// unprefixed GUARDED_BY / REQUIRES would collide with other libraries' (LevelDB, gRPC) in users'
// translation units.
#pragma once

#if defined(__clang__)
#define BRAID_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define BRAID_THREAD_ANNOTATION(x)
#endif

// A class that is a lock ("mutex") or a scoped holder of one (MutexLock).
#define BRAID_CAPABILITY(x) BRAID_THREAD_ANNOTATION(capability(x))
#define BRAID_SCOPED_CAPABILITY BRAID_THREAD_ANNOTATION(scoped_lockable)

// Data members: read and written only with the mutex held (PT_: the pointee, not the pointer).
#define BRAID_GUARDED_BY(x) BRAID_THREAD_ANNOTATION(guarded_by(x))
#define BRAID_PT_GUARDED_BY(x) BRAID_THREAD_ANNOTATION(pt_guarded_by(x))

// Lock order: this mutex is taken after / before the named ones.
#define BRAID_ACQUIRED_AFTER(...) BRAID_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define BRAID_ACQUIRED_BEFORE(...) BRAID_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))

// Functions: the caller must hold (REQUIRES) or must not hold (EXCLUDES) the mutexes.
#define BRAID_REQUIRES(...) BRAID_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define BRAID_REQUIRES_SHARED(...) BRAID_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define BRAID_EXCLUDES(...) BRAID_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// Functions that take or give back a mutex (no argument: `this`).
#define BRAID_ACQUIRE(...) BRAID_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define BRAID_ACQUIRE_SHARED(...) BRAID_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define BRAID_RELEASE(...) BRAID_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define BRAID_RELEASE_SHARED(...) BRAID_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define BRAID_TRY_ACQUIRE(...) BRAID_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define BRAID_ASSERT_CAPABILITY(x) BRAID_THREAD_ANNOTATION(assert_capability(x))
#define BRAID_RETURN_CAPABILITY(x) BRAID_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function. Say why beside it: it is for code whose safety
// rests on something the analysis cannot see (e.g. only one thread exists yet).
#define BRAID_NO_THREAD_SAFETY_ANALYSIS BRAID_THREAD_ANNOTATION(no_thread_safety_analysis)
