// The paged-array index's root and blocks (types 6 and 7) written out
// independently of the index, for its tests (fixed_array_test.cc,
// extensible_array_test.cc): sizes, hand-built payloads, and the fields of
// a root. docs/format.md, "Paged-array index", is the reference.
#ifndef SLABFS_TESTS_TESTUTIL_PAGED_ARRAY_BLOCKS_H_
#define SLABFS_TESTS_TESTUTIL_PAGED_ARRAY_BLOCKS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/format/block.h"
#include "engine/util/coding.h"

namespace slabfs::testutil::paged {

constexpr size_t kRootBytes = 8 + 4 + 1 + 8 + 8;

// A leaf block of `records` records (up to the last allocated one), a node
// block of `children` children (up to the last stored one).
inline uint64_t LeafBlockBytes(uint64_t records, bool filtered = false) {
  return engine::kBlockHeaderBytes + 8 + 2 + records * (filtered ? 16 : 8);
}
inline uint64_t NodeBlockBytes(uint64_t children) { return engine::kBlockHeaderBytes + 1 + 8 + 2 + 12 * children; }

inline std::string LeafPayload(uint64_t first_key, uint16_t count, const std::vector<uint64_t>& addrs) {
  std::string p;
  engine::PutU64(&p, first_key);
  engine::PutU16(&p, count);
  for (uint64_t a : addrs) engine::PutU64(&p, a);
  return p;
}

inline std::string NodePayload(uint8_t level, uint64_t first_leaf, uint16_t count,
                               const std::vector<engine::BlockRef>& refs) {
  std::string p;
  engine::PutU8(&p, level);
  engine::PutU64(&p, first_leaf);
  engine::PutU16(&p, count);
  for (const auto& r : refs) {
    engine::PutU64(&p, r.addr);
    engine::PutU32(&p, r.len);
  }
  return p;
}

// Child i of a node payload.
inline engine::BlockRef ChildOf(const std::string& node_payload, size_t i) {
  const size_t at = 11 + 12 * i;
  if (node_payload.size() < at + 12) {
    ADD_FAILURE() << "node has no child " << i;
    return {};
  }
  return engine::BlockRef{engine::LoadU64(node_payload.data() + at), engine::LoadU32(node_payload.data() + at + 8)};
}

// The root's fields; `row` is a fixed array's chunk count.
struct Root {
  engine::BlockRef ref;
  int depth = 0;
  uint64_t row = 0;
  uint64_t disk_bytes = 0;
};

inline Root ParseRoot(const std::string& s) {
  Root r;
  EXPECT_EQ(s.size(), kRootBytes);
  if (s.size() != kRootBytes) return r;
  r.ref.addr = engine::LoadU64(s.data());
  r.ref.len = engine::LoadU32(s.data() + 8);
  r.depth = static_cast<uint8_t>(s[12]);
  r.row = engine::LoadU64(s.data() + 13);
  r.disk_bytes = engine::LoadU64(s.data() + 21);
  return r;
}

inline std::string MakeRoot(engine::BlockRef ref, int depth, uint64_t row, uint64_t disk_bytes = 1 << 20) {
  std::string s;
  engine::PutU64(&s, ref.addr);
  engine::PutU32(&s, ref.len);
  engine::PutU8(&s, static_cast<uint8_t>(depth));
  engine::PutU64(&s, row);
  engine::PutU64(&s, disk_bytes);
  return s;
}

}  // namespace slabfs::testutil::paged

#endif  // SLABFS_TESTS_TESTUTIL_PAGED_ARRAY_BLOCKS_H_
