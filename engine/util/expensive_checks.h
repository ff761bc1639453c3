// The engine's expensive checks: invariants that cost too much to check on
// every operation of a daemon in use, and are checked wherever tests run.
//
//   - the lock order at run time (engine/util/lock_order.h): every ranked
//     lock is checked against those the thread holds;
//   - ContainerImpl::NoteDirty's promise: a commit checks that no dataset
//     changed without saying so (engine/container.cc);
//   - no block read or written under a lock whose rank forbids it: the
//     program stops instead of logging (engine/txn/block_store.cc);
//   - the daemon's inode table: its lock is a leaf, and its count of
//     partial rows matches the notes (fusefs/inode_table.cc).
//
// They are on in builds that define SLABFS_EXPENSIVE_CHECKS (the sanitizer
// builds, -DSLABFS_EXPENSIVE_CHECKS=ON) and, in any other build, in a
// program started with SLABFS_EXPENSIVE_CHECKS=1 in its environment (read
// once, at the first check). tests/run.sh sets it for ctest, so the unit
// and mount tests check them in the same build that quickstart and the
// benchmarks use, where they cost nothing but a flag's test.
#ifndef SLABFS_ENGINE_UTIL_EXPENSIVE_CHECKS_H_
#define SLABFS_ENGINE_UTIL_EXPENSIVE_CHECKS_H_

namespace slabfs::engine {

namespace expensive_checks {
// SLABFS_EXPENSIVE_CHECKS in the environment, "1" (or any value but "" and
// "0"), read once.
bool FromEnvironment();
}  // namespace expensive_checks

// Whether this program checks the expensive invariants above. The same
// answer for the program's whole life: a lock taken with the order checked
// is released with it checked.
inline bool ExpensiveChecks() {
#ifdef SLABFS_EXPENSIVE_CHECKS
  return true;
#else
  static const bool on = expensive_checks::FromEnvironment();
  return on;
#endif
}

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_EXPENSIVE_CHECKS_H_
