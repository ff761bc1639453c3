// SLABFS_EXPENSIVE_CHECKS set to a value in this process's environment for
// a scope, which the programs a death test starts inherit (gtest's
// "threadsafe" death tests run the test again in a new process, where
// engine/util/expensive_checks.h reads it afresh).
#ifndef SLABFS_TESTS_TESTUTIL_SCOPED_CHECKS_ENV_H_
#define SLABFS_TESTS_TESTUTIL_SCOPED_CHECKS_ENV_H_

#include <stdlib.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace slabfs::testutil {

class ScopedChecksEnv {
 public:
  explicit ScopedChecksEnv(const char* value) {
    if (const char* old = std::getenv("SLABFS_EXPENSIVE_CHECKS")) old_ = old;
    setenv("SLABFS_EXPENSIVE_CHECKS", value, 1);
  }
  ~ScopedChecksEnv() {
    if (old_)
      setenv("SLABFS_EXPENSIVE_CHECKS", old_->c_str(), 1);
    else
      unsetenv("SLABFS_EXPENSIVE_CHECKS");
  }
  ScopedChecksEnv(const ScopedChecksEnv&) = delete;
  ScopedChecksEnv& operator=(const ScopedChecksEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

}  // namespace slabfs::testutil

#endif  // SLABFS_TESTS_TESTUTIL_SCOPED_CHECKS_ENV_H_
