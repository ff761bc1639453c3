// VisitFields of CacheStats, SpaceInfo and DatasetInfo (include/slabfs/):
// every field once, with its value, under the name the front ends show.
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "slabfs/cache_stats.h"
#include "slabfs/dataset_info.h"
#include "slabfs/space_info.h"

namespace slabfs {
namespace {

// A structured binding names every member, so these fail to compile when a
// member is added without a line in its VisitFields (and in these tests).
[[maybe_unused]] void CacheStatsHasTenMembers(const CacheStats& s) {
  [[maybe_unused]] const auto& [a, b, c, d, e, f, g, h, i, j] = s;
}
[[maybe_unused]] void SpaceInfoHasEightMembers(const SpaceInfo& s) {
  [[maybe_unused]] const auto& [a, b, c, d, e, f, g, h] = s;
}
[[maybe_unused]] void DatasetInfoHasSixteenMembers(const DatasetInfo& s) {
  [[maybe_unused]] const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] = s;
}

template <class T>
std::vector<std::pair<std::string, uint64_t>> Counters(const T& s) {
  std::vector<std::pair<std::string, uint64_t>> out;
  VisitFields(s, [&out](std::string_view name, uint64_t v) { out.emplace_back(name, v); });
  return out;
}

TEST(FieldVisitorsTest, CacheStatsGivesEveryCounterInOrder) {
  CacheStats s{.hits = 1,
               .misses = 2,
               .bytes_read = 3,
               .bytes_written = 4,
               .evictions = 5,
               .bypass_reads = 6,
               .bypass_writes = 7,
               .extent_reads = 8,
               .resident_bytes = 9,
               .budget_bytes = 10};
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"hits", 1},         {"misses", 2},        {"bytes_read", 3},   {"bytes_written", 4},  {"evictions", 5},
      {"bypass_reads", 6}, {"bypass_writes", 7}, {"extent_reads", 8}, {"resident_bytes", 9}, {"budget_bytes", 10}};
  EXPECT_EQ(Counters(s), want);
}

TEST(FieldVisitorsTest, SpaceInfoGivesEveryFigureInOrder) {
  SpaceInfo s{.file_bytes = 1,
              .free_bytes = 2,
              .disk_free_bytes = 3,
              .disk_total_bytes = 4,
              .num_objects = 5,
              .generation = 6,
              .held_bytes = 7,
              .free_list_bytes = 8};
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"file_bytes", 1},  {"free_bytes", 2}, {"disk_free_bytes", 3}, {"disk_total_bytes", 4},
      {"num_objects", 5}, {"generation", 6}, {"held_bytes", 7},      {"free_list_bytes", 8}};
  EXPECT_EQ(Counters(s), want);
}

TEST(FieldVisitorsTest, DatasetInfoGivesEveryFieldWithItsValue) {
  DatasetInfo i;
  i.dtype = DType::kF4;
  i.shape = {3, 4};
  i.max_shape = {kUnlimited, 4};
  i.chunks = {2, 2};
  i.fill = std::string(4, '\1');
  i.index = IndexKind::kExtensibleArray;
  i.num_elements = 12;
  i.size_bytes = 48;
  i.num_chunks = 4;
  i.allocated_chunks = 3;
  i.stored_bytes = 40;
  i.index_bytes = 64;
  i.length_resizable = true;
  i.filters = "shuffle";
  i.sparse = true;
  i.defined_elements = 5;

  std::vector<std::string> names;
  std::vector<uint64_t> numbers;
  VisitFields(i, [&](std::string_view name, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    names.emplace_back(name);
    if constexpr (std::is_same_v<T, DType>) {
      EXPECT_EQ(v, i.dtype);
    } else if constexpr (std::is_same_v<T, IndexKind>) {
      EXPECT_EQ(v, i.index);
    } else if constexpr (std::is_same_v<T, Dims>) {
      EXPECT_EQ(&v, name == "shape" ? &i.shape : name == "max_shape" ? &i.max_shape : &i.chunks) << name;
    } else if constexpr (std::is_same_v<T, std::string>) {
      EXPECT_EQ(&v, name == "fill" ? &i.fill : &i.filters) << name;
    } else if constexpr (std::is_same_v<T, bool>) {
      EXPECT_TRUE(v) << name;
    } else {
      static_assert(std::is_same_v<T, uint64_t>);
      numbers.push_back(v);
    }
  });
  const std::vector<std::string> want = {"dtype",
                                         "shape",
                                         "max_shape",
                                         "chunks",
                                         "fill",
                                         "index",
                                         "filters",
                                         "sparse",
                                         "length_resizable",
                                         "num_elements",
                                         "defined_elements",
                                         "size_bytes",
                                         "num_chunks",
                                         "allocated_chunks",
                                         "stored_bytes",
                                         "index_bytes"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(numbers, (std::vector<uint64_t>{12, 5, 48, 4, 3, 40, 64}));
}

}  // namespace
}  // namespace slabfs
