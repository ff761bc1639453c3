#include "engine/util/name_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace slabfs::engine {
namespace {

TEST(NameMapTest, FindsInsertsAndErasesByName) {
  NameMap<int> m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.find("a"), m.end());
  auto [it, inserted] = m.emplace("b", 2);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(it->first, "b");
  EXPECT_FALSE(m.emplace("b", 3).second);  // kept, as std::map does
  EXPECT_EQ(m.find("b")->second, 2);
  m.emplace("a", 1);
  m.emplace("c", 3);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_TRUE(m.contains("a"));
  EXPECT_EQ(m.count("z"), 0u);
  m.find("c")->second = 30;
  EXPECT_EQ(m.find("c")->second, 30);
  EXPECT_EQ(m.erase("b"), 1u);
  EXPECT_EQ(m.erase("b"), 0u);
  EXPECT_EQ(m.find("b"), m.end());
  std::vector<std::string> order;
  for (const auto& [k, v] : m) order.push_back(k);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(m.lower_bound("b")->first, "c");
}

// Random inserts and erases against std::map: the same entries, the same
// order, every lookup answered alike; and a moved map keeps answering.
TEST(NameMapTest, AgreesWithAnOrderedMapUnderRandomChanges) {
  std::mt19937 rng(11);
  NameMap<int> m;
  std::map<std::string, int> ref;
  for (int step = 0; step < 20000; ++step) {
    const std::string name = "n" + std::to_string(rng() % 3000);
    if (rng() % 3 == 0) {
      EXPECT_EQ(m.erase(name), ref.erase(name));
    } else {
      EXPECT_EQ(m.emplace(name, step).second, ref.emplace(name, step).second);
    }
    const std::string probe = "n" + std::to_string(rng() % 3000);
    auto a = m.find(probe);
    auto b = ref.find(probe);
    ASSERT_EQ(a == m.end(), b == ref.end()) << probe;
    if (b != ref.end()) {
      EXPECT_EQ(a->second, b->second);
    }
  }
  NameMap<int> moved(std::move(m));
  ASSERT_EQ(moved.size(), ref.size());
  auto it = moved.begin();
  for (const auto& [k, v] : ref) {
    EXPECT_EQ(it->first, k);
    EXPECT_EQ(moved.find(k)->second, v);
    ++it;
  }
  moved.clear();
  EXPECT_TRUE(moved.empty());
  EXPECT_EQ(moved.find(ref.begin()->first), moved.end());
}

}  // namespace
}  // namespace slabfs::engine
