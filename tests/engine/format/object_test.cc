// Group and dataset object blocks: round trip (attributes of every kind,
// children of both kinds, datasets of several ranks, dtypes and fill
// values), truncation at every length, flips inside the block, and hostile
// payloads built field by field with every other field valid.
#include "engine/format/object.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace object_test {  // its own names in a unity batch

constexpr uint64_t kEnd = kDataStart + (1 << 20);
constexpr DType kAllDTypes[] = {DType::kI1, DType::kI2, DType::kI4, DType::kI8, DType::kU1,
                                DType::kU2, DType::kU4, DType::kU8, DType::kF4, DType::kF8};

// ------------------------------------------------------------ comparisons

void ExpectSameAttrs(const std::vector<AttributeRecord>& a, const std::vector<AttributeRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("attribute " + a[i].name);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].value.kind, b[i].value.kind);
    EXPECT_EQ(a[i].value.data, b[i].value.data);
    if (a[i].value.kind == Attribute::Kind::kNumeric) {
      EXPECT_EQ(a[i].value.dtype, b[i].value.dtype);
    }
  }
}

void ExpectSameObject(const ObjectRecord& a, const ObjectRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.kind, b.kind);
  ExpectSameAttrs(a.attrs, b.attrs);
  if (a.kind == ObjectKind::kGroup) {
    ASSERT_EQ(a.children.size(), b.children.size());
    for (size_t i = 0; i < a.children.size(); ++i) {
      SCOPED_TRACE("child " + a.children[i].name);
      EXPECT_EQ(a.children[i].name, b.children[i].name);
      EXPECT_EQ(a.children[i].kind, b.children[i].kind);
      EXPECT_EQ(a.children[i].id, b.children[i].id);
      EXPECT_EQ(a.children[i].block, b.children[i].block);
    }
  } else {
    const DatasetRecord &x = a.dataset, &y = b.dataset;
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.flags, y.flags);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.max_shape, y.max_shape);
    EXPECT_EQ(x.chunks, y.chunks);
    EXPECT_EQ(x.fill, y.fill);
    EXPECT_EQ(x.index_root, y.index_root);
    EXPECT_EQ(x.allocated_chunks, y.allocated_chunks);
    EXPECT_EQ(x.stored_bytes, y.stored_bytes);
    EXPECT_EQ(x.filters.filters(), y.filters.filters());
    EXPECT_EQ(x.defined_elements, y.defined_elements);
  }
}

Result<ObjectRecord> RoundTrip(const ObjectRecord& o) {
  return DecodeObject(EncodeObject(o), BlockTypeOf(o.kind), kEnd);
}

// Block image -> record, the way a reader goes from disk to an object.
Result<ObjectRecord> DecodeObjectBlock(std::string_view image, BlockType type) {
  auto payload = DecodeBlock(image, type, "object");
  if (!payload) return Err(payload.error());
  return DecodeObject(*payload, type, kEnd);
}

std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int c : v) s.push_back(static_cast<char>(c));
  return s;
}

template <typename T>
std::string Raw(std::initializer_list<T> v) {
  std::string s;
  for (T x : v) s.append(reinterpret_cast<const char*>(&x), sizeof x);
  return s;
}

// ------------------------------------------------------------ sample records

std::vector<AttributeRecord> EveryKindOfAttribute() {
  std::vector<AttributeRecord> a;
  a.push_back({"a-empty-string", Attribute::String("")});
  a.push_back({"b-binary-string", Attribute::String(std::string("x\0y\xff\n", 5))});
  a.push_back({"c-max-string", Attribute::String(std::string(kMaxAttributeBytes, 'z'))});
  a.push_back({"d-integer", Attribute::Integer(-42)});
  a.push_back({"e-float", Attribute::Float(2.5)});
  int i = 0;
  for (DType t : kAllDTypes) {
    std::string one(ItemSize(t), static_cast<char>(0x11 * (i + 1)));
    std::string many;
    for (int k = 0; k < 7; ++k) many.append(ItemSize(t), static_cast<char>(k * 37 + i));
    a.push_back({"f-one-" + std::string(DTypeName(t)), Attribute::Numbers(t, one)});
    a.push_back({"g-many-" + std::string(DTypeName(t)), Attribute::Numbers(t, many)});
    ++i;
  }
  a.push_back({"h-max-numbers", Attribute::Numbers(DType::kU8, std::string(kMaxAttributeBytes, '\x01'))});
  a.push_back({std::string(kMaxNameBytes, 'z'), Attribute::String("longest name")});
  std::sort(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  return a;
}

ObjectRecord SampleGroup() {
  ObjectRecord o;
  o.id = kRootId;
  o.kind = ObjectKind::kGroup;
  o.attrs = EveryKindOfAttribute();
  o.children = {
      {"..a", ObjectKind::kGroup, 2, {kDataStart, 64}},
      {"data set", ObjectKind::kDataset, 3, {kDataStart + 64, 200}},
      {"r\xc3\xa9sum\xc3\xa9", ObjectKind::kGroup, 0xffffffffffffull, {kEnd - 16, 16}},
      {std::string(kMaxNameBytes, 'y'), ObjectKind::kDataset, 4, {kDataStart + 4096, 1000}},
  };
  return o;
}

// The sample group without its 64 KiB attributes, for tests that decode it
// thousands of times.
ObjectRecord SmallGroup() {
  ObjectRecord o = SampleGroup();
  std::erase_if(o.attrs, [](const AttributeRecord& a) { return a.value.data.size() > 1000; });
  return o;
}

ObjectRecord SampleDataset(DType t, const Dims& shape, const Dims& max_shape, const Dims& chunks) {
  ObjectRecord o;
  o.id = 77;
  o.kind = ObjectKind::kDataset;
  o.attrs = {{"units", Attribute::String("m/s")}};
  DatasetRecord& d = o.dataset;
  d.dtype = t;
  d.index = IndexKind::kFixedArray;
  d.shape = shape;
  d.max_shape = max_shape;
  d.chunks = chunks;
  d.fill.clear();
  for (size_t i = 0; i < ItemSize(t); ++i) d.fill.push_back(static_cast<char>(0xa0 + i));
  d.index_root = Bytes({1, 2, 3, 0, 0, 0xff});
  d.allocated_chunks = 12;
  d.stored_bytes = 123456789;
  return o;
}

// ------------------------------------------------------------ round trips

TEST(ObjectTest, RoundTripsGroupWithChildrenAndAttributesOfEveryKind) {
  ObjectRecord o = SampleGroup();
  ASSERT_OK_AND_ASSIGN(ObjectRecord back, RoundTrip(o));
  ExpectSameObject(o, back);
}

TEST(ObjectTest, RoundTripsEmptyGroup) {
  ObjectRecord o;
  o.id = 2;
  o.kind = ObjectKind::kGroup;
  std::string p = EncodeObject(o);
  EXPECT_EQ(p.size(), 8u + 4u + 4u);
  ASSERT_OK_AND_ASSIGN(ObjectRecord back, DecodeObject(p, BlockType::kGroup, kEnd));
  ExpectSameObject(o, back);
}

TEST(ObjectTest, RoundTripsDatasetsOfEveryDTypeAndSeveralRanks) {
  for (DType t : kAllDTypes) {
    for (size_t rank : {1, 2, 3, 7, 32}) {
      SCOPED_TRACE(std::string(DTypeName(t)) + " rank " + std::to_string(rank));
      Dims shape(rank), max_shape(rank), chunks(rank);
      for (size_t d = 0; d < rank; ++d) {
        shape[d] = rank > 7 ? 2 : 10 + d * 3;
        max_shape[d] = d % 2 ? kUnlimited : shape[d] + d;
        chunks[d] = rank > 7 ? 1 : 1 + d;
      }
      ObjectRecord o = SampleDataset(t, shape, max_shape, chunks);
      ASSERT_OK_AND_ASSIGN(ObjectRecord back, RoundTrip(o));
      ExpectSameObject(o, back);
    }
  }
}

TEST(ObjectTest, RoundTripsFilterListsAndTheDefinedCount) {
  ObjectRecord o = SampleDataset(DType::kU2, {10, 10}, {kUnlimited, 10}, {4, 4});
  o.dataset.flags = kDatasetFlagFiltered | kDatasetFlagSparse;
  o.dataset.filters = *FilterPipeline::Parse("checksum,shuffle,deflate=3");
  o.dataset.defined_elements = 77;
  ASSERT_OK_AND_ASSIGN(ObjectRecord back, RoundTrip(o));
  ExpectSameObject(o, back);
  // Sparse without filters: the defined count alone follows the fill.
  o.dataset.flags = kDatasetFlagSparse;
  o.dataset.filters = FilterPipeline();
  ASSERT_OK_AND_ASSIGN(back, RoundTrip(o));
  ExpectSameObject(o, back);
  // A filter list that is not a valid pipeline is Corruption.
  std::string payload = EncodeObject(o);
  o.dataset.flags = kDatasetFlagFiltered;
  o.dataset.filters = *FilterPipeline::Parse("deflate=3");
  payload = EncodeObject(o);
  // The filter list follows the 2-byte fill: count 1, deflate (2), level 3,
  // then the allocated-chunk counter. Found by its exact place, then
  // changed to level 12 (the only thing wrong with it).
  const std::string list("\x01\x02\x03", 3);
  const size_t at = payload.find(o.dataset.fill + list);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(payload.find(o.dataset.fill + list, at + 1), std::string::npos);
  ASSERT_OK(DecodeObject(payload, BlockType::kDataset, 1 << 30));
  payload[at + o.dataset.fill.size() + 2] = 12;
  EXPECT_CODE(DecodeObject(payload, BlockType::kDataset, 1 << 30), Code::kCorruption);
}

TEST(ObjectTest, TrimmedEdgeNeedsVersion2AndADenseDataset) {
  ObjectRecord o = SampleDataset(DType::kU1, {6}, {kUnlimited}, {1 << 20});
  o.dataset.flags = kDatasetFlagLengthResizable | kDatasetFlagTrimmedEdge;
  EXPECT_EQ(ObjectBlockVersion(o), 2);
  const std::string payload = EncodeObject(o);
  ASSERT_OK_AND_ASSIGN(ObjectRecord back, DecodeObject(payload, BlockType::kDataset, kEnd, 2));
  ExpectSameObject(o, back);
  // The block carries the version; a reader passes it on.
  const std::string block = EncodeBlock(BlockType::kDataset, payload, ObjectBlockVersion(o));
  uint8_t version = 0;
  ASSERT_OK_AND_ASSIGN(std::string_view p, DecodeBlock(block, BlockType::kDataset, "t", &version));
  EXPECT_EQ(version, 2);
  EXPECT_OK(DecodeObject(p, BlockType::kDataset, kEnd, version));
  // Version 1 blocks predate the flag: there it is unknown.
  EXPECT_CODE(DecodeObject(payload, BlockType::kDataset, kEnd, 1), Code::kCorruption);
  // Only dense chunks are trimmed.
  ObjectRecord sparse = o;
  sparse.dataset.flags |= kDatasetFlagSparse;
  EXPECT_CODE(DecodeObject(EncodeObject(sparse), BlockType::kDataset, kEnd, 2), Code::kCorruption);
  ObjectRecord filtered = o;
  filtered.dataset.flags |= kDatasetFlagFiltered;
  filtered.dataset.filters = *FilterPipeline::Parse("deflate=1");
  EXPECT_CODE(DecodeObject(EncodeObject(filtered), BlockType::kDataset, kEnd, 2), Code::kCorruption);
  // Everything else is written as version 1, which every build reads, and
  // a version 2 dataset block without the flag reads as version 1 does.
  o.dataset.flags = kDatasetFlagLengthResizable;
  EXPECT_EQ(ObjectBlockVersion(o), 1);
  EXPECT_EQ(ObjectBlockVersion(SampleGroup()), 1);
  ASSERT_OK_AND_ASSIGN(back, DecodeObject(EncodeObject(o), BlockType::kDataset, kEnd, 2));
  ExpectSameObject(o, back);
}

TEST(ObjectTest, RoundTripsFillValuesAndIndexRoots) {
  const std::string fills[] = {Raw({0.0}), Raw({-1.5}), Raw({std::numeric_limits<double>::quiet_NaN()}),
                               Raw({std::numeric_limits<double>::infinity()}), std::string(8, '\xff')};
  const std::string roots[] = {"", std::string(29, '\0'), std::string(64 * 1024, '\x7f')};
  for (const auto& fill : fills) {
    for (const auto& root : roots) {
      ObjectRecord o = SampleDataset(DType::kF8, {1000, 1000}, {1000, 1000}, {100, 100});
      o.attrs.clear();
      o.dataset.fill = fill;
      o.dataset.index_root = root;
      o.dataset.allocated_chunks = std::numeric_limits<uint64_t>::max();
      o.dataset.stored_bytes = 0;
      ASSERT_OK_AND_ASSIGN(ObjectRecord back, RoundTrip(o));
      ExpectSameObject(o, back);
    }
  }
}

TEST(ObjectTest, RoundTripsEveryIndexKindCode) {
  for (IndexKind k : {IndexKind::kSingle, IndexKind::kCompact, IndexKind::kFixedArray, IndexKind::kExtensibleArray,
                      IndexKind::kBTree}) {
    ObjectRecord o = SampleDataset(DType::kU2, {5}, {kUnlimited}, {2});
    o.dataset.index = k;
    ASSERT_OK_AND_ASSIGN(ObjectRecord back, RoundTrip(o));
    EXPECT_EQ(back.dataset.index, k);
  }
}

TEST(ObjectTest, RoundTripsShapeLimits) {
  // A chunk of exactly 1 GiB, and a dataset of 2^63 - 8 bytes.
  for (auto [t, shape, chunks] : {std::tuple{DType::kU1, Dims{1ull << 40}, Dims{1ull << 30}},
                                  std::tuple{DType::kF8, Dims{1ull << 20}, Dims{1ull << 27}},
                                  std::tuple{DType::kU2, Dims{3, 3, 3}, Dims{1ull << 14, 1ull << 15, 1}},
                                  std::tuple{DType::kF8, Dims{(1ull << 60) - 1}, Dims{1}}}) {
    ObjectRecord o = SampleDataset(t, shape, shape, chunks);
    ASSERT_OK_AND_ASSIGN(ObjectRecord back, RoundTrip(o));
    ExpectSameObject(o, back);
  }
}

TEST(ObjectTest, RoundTripsRandomObjects) {
  std::mt19937_64 rng(1234);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  auto name = [&] {
    std::string s(uniform(1, 12), 'a');
    for (auto& c : s) c = static_cast<char>(uniform(1, 255));
    for (auto& c : s)
      if (c == '/') c = '_';
    if (s == "." || s == "..") s += "x";
    return s;
  };
  for (int iter = 0; iter < 300; ++iter) {
    ObjectRecord o;
    o.id = uniform(1, 1000000);
    o.kind = uniform(0, 1) ? ObjectKind::kGroup : ObjectKind::kDataset;
    std::set<std::string> anames;
    for (uint64_t n = uniform(0, 5); anames.size() < n;) anames.insert(name());
    for (const auto& n : anames) {
      if (uniform(0, 1)) {
        o.attrs.push_back({n, Attribute::String(name())});
      } else {
        DType t = kAllDTypes[uniform(0, 9)];
        std::string v(ItemSize(t) * uniform(1, 4), '\0');
        for (auto& c : v) c = static_cast<char>(rng());
        o.attrs.push_back({n, Attribute::Numbers(t, v)});
      }
    }
    if (o.kind == ObjectKind::kGroup) {
      std::set<std::string> cnames;
      for (uint64_t n = uniform(0, 8); cnames.size() < n;) cnames.insert(name());
      for (const auto& n : cnames) {
        uint32_t len = static_cast<uint32_t>(uniform(16, 4096));
        o.children.push_back({n,
                              uniform(0, 1) ? ObjectKind::kGroup : ObjectKind::kDataset,
                              uniform(2, 1u << 30),
                              {uniform(kDataStart, kEnd - len), len}});
      }
    } else {
      DType t = kAllDTypes[uniform(0, 9)];
      size_t rank = uniform(1, 4);
      Dims shape(rank), max_shape(rank), chunks(rank);
      for (size_t d = 0; d < rank; ++d) {
        shape[d] = uniform(1, 1000);
        max_shape[d] = uniform(0, 2) ? shape[d] + uniform(0, 10) : kUnlimited;
        chunks[d] = uniform(1, 64);
      }
      o = [&] {
        ObjectRecord d = SampleDataset(t, shape, max_shape, chunks);
        d.id = o.id;
        d.attrs = o.attrs;
        return d;
      }();
      for (auto& c : o.dataset.fill) c = static_cast<char>(rng());
      o.dataset.index_root = name();
    }
    std::string p = EncodeObject(o);
    SCOPED_TRACE(iter);
    ASSERT_OK_AND_ASSIGN(ObjectRecord back, DecodeObject(p, BlockTypeOf(o.kind), kEnd));
    ExpectSameObject(o, back);
    // Every prefix of a valid payload is rejected as Corruption.
    for (size_t n = 0; n < p.size(); ++n) {
      SCOPED_TRACE("prefix " + std::to_string(n) + " of " + std::to_string(p.size()));
      ASSERT_CODE(DecodeObject(std::string_view(p).substr(0, n), BlockTypeOf(o.kind), kEnd), Code::kCorruption);
    }
  }
}

// ------------------------------------------------------------ truncation and flips

TEST(ObjectTest, RejectsTruncatedGroupAtEveryLength) {
  ObjectRecord o = SmallGroup();
  std::string p = EncodeObject(o);
  for (size_t n = 0; n < p.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_CODE(DecodeObject(std::string_view(p).substr(0, n), BlockType::kGroup, kEnd), Code::kCorruption);
  }
}

TEST(ObjectTest, RejectsTruncatedDatasetAtEveryLength) {
  for (DType t : {DType::kU1, DType::kI2, DType::kF4, DType::kF8}) {
    ObjectRecord o = SampleDataset(t, {100, 200, 3}, {kUnlimited, 200, 3}, {10, 20, 3});
    std::string p = EncodeObject(o);
    for (size_t n = 0; n < p.size(); ++n) {
      SCOPED_TRACE(std::string(DTypeName(t)) + " " + std::to_string(n));
      EXPECT_CODE(DecodeObject(std::string_view(p).substr(0, n), BlockType::kDataset, kEnd), Code::kCorruption);
    }
  }
}

TEST(ObjectTest, RejectsEveryByteFlipInAGroupBlock) {
  ObjectRecord o = SmallGroup();
  o.attrs.resize(6);
  const std::string good = EncodeBlock(BlockType::kGroup, EncodeObject(o));
  ASSERT_OK(DecodeObjectBlock(good, BlockType::kGroup));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string image = good;
    image[i] = static_cast<char>(image[i] ^ 0x01);
    SCOPED_TRACE(i);
    EXPECT_CODE(DecodeObjectBlock(image, BlockType::kGroup), Code::kCorruption);
  }
}

TEST(ObjectTest, RejectsEveryByteFlipInADatasetBlock) {
  ObjectRecord o = SampleDataset(DType::kF4, {100, 200}, {100, kUnlimited}, {10, 20});
  const std::string good = EncodeBlock(BlockType::kDataset, EncodeObject(o));
  ASSERT_OK(DecodeObjectBlock(good, BlockType::kDataset));
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string image = good;
      image[i] = static_cast<char>(image[i] ^ (1 << bit));
      SCOPED_TRACE("byte " + std::to_string(i) + " bit " + std::to_string(bit));
      EXPECT_CODE(DecodeObjectBlock(image, BlockType::kDataset), Code::kCorruption);
    }
  }
}

TEST(ObjectTest, RejectsPayloadOfTheOtherKind) {
  ObjectRecord g = SampleGroup();
  ObjectRecord d = SampleDataset(DType::kF4, {100, 200}, {100, 200}, {10, 20});
  EXPECT_CODE(DecodeObject(EncodeObject(g), BlockType::kDataset, kEnd), Code::kCorruption);
  EXPECT_CODE(DecodeObject(EncodeObject(d), BlockType::kGroup, kEnd), Code::kCorruption);
}

TEST(ObjectTest, SurvivesRandomPayloadMutations) {
  // No checksum protects a payload handed straight to DecodeObject: any
  // mutation must give a record or Corruption, never a crash or another code.
  std::mt19937_64 rng(42);
  const std::string seeds[] = {
      EncodeObject(SampleDataset(DType::kI4, {100, 200}, {kUnlimited, 200}, {10, 20})),
      [] {
        ObjectRecord g = SmallGroup();
        g.attrs.resize(8);
        return EncodeObject(g);
      }(),
  };
  for (const std::string& seed : seeds) {
    for (int iter = 0; iter < 20000; ++iter) {
      std::string p = seed;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % p.size();
        switch (rng() % 3) {
          case 0: p[at] = static_cast<char>(rng()); break;
          case 1: p.erase(at, 1 + rng() % 8); break;
          default: p.insert(at, 1 + rng() % 8, static_cast<char>(rng())); break;
        }
        if (p.empty()) p = "x";
      }
      for (BlockType t : {BlockType::kGroup, BlockType::kDataset}) {
        auto r = DecodeObject(p, t, kEnd);
        if (!r) {
          ASSERT_EQ(r.error().code(), Code::kCorruption) << r.error().ToString();
        }
      }
    }
  }
}

// ------------------------------------------------------------ hostile payloads
//
// Payloads written field by field, so that each test breaks one field and
// keeps the rest valid. The baseline of each builder must decode (checked
// below), so a rejection is caused by the broken field alone.

struct RawAttr {
  std::string name;
  uint8_t kind = 0;
  uint8_t dtype = 0;
  std::string value;
  std::optional<uint32_t> value_len;  // declared length, if not value.size()
};

struct RawChild {
  std::string name;
  uint8_t kind = 1;
  uint64_t id = 2;
  uint64_t addr = kDataStart;
  uint32_t len = 64;
};

void PutAttrs(std::string* s, const std::vector<RawAttr>& attrs, std::optional<uint32_t> count) {
  PutU32(s, count.value_or(static_cast<uint32_t>(attrs.size())));
  for (const auto& a : attrs) {
    PutShortString(s, a.name);
    PutU8(s, a.kind);
    PutU8(s, a.dtype);
    PutU32(s, a.value_len.value_or(static_cast<uint32_t>(a.value.size())));
    s->append(a.value);
  }
}

struct RawGroup {
  uint64_t id = 5;
  std::vector<RawAttr> attrs = {{"a", 0, 0, "text"}, {"b", 1, static_cast<uint8_t>(DType::kI2), "\x01\x02\x03\x04"}};
  std::optional<uint32_t> attr_count;
  std::vector<RawChild> children = {{"x", 1, 6, kDataStart, 64}, {"y", 2, 7, kDataStart + 64, 100}};
  std::optional<uint32_t> child_count;
  std::string trailing;

  std::string Encode() const {
    std::string s;
    PutU64(&s, id);
    PutAttrs(&s, attrs, attr_count);
    PutU32(&s, child_count.value_or(static_cast<uint32_t>(children.size())));
    for (const auto& c : children) {
      PutShortString(&s, c.name);
      PutU8(&s, c.kind);
      PutU64(&s, c.id);
      PutU64(&s, c.addr);
      PutU32(&s, c.len);
    }
    return s + trailing;
  }
};

struct RawDataset {
  uint64_t id = 9;
  std::vector<RawAttr> attrs = {{"units", 0, 0, "K"}};
  std::optional<uint32_t> attr_count;
  uint8_t dtype = static_cast<uint8_t>(DType::kF4);
  std::optional<uint8_t> rank;  // default: shape.size()
  uint8_t index = static_cast<uint8_t>(IndexKind::kFixedArray);
  uint8_t flags = 0;
  Dims shape = {100, 200}, max_shape = {kUnlimited, 200}, chunks = {10, 20};
  std::string fill = std::string("\x00\x00\xc0\x7f", 4);
  uint64_t allocated = 3, stored = 2400;
  std::string root = std::string(29, '\x01');
  std::optional<uint32_t> root_len;
  std::string trailing;

  std::string Encode() const {
    std::string s;
    PutU64(&s, id);
    PutAttrs(&s, attrs, attr_count);
    PutU8(&s, dtype);
    PutU8(&s, rank.value_or(static_cast<uint8_t>(shape.size())));
    PutU8(&s, index);
    PutU8(&s, flags);
    for (uint64_t v : shape) PutU64(&s, v);
    for (uint64_t v : max_shape) PutU64(&s, v);
    for (uint64_t v : chunks) PutU64(&s, v);
    s += fill;
    PutU64(&s, allocated);
    PutU64(&s, stored);
    PutU32(&s, root_len.value_or(static_cast<uint32_t>(root.size())));
    return s + root + trailing;
  }
};

using GroupEdit = std::pair<const char*, std::function<void(RawGroup&)>>;
using DatasetEdit = std::pair<const char*, std::function<void(RawDataset&)>>;

void ExpectEachGroupEditRejected(const std::vector<GroupEdit>& edits) {
  for (const auto& [what, edit] : edits) {
    RawGroup g;
    edit(g);
    SCOPED_TRACE(what);
    auto r = DecodeObject(g.Encode(), BlockType::kGroup, kEnd);
    EXPECT_CODE(r, Code::kCorruption);
  }
}

void ExpectEachDatasetEditRejected(const std::vector<DatasetEdit>& edits) {
  for (const auto& [what, edit] : edits) {
    RawDataset d;
    edit(d);
    SCOPED_TRACE(what);
    auto r = DecodeObject(d.Encode(), BlockType::kDataset, kEnd);
    EXPECT_CODE(r, Code::kCorruption);
  }
}

TEST(ObjectTest, HandBuiltBaselinesDecodeAndMatchTheEncoder) {
  ASSERT_OK_AND_ASSIGN(ObjectRecord g, DecodeObject(RawGroup().Encode(), BlockType::kGroup, kEnd));
  EXPECT_EQ(EncodeObject(g), RawGroup().Encode());
  ASSERT_EQ(g.children.size(), 2u);
  EXPECT_EQ(g.children[1].kind, ObjectKind::kDataset);
  EXPECT_EQ(g.children[1].block, (BlockRef{kDataStart + 64, 100}));
  ASSERT_EQ(g.attrs.size(), 2u);
  EXPECT_EQ(g.attrs[1].value.kind, Attribute::Kind::kNumeric);
  EXPECT_EQ(g.attrs[1].value.dtype, DType::kI2);

  ASSERT_OK_AND_ASSIGN(ObjectRecord d, DecodeObject(RawDataset().Encode(), BlockType::kDataset, kEnd));
  EXPECT_EQ(EncodeObject(d), RawDataset().Encode());
  EXPECT_EQ(d.dataset.dtype, DType::kF4);
  EXPECT_EQ(d.dataset.max_shape, (Dims{kUnlimited, 200}));
  EXPECT_EQ(d.dataset.stored_bytes, 2400u);
}

TEST(ObjectTest, RejectsBadObjectIdAndAttributeCounts) {
  ExpectEachGroupEditRejected({
      {"id 0", [](RawGroup& g) { g.id = 0; }},
      {"attribute count over the limit", [](RawGroup& g) { g.attr_count = 65537; }},
      {"attribute count 2^32-1", [](RawGroup& g) { g.attr_count = 0xffffffffu; }},
      {"attribute count past the bytes", [](RawGroup& g) { g.attr_count = 65536; }},
      {"attribute count one too many", [](RawGroup& g) { g.attr_count = 3; }},
  });
  ExpectEachDatasetEditRejected({
      {"id 0", [](RawDataset& d) { d.id = 0; }},
      {"attribute count past the bytes", [](RawDataset& d) { d.attr_count = 40000; }},
  });
}

TEST(ObjectTest, RejectsBadAttributeNames) {
  for (std::string bad : {std::string(""), std::string("."), std::string(".."), std::string("a/b"), std::string("/"),
                          std::string("a\0b", 3), std::string(kMaxNameBytes + 1, 'n')}) {
    RawGroup g;
    g.attrs[0].name = bad;
    g.attrs[1].name =
        "\x7f"
        "b";  // still sorts after
    SCOPED_TRACE("name '" + bad + "'");
    EXPECT_CODE(DecodeObject(g.Encode(), BlockType::kGroup, kEnd), Code::kCorruption);
  }
}

TEST(ObjectTest, RejectsUnsortedOrDuplicateAttributes) {
  ExpectEachGroupEditRejected({
      {"unsorted", [](RawGroup& g) { std::swap(g.attrs[0], g.attrs[1]); }},
      {"duplicate", [](RawGroup& g) { g.attrs[1].name = g.attrs[0].name; }},
      {"prefix after longer",
       [](RawGroup& g) {
         g.attrs[0].name = "ab";
         g.attrs[1].name = "a";
       }},
  });
}

TEST(ObjectTest, RejectsBadAttributeValues) {
  ExpectEachGroupEditRejected({
      {"unknown kind", [](RawGroup& g) { g.attrs[0].kind = 2; }},
      {"kind 255", [](RawGroup& g) { g.attrs[0].kind = 255; }},
      {"numeric dtype 0", [](RawGroup& g) { g.attrs[1].dtype = 0; }},
      {"numeric dtype 11", [](RawGroup& g) { g.attrs[1].dtype = 11; }},
      {"numeric, empty", [](RawGroup& g) { g.attrs[1].value.clear(); }},
      {"numeric, partial element", [](RawGroup& g) { g.attrs[1].value = "\x01\x02\x03"; }},
      {"numeric f8, 12 bytes",
       [](RawGroup& g) {
         g.attrs[1].dtype = static_cast<uint8_t>(DType::kF8);
         g.attrs[1].value = std::string(12, '\0');
       }},
      {"value over the size limit", [](RawGroup& g) { g.attrs[0].value = std::string(kMaxAttributeBytes + 1, 'v'); }},
      {"declared length past the bytes", [](RawGroup& g) { g.attrs[1].value_len = 0x7fffffff; }},
      {"declared length 2^32-1", [](RawGroup& g) { g.attrs[0].value_len = 0xffffffffu; }},
  });
}

TEST(ObjectTest, RejectsBadChildCounts) {
  ExpectEachGroupEditRejected({
      {"count over the limit", [](RawGroup& g) { g.child_count = (1u << 24) + 1; }},
      {"count 2^32-1", [](RawGroup& g) { g.child_count = 0xffffffffu; }},
      {"count at the limit, past the bytes", [](RawGroup& g) { g.child_count = 1u << 24; }},
      {"one too many", [](RawGroup& g) { g.child_count = 3; }},
      {"one too few (trailing entry)", [](RawGroup& g) { g.child_count = 1; }},
  });
}

TEST(ObjectTest, RejectsBadChildNames) {
  for (std::string bad : {std::string(""), std::string("."), std::string(".."), std::string("a/b"), std::string("a/"),
                          std::string("\0", 1), std::string(kMaxNameBytes + 1, 'n')}) {
    RawGroup g;
    g.children[0].name = bad;
    g.children[1].name =
        "\x7f"
        "y";
    SCOPED_TRACE("name '" + bad + "'");
    EXPECT_CODE(DecodeObject(g.Encode(), BlockType::kGroup, kEnd), Code::kCorruption);
  }
}

TEST(ObjectTest, RejectsUnsortedOrDuplicateChildren) {
  ExpectEachGroupEditRejected({
      {"unsorted", [](RawGroup& g) { std::swap(g.children[0], g.children[1]); }},
      {"duplicate name", [](RawGroup& g) { g.children[1].name = g.children[0].name; }},
      {"byte order, not locale order",
       [](RawGroup& g) {
         g.children[0].name = "b";
         g.children[1].name = "B";
       }},
  });
}

TEST(ObjectTest, RejectsBadChildKindsIdsAndBlocks) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  ExpectEachGroupEditRejected({
      {"kind 0", [](RawGroup& g) { g.children[0].kind = 0; }},
      {"kind 3", [](RawGroup& g) { g.children[1].kind = 3; }},
      {"id 0", [](RawGroup& g) { g.children[0].id = 0; }},
      {"id of the root", [](RawGroup& g) { g.children[1].id = kRootId; }},
      {"no block",
       [](RawGroup& g) {
         g.children[0].addr = 0;
         g.children[0].len = 0;
       }},
      {"address 0 with a length", [](RawGroup& g) { g.children[0].addr = 0; }},
      {"block in the superblock area", [](RawGroup& g) { g.children[0].addr = kSuperblockSlot1; }},
      {"block one byte before data", [](RawGroup& g) { g.children[0].addr = kDataStart - 1; }},
      {"block past file_end", [](RawGroup& g) { g.children[1].addr = kEnd - 99; }},
      {"block at file_end", [](RawGroup& g) { g.children[1].addr = kEnd; }},
      {"block shorter than a header", [](RawGroup& g) { g.children[0].len = 15; }},
      {"block length 0", [](RawGroup& g) { g.children[0].len = 0; }},
      {"block longer than the limit", [](RawGroup& g) { g.children[0].len = 0xffffffffu; }},
      {"address wraps", [](RawGroup& g) { g.children[1].addr = max - 50; }},
  });
}

TEST(ObjectTest, RejectsTrailingBytes) {
  ExpectEachGroupEditRejected({{"one byte", [](RawGroup& g) { g.trailing = "x"; }},
                               {"a whole child", [](RawGroup& g) { g.trailing = std::string(31, '\0'); }}});
  ExpectEachDatasetEditRejected({{"one byte", [](RawDataset& d) { d.trailing = "x"; }},
                                 {"eight bytes", [](RawDataset& d) { d.trailing = std::string(8, '\0'); }}});
}

TEST(ObjectTest, RejectsBadDTypeRankIndexAndFlags) {
  ExpectEachDatasetEditRejected({
      {"dtype 0", [](RawDataset& d) { d.dtype = 0; }},
      {"dtype 11", [](RawDataset& d) { d.dtype = 11; }},
      {"dtype 255", [](RawDataset& d) { d.dtype = 255; }},
      {"rank 0", [](RawDataset& d) { d.shape = d.max_shape = d.chunks = {}; }},
      {"rank 0, dims present", [](RawDataset& d) { d.rank = 0; }},
      {"rank 33", [](RawDataset& d) { d.shape = d.max_shape = d.chunks = Dims(33, 1); }},
      {"rank 255", [](RawDataset& d) { d.rank = 255; }},
      {"rank larger than the dims present", [](RawDataset& d) { d.rank = 3; }},
      {"rank smaller than the dims present", [](RawDataset& d) { d.rank = 1; }},
      {"index kind 0 (auto)", [](RawDataset& d) { d.index = 0; }},
      {"index kind 6", [](RawDataset& d) { d.index = 6; }},
      {"filtered flag without a filter list", [](RawDataset& d) { d.flags = 2; }},
      {"sparse flag without a defined count", [](RawDataset& d) { d.flags = 4; }},
      {"unknown flag 8", [](RawDataset& d) { d.flags = 8; }},
      {"flags 0x80", [](RawDataset& d) { d.flags = 0x80; }},
  });
}

TEST(ObjectTest, RejectsBadShapes) {
  ExpectEachDatasetEditRejected({
      // A zero dimension is fine while it can grow (max shape >= 1), not when
      // the max shape is zero as well.
      {"zero dimension that cannot grow", [](RawDataset& d) { d.shape[1] = d.max_shape[1] = 0; }},
      {"unlimited dimension in the shape", [](RawDataset& d) { d.shape[0] = kUnlimited; }},
      {"max shape below the shape", [](RawDataset& d) { d.max_shape[1] = 199; }},
      {"max shape zero", [](RawDataset& d) { d.max_shape[1] = 0; }},
      {"more than 2^63 bytes",
       [](RawDataset& d) {
         d.dtype = static_cast<uint8_t>(DType::kU1);
         d.fill = std::string(1, '\0');
         d.shape = d.max_shape = {1ull << 62, 2};
         d.chunks = {1, 1};
       }},
      {"more than 2^63 bytes by item size",
       [](RawDataset& d) {
         d.shape = d.max_shape = {1ull << 61, 1};
         d.chunks = {1, 1};
       }},
      {"more than 2^63 bytes across 32 dims",
       [](RawDataset& d) {
         d.dtype = static_cast<uint8_t>(DType::kU1);
         d.fill = std::string(1, '\0');
         d.shape = d.max_shape = Dims(32, 4);
         d.chunks = Dims(32, 1);
       }},
  });
}

TEST(ObjectTest, RejectsBadChunkShapes) {
  ExpectEachDatasetEditRejected({
      {"zero chunk", [](RawDataset& d) { d.chunks[0] = 0; }},
      {"unlimited chunk", [](RawDataset& d) { d.chunks[1] = kUnlimited; }},
      {"chunk of 1 GiB + 1 byte",
       [](RawDataset& d) {
         d.dtype = static_cast<uint8_t>(DType::kU1);
         d.fill = std::string(1, '\0');
         d.chunks = {(1ull << 30) + 1, 1};
       }},
      {"chunk of 1 GiB + 1 element",
       [](RawDataset& d) {
         d.chunks = {(1ull << 28) + 1, 1};
       }},
      {"chunk over 1 GiB as a product",
       [](RawDataset& d) {
         d.chunks = {1u << 15, 1u << 14};
       }},
      {"chunk of 2^64 bytes",
       [](RawDataset& d) {
         d.chunks = {1ull << 32, 1ull << 32};
       }},
  });
}

TEST(ObjectTest, RejectsFillOfTheWrongLength) {
  ExpectEachDatasetEditRejected({
      {"no fill", [](RawDataset& d) { d.fill.clear(); }},
      {"fill one byte short", [](RawDataset& d) { d.fill.pop_back(); }},
      {"fill one byte long", [](RawDataset& d) { d.fill.push_back('\0'); }},
      {"f8 fill on an f4 dataset", [](RawDataset& d) { d.fill = std::string(8, '\0'); }},
      {"u1 fill on an f4 dataset, no root",
       [](RawDataset& d) {
         d.fill = std::string(1, '\0');
         d.root.clear();
       }},
  });
}

TEST(ObjectTest, RejectsBadIndexRoots) {
  ExpectEachDatasetEditRejected({
      {"root over 64 KiB", [](RawDataset& d) { d.root = std::string(64 * 1024 + 1, 'r'); }},
      {"root length past the bytes", [](RawDataset& d) { d.root_len = 30; }},
      {"root length 2^32-1", [](RawDataset& d) { d.root_len = 0xffffffffu; }},
      {"root length short (trailing bytes)", [](RawDataset& d) { d.root_len = 28; }},
  });
}

TEST(ObjectTest, RejectsTruncatedDatasetFields) {
  ExpectEachDatasetEditRejected({
      {"chunk dims missing", [](RawDataset& d) { d.chunks.pop_back(); }},
      {"max shape missing",
       [](RawDataset& d) {
         d.max_shape.clear();
         d.rank = 2;
       }},
  });
}

// ------------------------------------------------------------ shape validation

TEST(ObjectTest, ValidateDatasetShapeReturnsInvalidArgument) {
  EXPECT_OK(ValidateDatasetShape(DType::kF4, {10, 20}, {kUnlimited, 20}, {5, 5}));
  EXPECT_OK(ValidateDatasetShape(DType::kU1, {1}, {1}, {1ull << 30}));
  EXPECT_OK(ValidateDatasetShape(DType::kU1, Dims(32, 2), Dims(32, 2), Dims(32, 1)));
  const struct {
    const char* what;
    DType t;
    Dims shape, max_shape, chunks;
  } bad[] = {
      {"rank 0", DType::kU1, {}, {}, {}},
      {"rank 33", DType::kU1, Dims(33, 1), Dims(33, 1), Dims(33, 1)},
      {"max shape rank", DType::kU1, {1, 2}, {1}, {1, 1}},
      {"chunk rank", DType::kU1, {1, 2}, {1, 2}, {1, 1, 1}},
      {"zero shape", DType::kU1, {0}, {0}, {1}},
      {"unlimited shape", DType::kU1, {kUnlimited}, {kUnlimited}, {1}},
      {"max below shape", DType::kU1, {5}, {4}, {1}},
      {"zero chunk", DType::kU1, {5}, {5}, {0}},
      {"chunk over 1 GiB", DType::kU2, {5}, {5}, {1ull << 29 | 1}},
      {"dataset over 2^63 bytes", DType::kU8, {1ull << 60}, {1ull << 60}, {1}},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    EXPECT_CODE(ValidateDatasetShape(b.t, b.shape, b.max_shape, b.chunks), Code::kInvalidArgument);
  }
}

TEST(ObjectTest, MapsObjectKindsToBlockTypes) {
  EXPECT_EQ(BlockTypeOf(ObjectKind::kGroup), BlockType::kGroup);
  EXPECT_EQ(BlockTypeOf(ObjectKind::kDataset), BlockType::kDataset);
}

}  // namespace object_test
}  // namespace
}  // namespace slabfs::engine
