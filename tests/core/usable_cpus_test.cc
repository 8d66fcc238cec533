#include "core/usable_cpus.h"

#include "gtest/gtest.h"
#include "tests/core/scoped_cpu_affinity.h"

namespace tessera {
namespace {

TEST(UsableCpusTest, CountsTheAffinityMaskNotTheMachine) {
  const int before = UsableCpuCount();
  EXPECT_GE(before, 1);
  {
    testing_util::ScopedOneCpuAffinity one;
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one.saved_count(), before);
    // Bound to one CPU (as under taskset -c 0), whatever the machine has.
    EXPECT_EQ(UsableCpuCount(), 1);
  }
  EXPECT_EQ(UsableCpuCount(), before);
}

}  // namespace
}  // namespace tessera
