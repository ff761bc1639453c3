// Clang's thread safety analysis (-Wthread-safety): attributes that name
// which mutex guards a member, which mutex a function needs held, and which
// functions acquire and release one. Under clang they are checked at
// compile time (the `tsa` stage of tests/run.sh builds the engine with
// -Wthread-safety -Werror, SLABFS_THREAD_SAFETY_ANALYSIS); under any other
// compiler they expand to nothing.
//
// The names follow clang's documentation ("Thread Safety Analysis") and
// LevelDB's port/thread_annotations.h. Only annotated mutexes are seen: the
// wrappers of engine/util/mutex.h, not a raw std::mutex.
//
//   GUARDED_BY(mu)         the member is read and written only with mu held
//   PT_GUARDED_BY(mu)      the same for what the pointer member points at
//   REQUIRES(mu)           the caller holds mu exclusively (the *Locked methods)
//   REQUIRES_SHARED(mu)    the caller holds mu, shared or exclusively
//   ACQUIRED_AFTER(mu)     this mutex is taken after mu, never before (checked
//   ACQUIRED_BEFORE(mu)    with -Wthread-safety-beta; the whole order, with
//                          a runtime check, is engine/util/lock_order.h)
//   EXCLUDES(mu)           the caller must not hold mu (the function takes it)
#ifndef SLABFS_ENGINE_UTIL_THREAD_ANNOTATIONS_H_
#define SLABFS_ENGINE_UTIL_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define SLABFS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SLABFS_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) SLABFS_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SLABFS_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) SLABFS_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SLABFS_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) SLABFS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) SLABFS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) SLABFS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) SLABFS_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) SLABFS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) SLABFS_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) SLABFS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) SLABFS_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) SLABFS_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SLABFS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) SLABFS_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) SLABFS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) SLABFS_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) SLABFS_THREAD_ANNOTATION(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) SLABFS_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS SLABFS_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // SLABFS_ENGINE_UTIL_THREAD_ANNOTATIONS_H_
