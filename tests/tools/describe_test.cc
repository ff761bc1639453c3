#include "tools/describe.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::tools {
namespace {

template <typename T>
Json Element(DType t, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // the test machine is little-endian, as the format is
  return ElementToJson(t, bytes);
}

TEST(ElementToJsonTest, IntegersKeepTheirExactValue) {
  EXPECT_EQ(Element<int8_t>(DType::kI1, -128).dump(), "-128");
  EXPECT_EQ(Element<int16_t>(DType::kI2, -2).dump(), "-2");
  EXPECT_EQ(Element<int32_t>(DType::kI4, std::numeric_limits<int32_t>::min()).dump(), "-2147483648");
  EXPECT_EQ(Element<int64_t>(DType::kI8, std::numeric_limits<int64_t>::min()).dump(), "-9223372036854775808");
  EXPECT_EQ(Element<uint8_t>(DType::kU1, 255).dump(), "255");
  EXPECT_EQ(Element<uint16_t>(DType::kU2, 65535).dump(), "65535");
  EXPECT_EQ(Element<uint32_t>(DType::kU4, 4294967295u).dump(), "4294967295");
  EXPECT_EQ(Element<uint64_t>(DType::kU8, std::numeric_limits<uint64_t>::max()).dump(), "18446744073709551615");
}

TEST(ElementToJsonTest, FloatsUseTheShortestForm) {
  Json f4 = Element<float>(DType::kF4, 0.1f);
  ASSERT_TRUE(f4.is_number());
  EXPECT_EQ(static_cast<float>(f4.get<double>()), 0.1f);
  EXPECT_EQ(f4.dump(), "0.1");
  EXPECT_EQ(Element<double>(DType::kF8, -2.5).dump(), "-2.5");
}

TEST(ElementToJsonTest, NonFiniteFloatsAreStrings) {
  Json nan = Element<double>(DType::kF8, std::nan(""));
  ASSERT_TRUE(nan.is_string());
  EXPECT_EQ(nan.get<std::string>(), "nan");
  Json inf = Element<float>(DType::kF4, -std::numeric_limits<float>::infinity());
  ASSERT_TRUE(inf.is_string());
}

TEST(AttributeToJsonTest, StringsNumbersAndArrays) {
  EXPECT_EQ(AttributeToJson(Attribute::String("m/s")), Json("m/s"));
  EXPECT_EQ(AttributeToJson(Attribute::Integer(-7)).dump(), "-7");
  EXPECT_EQ(AttributeToJson(Attribute::Float(2.5)).dump(), "2.5");
  EXPECT_EQ(AttributeToJson(Attribute::Numbers(DType::kU1, std::string("\x01\x02\x03", 3))).dump(), "[1,2,3]");
}

Description SampleDataset() {
  Description d;
  d.path = "/run1/temp";
  d.object.id = 7;
  d.object.kind = ObjectKind::kDataset;
  DatasetInfo i;
  i.dtype = DType::kF4;
  i.shape = {2000, 2000};
  i.max_shape = {2000, 2000};
  i.chunks = {100, 100};
  float fill = -1.5f;
  i.fill.assign(reinterpret_cast<const char*>(&fill), sizeof(fill));
  i.index = IndexKind::kFixedArray;
  i.num_elements = 4000000;
  i.size_bytes = 16000000;
  i.num_chunks = 400;
  i.allocated_chunks = 3;
  i.stored_bytes = 120000;
  i.index_bytes = 3200;
  d.dataset = i;
  d.attributes.emplace_back("units", Attribute::String("K"));
  d.attributes.emplace_back("scale", Attribute::Float(0.5));
  return d;
}

TEST(DescriptionTest, DatasetJsonHasEveryField) {
  Json j = DescriptionToJson(SampleDataset());
  EXPECT_EQ(j["path"], "/run1/temp");
  EXPECT_EQ(j["kind"], "dataset");
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["dtype"], "f4");
  EXPECT_EQ(j["shape"], Json::parse("[2000,2000]"));
  EXPECT_EQ(j["max_shape"], Json::parse("[2000,2000]"));
  EXPECT_EQ(j["chunks"], Json::parse("[100,100]"));
  EXPECT_EQ(j["fill"], -1.5);
  EXPECT_EQ(j["index"], std::string(IndexKindName(IndexKind::kFixedArray)));
  EXPECT_EQ(j["num_elements"], 4000000);
  EXPECT_EQ(j["size_bytes"], 16000000);
  EXPECT_EQ(j["num_chunks"], 400);
  EXPECT_EQ(j["allocated_chunks"], 3);
  EXPECT_EQ(j["stored_bytes"], 120000);
  EXPECT_EQ(j["index_bytes"], 3200);
  EXPECT_EQ(j["filters"], "none");
  EXPECT_DOUBLE_EQ(j["compression_ratio"].get<double>(), 16000000.0 / 120000.0);
  EXPECT_EQ(j["attributes"]["units"], "K");
  EXPECT_EQ(j["attributes"]["scale"], 0.5);
}

// The keys of `slab info` and `slab info --json`, in their order (scripts
// read them; DescriptionTo* take them from VisitFields).
TEST(DescriptionTest, DatasetFieldsComeInTheirOrder) {
  const std::vector<std::string> want = {"path",
                                         "kind",
                                         "id",
                                         "dtype",
                                         "shape",
                                         "max_shape",
                                         "chunks",
                                         "fill",
                                         "index",
                                         "filters",
                                         "sparse",
                                         "num_elements",
                                         "defined_elements",
                                         "size_bytes",
                                         "num_chunks",
                                         "allocated_chunks",
                                         "stored_bytes",
                                         "compression_ratio",
                                         "index_bytes",
                                         "attributes"};
  std::vector<std::string> json_keys;
  const Json j = DescriptionToJson(SampleDataset());
  for (const auto& [key, value] : j.items()) json_keys.push_back(key);
  EXPECT_EQ(json_keys, want);
  std::vector<std::string> text_keys;
  const std::string text = DescriptionToText(SampleDataset());
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    if (!line.starts_with("  ")) text_keys.push_back(line.substr(0, line.find(':')));
    pos = end + 1;
  }
  EXPECT_EQ(text_keys, want);
  EXPECT_NE(text.find("fill: -1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sparse: no\n"), std::string::npos) << text;
}

TEST(DescriptionTest, ShowsThePipelineAndTheRatio) {
  Description d = SampleDataset();
  d.dataset->filters = "shuffle,deflate=6,checksum";
  d.dataset->size_bytes = 342;
  d.dataset->stored_bytes = 100;
  Json j = DescriptionToJson(d);
  EXPECT_EQ(j["filters"], "shuffle,deflate=6,checksum");
  EXPECT_DOUBLE_EQ(j["compression_ratio"].get<double>(), 3.42);
  std::string text = DescriptionToText(d);
  EXPECT_NE(text.find("filters: shuffle,deflate=6,checksum\n"), std::string::npos) << text;
  EXPECT_NE(text.find("compression_ratio: 3.42x\n"), std::string::npos) << text;

  // Nothing stored: no ratio.
  d.dataset->stored_bytes = 0;
  EXPECT_TRUE(DescriptionToJson(d)["compression_ratio"].is_null());
  EXPECT_NE(DescriptionToText(d).find("compression_ratio: -\n"), std::string::npos);
  d.dataset->filters = "";
  EXPECT_NE(DescriptionToText(d).find("filters: none\n"), std::string::npos);
}

TEST(DescriptionTest, ShowsSparseAndDefinedElements) {
  Description d = SampleDataset();
  Json j = DescriptionToJson(d);
  EXPECT_EQ(j["sparse"], false);
  EXPECT_EQ(j["defined_elements"], 0);
  EXPECT_NE(DescriptionToText(d).find("sparse: no\n"), std::string::npos);
  d.dataset->sparse = true;
  d.dataset->defined_elements = 1234;
  j = DescriptionToJson(d);
  EXPECT_EQ(j["sparse"], true);
  EXPECT_EQ(j["defined_elements"], 1234);
  std::string text = DescriptionToText(d);
  EXPECT_NE(text.find("sparse: yes\n"), std::string::npos) << text;
  EXPECT_NE(text.find("defined_elements: 1234\n"), std::string::npos) << text;
}

TEST(DescriptionTest, UnlimitedDimensionIsNull) {
  Description d = SampleDataset();
  d.dataset->max_shape = {kUnlimited, 2000};
  Json j = DescriptionToJson(d);
  EXPECT_TRUE(j["max_shape"][0].is_null());
  EXPECT_EQ(j["max_shape"][1], 2000);
}

TEST(DescriptionTest, GroupJsonCountsChildren) {
  Description d;
  d.path = "/";
  d.object.id = kRootId;
  d.object.kind = ObjectKind::kGroup;
  d.object.num_children = 3;
  Json j = DescriptionToJson(d);
  EXPECT_EQ(j["kind"], "group");
  EXPECT_EQ(j["num_children"], 3);
  EXPECT_TRUE(j["attributes"].is_object());
  EXPECT_FALSE(j.contains("dtype"));
}

TEST(DescriptionTest, TextHasTheSameKeys) {
  std::string text = DescriptionToText(SampleDataset());
  for (const char* line : {"path: /run1/temp\n", "kind: dataset\n", "dtype: f4\n", "shape: 2000,2000\n",
                           "chunks: 100,100\n", "fill: -1.5\n", "stored_bytes: 120000\n", "filters: none\n",
                           "compression_ratio: 133.33x\n", "attributes: 2\n", "  units = K\n", "  scale = 0.5\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
}

}  // namespace
}  // namespace slabfs::tools
