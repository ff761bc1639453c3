#include "fusefs/attr_types.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

template <typename T>
T ElementOf(const Attribute& a, size_t i) {
  T v;
  std::memcpy(&v, a.data.data() + i * sizeof v, sizeof v);
  return v;
}

TEST(AttrTypesTest, FormatsDtypeAndLength) {
  EXPECT_EQ(FormatAttrType(Attribute::Float(0.5)), "f8");
  EXPECT_EQ(FormatAttrType(Attribute::Integer(3)), "i8");
  int16_t pair[2] = {-1, 7};
  EXPECT_EQ(FormatAttrType(Attribute::Numbers(DType::kI2, std::string(reinterpret_cast<char*>(pair), 4))), "i2[2]");
  EXPECT_EQ(FormatAttrType(Attribute::String("m/s")), "");
}

TEST(AttrTypesTest, ParsesTypes) {
  auto t = ParseAttrType("f8");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->dtype, DType::kF8);
  EXPECT_FALSE(t->count.has_value());
  t = ParseAttrType("i2[3]\n");  // setfattr and copies may end it with a newline or NUL
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->dtype, DType::kI2);
  EXPECT_EQ(t->count, 3u);
  t = ParseAttrType(std::string_view("<u4\0", 4));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->dtype, DType::kU4);
  EXPECT_EQ(ParseAttrType("float32").value().dtype, DType::kF4);
}

TEST(AttrTypesTest, RefusesBadTypes) {
  for (const char* bad : {"", "c8", "f4[", "f4[0]", "f4[-1]", "f4[x]", "f4[2]x", "[2]", "f4[18446744073709551616]"}) {
    auto t = ParseAttrType(bad);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_EQ(t.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(AttrTypesTest, ReadsValuesAsTheType) {
  auto a = ParseTypedValue({DType::kI2, 2}, "-2000, 30000");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->dtype, DType::kI2);
  EXPECT_EQ(a->count(), 2u);
  EXPECT_EQ(ElementOf<int16_t>(*a, 0), -2000);
  EXPECT_EQ(ElementOf<int16_t>(*a, 1), 30000);
  a = ParseTypedValue({DType::kF4, std::nullopt}, "nan");
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(std::isnan(ElementOf<float>(*a, 0)));
  // The text of an attribute reads back as the same bytes.
  Attribute f = Attribute::Float(0.1);
  auto back = ParseTypedValue({DType::kF8, std::nullopt}, f.ToText());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->data, f.data);
}

TEST(AttrTypesTest, RefusesValuesOfAnotherTypeOrLength) {
  EXPECT_FALSE(ParseTypedValue({DType::kI1, std::nullopt}, "300").has_value());
  EXPECT_FALSE(ParseTypedValue({DType::kI4, std::nullopt}, "2.5").has_value());
  EXPECT_FALSE(ParseTypedValue({DType::kF8, std::nullopt}, "K").has_value());
  EXPECT_FALSE(ParseTypedValue({DType::kF8, std::nullopt}, "").has_value());
  EXPECT_FALSE(ParseTypedValue({DType::kF8, std::nullopt}, "1,,2").has_value());
  EXPECT_FALSE(ParseTypedValue({DType::kI2, 3}, "1,2").has_value());
  EXPECT_TRUE(ParseTypedValue({DType::kI2, 2}, "1,2").has_value());
}

TEST(AttrTypesTest, AKnownTypeIsKeptOnlyWithoutLoss) {
  auto a = ReadAsKnownType(DType::kF8, "0.125");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->dtype, DType::kF8);
  EXPECT_TRUE(ReadAsKnownType(DType::kF4, "0.5").has_value());
  EXPECT_TRUE(ReadAsKnownType(DType::kF4, "10.25").has_value());
  // 0.1 is not an f4: keeping the f4 would change the value.
  EXPECT_FALSE(ReadAsKnownType(DType::kF4, "0.1").has_value());
  EXPECT_FALSE(ReadAsKnownType(DType::kI2, "0.5").has_value());
  EXPECT_FALSE(ReadAsKnownType(DType::kU1, "-1").has_value());
  EXPECT_FALSE(ReadAsKnownType(DType::kI8, "counts").has_value());
  auto n = ReadAsKnownType(DType::kI8, "1,2,3");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->count(), 3u);
}

TEST(AttrTypeKeeperTest, ATypeWaitsForItsValueOnce) {
  AttrTypeKeeper k;
  k.Wait(5, "scale", {DType::kF4, std::nullopt});
  EXPECT_FALSE(k.Take(5, "other").has_value());
  EXPECT_FALSE(k.Take(6, "scale").has_value());
  auto t = k.Take(5, "scale");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->dtype, DType::kF4);
  EXPECT_FALSE(k.Take(5, "scale").has_value());
}

TEST(AttrTypeKeeperTest, DropAndForget) {
  AttrTypeKeeper k;
  k.Wait(5, "a", {DType::kI2, std::nullopt});
  k.Wait(5, "b", {DType::kI2, std::nullopt});
  k.Wait(6, "a", {DType::kI2, std::nullopt});
  EXPECT_TRUE(k.Drop(5, "a"));
  EXPECT_FALSE(k.Drop(5, "a"));
  k.Forget(5);
  EXPECT_FALSE(k.Take(5, "b").has_value());
  EXPECT_TRUE(k.Take(6, "a").has_value());
}

TEST(AttrTypeKeeperTest, ATypeWaitsOnlyForTheWindow) {
  AttrTypeKeeper k(std::chrono::milliseconds(20));
  k.Wait(5, "a", {DType::kI2, std::nullopt});
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_FALSE(k.Take(5, "a").has_value());
}

TEST(AttrTypeKeeperTest, KeepsABoundedNumber) {
  AttrTypeKeeper k;
  for (int i = 0; i < 10000; ++i) k.Wait(static_cast<ObjectId>(i), "a", {DType::kU1, std::nullopt});
  int kept = 0;
  for (int i = 0; i < 10000; ++i) kept += k.Take(static_cast<ObjectId>(i), "a").has_value();
  EXPECT_LE(kept, 4096);
  EXPECT_TRUE(kept > 0);
}

}  // namespace
}  // namespace slabfs::fusefs
