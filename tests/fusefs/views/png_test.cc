// The .png views' parts: the levels and their range (png_scale.h), the
// colormaps, the spill buffer, the libpng wrapper, which views are
// pictures, and whole pictures of datasets decoded again with libpng's
// reader (test_mount_png.py mounts them).
#include <png.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fusefs/views/colormap.h"
#include "fusefs/views/png_encoder.h"
#include "fusefs/views/png_scale.h"
#include "fusefs/views/png_view.h"
#include "fusefs/views/spill_buffer.h"
#include "fusefs/views/view_layout.h"
#include "fusefs/views/view_name.h"
#include "slabfs/slice.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::fusefs::views {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Raw(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

TEST(PngViewNameTest, PngSuffixAloneOrAfterASlice) {
  auto v = ParseViewName("frames[3].png");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dataset, "frames");
  EXPECT_EQ(v->slice, "3");
  EXPECT_EQ(v->kind, ViewKind::kPng);
  v = ParseViewName("temperature.png");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dataset, "temperature");
  EXPECT_FALSE(v->slice.has_value());
  EXPECT_EQ(v->kind, ViewKind::kPng);
  EXPECT_FALSE(ParseViewName(".png").has_value());
}

TEST(PngScaleTest, PercentileIsNumpysLinear) {
  std::vector<double> v(101);
  std::iota(v.begin(), v.end(), 1.0);  // 1..101
  std::shuffle(v.begin(), v.end(), std::mt19937(7));
  EXPECT_DOUBLE_EQ(Percentile(v, 1), 2.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 100.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 51.0);
  std::vector<double> two{10, 0};
  EXPECT_DOUBLE_EQ(Percentile(two, 1), 0.1);  // numpy.percentile([0, 10], 1)
  EXPECT_DOUBLE_EQ(Percentile(two, 99), 9.9);
  std::vector<double> one{3};
  EXPECT_EQ(Percentile(one, 99), 3.0);
  std::vector<double> none;
  EXPECT_TRUE(std::isnan(Percentile(none, 1)));
}

TEST(PngScaleTest, LevelsAtTheEdges) {
  PngScale s{.lo = 10, .hi = 20, .missing = {-9999}};
  EXPECT_EQ(LevelOf(10, s), 0);
  EXPECT_EQ(LevelOf(5, s), 0);
  EXPECT_EQ(LevelOf(20, s), 255);
  EXPECT_EQ(LevelOf(1e300, s), 255);
  EXPECT_EQ(LevelOf(15, s), 128);  // 127.5 rounds up
  EXPECT_EQ(LevelOf(kNaN, s), 0);
  EXPECT_EQ(LevelOf(-kInf, s), 0);
  EXPECT_EQ(LevelOf(kInf, s), 255);
  EXPECT_EQ(LevelOf(-9999, s), 0);
  PngScale flat{.lo = 3, .hi = 3, .missing = {}};  // a constant picture
  EXPECT_EQ(LevelOf(3, flat), 0);
  EXPECT_EQ(LevelOf(4, flat), 255);
}

TEST(PngScaleTest, RangeLeavesOutNonFiniteAndMissingValues) {
  std::vector<double> in{kNaN, kInf, -kInf, -9999, 1, 2, 3, -9999};
  const std::string raw = Raw(in);
  std::vector<double> values;
  const std::vector<double> missing{-9999};
  CollectRangeValues(DType::kF8, raw.data(), in.size(), missing, values);
  EXPECT_EQ(values, (std::vector<double>{1, 2, 3}));
  PngScale s = ScaleFromValues(values, missing);
  EXPECT_DOUBLE_EQ(s.lo, 1.02);
  EXPECT_DOUBLE_EQ(s.hi, 2.98);
  std::vector<double> empty;
  PngScale z = ScaleFromValues(empty, {});
  EXPECT_EQ(z.lo, 0);
  EXPECT_EQ(z.hi, 0);
}

TEST(PngScaleTest, LevelsOfEachDtype) {
  const PngScale s{.lo = 0, .hi = 255, .missing = {}};
  uint8_t out[3];
  const int16_t i2[3] = {-5, 100, 300};
  ToLevels(DType::kI2, reinterpret_cast<const char*>(i2), 3, s, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 100);
  EXPECT_EQ(out[2], 255);
  const uint64_t u8[3] = {0, 7, ~uint64_t{0}};
  ToLevels(DType::kU8, reinterpret_cast<const char*>(u8), 3, s, out);
  EXPECT_EQ(out[1], 7);
  EXPECT_EQ(out[2], 255);
  const float f4[3] = {1.4f, 1.6f, std::nanf("")};
  ToLevels(DType::kF4, reinterpret_cast<const char*>(f4), 3, s, out);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 2);
  EXPECT_EQ(out[2], 0);
}

TEST(PngScaleTest, SmallPicturesAreReadWhole) {
  EXPECT_TRUE(PlanSample(1024, 1024, 1).whole);
  EXPECT_TRUE(PlanSample(512, 512, 4).whole);
  EXPECT_FALSE(PlanSample(1025, 1024, 1).whole);
}

TEST(PngScaleTest, LargePicturesAreSampledInDisjointBandsWithinBudget) {
  for (auto [h, w, c] : {std::tuple<uint64_t, uint64_t, uint64_t>{4096, 4096, 1},
                         {100000, 20, 1},
                         {20, 100000, 3},
                         {3000, 1000, 4},
                         {17, 70000, 1}}) {
    SamplePlan p = PlanSample(h, w, c);
    ASSERT_FALSE(p.whole) << h << "x" << w;
    EXPECT_EQ(p.band_starts.size(), std::min<uint64_t>(kSampleBands, h));
    EXPECT_EQ(p.band_starts.front(), 0u);
    EXPECT_EQ(p.band_starts.back() + p.band_rows, h);  // the last rows too
    for (size_t i = 1; i < p.band_starts.size(); ++i) {
      EXPECT_GE(p.band_starts[i], p.band_starts[i - 1] + p.band_rows);
    }
    const uint64_t cols = (w + p.column_stride - 1) / p.column_stride;
    const uint64_t values = p.band_starts.size() * p.band_rows * cols * c;
    EXPECT_LE(values, kSampleValues + p.band_starts.size() * c) << h << "x" << w;
    EXPECT_GE(values, kSampleValues / 2) << h << "x" << w;
  }
  SamplePlan wide = PlanSample(20, 1 << 20, 1);
  EXPECT_EQ(wide.band_rows, 1u);
  EXPECT_GT(wide.column_stride, 1u);
}

TEST(ColormapTest, NamesAndEnds) {
  auto gray = NamedColormap("gray");
  ASSERT_TRUE(gray.has_value());
  for (int i = 0; i < 256; ++i) EXPECT_EQ((*gray)[i], (Rgb{uint8_t(i), uint8_t(i), uint8_t(i)}));
  auto v = NamedColormap("viridis");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ((*v)[0], (Rgb{0x44, 0x01, 0x54}));
  EXPECT_EQ((*v)[255], (Rgb{0xfd, 0xe7, 0x25}));
  auto vr = NamedColormap("viridis_r");
  ASSERT_TRUE(vr.has_value());
  EXPECT_EQ((*vr)[0], (*v)[255]);
  EXPECT_EQ((*vr)[255], (*v)[0]);
  for (const char* bad : {"", "Viridis", "jet", "_r", "gray_r_r"}) EXPECT_FALSE(NamedColormap(bad)) << bad;
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + (i >> 10));
  return s;
}

TEST(SpillBufferTest, SmallStaysInMemory) {
  SpillBuffer b;
  const std::string data = Pattern(1000);
  ASSERT_OK(b.Append(data.data(), 600));
  ASSERT_OK(b.Append(data.data() + 600, 400));
  ASSERT_OK(b.Finish());
  EXPECT_FALSE(b.spilled());
  EXPECT_EQ(b.size(), 1000u);
  std::string out(2000, 'x');
  ASSERT_OK_AND_ASSIGN(size_t n, b.ReadAt(990, 2000, out.data()));
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(out.substr(0, 10), data.substr(990));
  ASSERT_OK_AND_ASSIGN(size_t past, b.ReadAt(1000, 5, out.data()));
  EXPECT_EQ(past, 0u);
}

TEST(SpillBufferTest, LargeMovesToATemporaryFileAndReadsBack) {
  SpillBuffer b;
  const std::string data = Pattern(3 * SpillBuffer::kMemoryBytes + 12345);
  for (size_t off = 0; off < data.size(); off += 8191) {
    ASSERT_OK(b.Append(data.data() + off, std::min<size_t>(8191, data.size() - off)));
  }
  ASSERT_OK(b.Finish());
  EXPECT_TRUE(b.spilled());
  EXPECT_EQ(b.size(), data.size());
  std::string out(data.size(), '\0');
  for (uint64_t off : {uint64_t{0}, uint64_t{SpillBuffer::kMemoryBytes - 3}, uint64_t{data.size() - 100}}) {
    ASSERT_OK_AND_ASSIGN(size_t n, b.ReadAt(off, 300000, out.data()));
    EXPECT_EQ(n, std::min<uint64_t>(300000, data.size() - off));
    EXPECT_EQ(std::memcmp(out.data(), data.data() + off, n), 0) << off;
  }
}

// A PNG decoded by libpng's reader into `channels` bytes a pixel
// (palette pictures become RGB).
struct Decoded {
  uint32_t width = 0, height = 0;
  unsigned channels = 0;
  std::vector<uint8_t> pixels;
};

Decoded Decode(const std::string& png, unsigned channels) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  Decoded d;
  if (!png_image_begin_read_from_memory(&img, png.data(), png.size())) {
    ADD_FAILURE() << "libpng cannot read it: " << img.message;
    return d;
  }
  img.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  d.width = img.width;
  d.height = img.height;
  d.channels = channels;
  d.pixels.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, d.pixels.data(), 0, nullptr)) {
    ADD_FAILURE() << "libpng cannot decode it: " << img.message;
  }
  png_image_free(&img);
  return d;
}

Result<std::string> Encode(const PngHeader& h, const std::vector<uint8_t>& pixels) {
  std::string out;
  SLABFS_ASSIGN_OR_RETURN(auto enc, PngEncoder::Start(h, [&](const uint8_t* d, size_t n) {
                            out.append(reinterpret_cast<const char*>(d), n);
                            return Status::OK();
                          }));
  const size_t row = h.width * SamplesPerPixel(h.color);
  for (uint32_t r = 0; r < h.height; ++r) SLABFS_RETURN_IF_ERROR_R(enc->WriteRow(pixels.data() + r * row));
  SLABFS_RETURN_IF_ERROR_R(enc->Finish());
  return out;
}

TEST(PngEncoderTest, GrayRgbAndRgbaRoundTrip) {
  for (PngColor color : {PngColor::kGray, PngColor::kRgb, PngColor::kRgba}) {
    PngHeader h;
    h.width = 37;
    h.height = 11;
    h.color = color;
    h.text.emplace_back("Description", "a test");
    const unsigned c = SamplesPerPixel(color);
    std::vector<uint8_t> px(h.width * h.height * c);
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 31 + i / 7);
    ASSERT_OK_AND_ASSIGN(std::string png, Encode(h, px));
    EXPECT_EQ(png.substr(1, 3), "PNG");
    Decoded d = Decode(png, c);
    EXPECT_EQ(d.width, h.width);
    EXPECT_EQ(d.height, h.height);
    EXPECT_EQ(d.pixels, px);
  }
}

TEST(PngEncoderTest, PaletteRoundTrip) {
  PngHeader h;
  h.width = 256;
  h.height = 2;
  h.color = PngColor::kPalette;
  h.palette = NamedColormap("viridis");
  std::vector<uint8_t> px(512);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i);
  ASSERT_OK_AND_ASSIGN(std::string png, Encode(h, px));
  Decoded d = Decode(png, 3);
  ASSERT_EQ(d.pixels.size(), 512u * 3);
  for (size_t i = 0; i < 512; ++i) {
    const Rgb& want = (*h.palette)[i % 256];
    EXPECT_EQ((Rgb{d.pixels[3 * i], d.pixels[3 * i + 1], d.pixels[3 * i + 2]}), want) << i;
  }
}

TEST(PngEncoderTest, RefusesBadHeadersAndShortPictures) {
  PngHeader h;
  h.width = 0;
  h.height = 3;
  EXPECT_CODE(Encode(h, {}), Code::kInvalidArgument);
  h.width = 4;
  h.color = PngColor::kPalette;  // without a palette
  EXPECT_CODE(Encode(h, std::vector<uint8_t>(12)), Code::kInvalidArgument);
  h.color = PngColor::kGray;
  std::string out;
  auto enc = PngEncoder::Start(h, [&](const uint8_t* d, size_t n) {
    out.append(reinterpret_cast<const char*>(d), n);
    return Status::OK();
  });
  ASSERT_TRUE(enc.has_value());
  const uint8_t row[4] = {1, 2, 3, 4};
  ASSERT_OK((*enc)->WriteRow(row));
  EXPECT_CODE((*enc)->Finish(), Code::kInvalidArgument);  // two rows short
}

TEST(PngEncoderTest, TheSinksErrorStopsIt) {
  PngHeader h;
  h.width = 64;
  h.height = 64;
  size_t bytes = 0;  // the header fits, the pixels do not
  auto enc = PngEncoder::Start(h, [&](const uint8_t*, size_t n) {
    bytes += n;
    return bytes > 300 ? Status::NoSpace("disk full") : Status::OK();
  });
  ASSERT_TRUE(enc.has_value());
  std::vector<uint8_t> row(64);
  Status s;
  for (int r = 0; r < 64 && s.ok(); ++r) {
    for (auto& b : row) b = static_cast<uint8_t>(std::rand());
    s = (*enc)->WriteRow(row.data());
  }
  if (s.ok()) s = (*enc)->Finish();
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_EQ((*enc)->WriteRow(row.data()).code(), Code::kNoSpace);
}

TEST(PictureOfTest, WhichViewsArePictures) {
  ASSERT_OK_AND_ASSIGN(PictureShape g, PictureOf({4, 5}));
  EXPECT_EQ(g.height, 4u);
  EXPECT_EQ(g.width, 5u);
  EXPECT_EQ(g.channels, 1u);
  ASSERT_OK_AND_ASSIGN(PictureShape s, PictureOf({1, 1, 4, 5}));  // ds[3, 0].png
  EXPECT_EQ(s.row_dim, 2u);
  EXPECT_EQ(s.width, 5u);
  ASSERT_OK_AND_ASSIGN(PictureShape rgb, PictureOf({4, 5, 3}));
  EXPECT_EQ(rgb.channels, 3u);
  EXPECT_EQ(rgb.width, 5u);
  ASSERT_OK_AND_ASSIGN(PictureShape rgba, PictureOf({1, 4, 5, 4}));
  EXPECT_EQ(rgba.channels, 4u);
  ASSERT_OK_AND_ASSIGN(PictureShape col, PictureOf({4, 1, 30}));  // ds[:, 4].png
  EXPECT_EQ(col.row_dim, 0u);
  EXPECT_EQ(col.col_dim, 2u);
  EXPECT_EQ(col.height, 4u);
  ASSERT_OK_AND_ASSIGN(PictureShape tall, PictureOf({5, 1, 1}));
  EXPECT_EQ(tall.height, 5u);
  EXPECT_EQ(tall.width, 1u);
  ASSERT_OK_AND_ASSIGN(PictureShape row, PictureOf({1, 1, 6}));
  EXPECT_EQ(row.height, 1u);
  EXPECT_EQ(row.width, 6u);
  ASSERT_OK_AND_ASSIGN(PictureShape gray3, PictureOf({7, 3}));  // rank 2: no channels
  EXPECT_EQ(gray3.channels, 1u);
  EXPECT_CODE(PictureOf({5}), Code::kNotFound);
  EXPECT_CODE(PictureOf({1}), Code::kNotFound);
  EXPECT_CODE(PictureOf({2, 4, 5}), Code::kNotFound);  // a stack of frames
  EXPECT_CODE(PictureOf({0, 5}), Code::kInvalidArgument);
  EXPECT_CODE(PictureOf({2, uint64_t{1} << 31}), Code::kOutOfRange);
  EXPECT_CODE(PictureOf({2, kMaxPictureSide + 1}), Code::kOutOfRange);
  EXPECT_CODE(PictureOf({(1 << 15) + 1, (1 << 15) + 1}), Code::kOutOfRange);
  EXPECT_TRUE(PictureOf({1 << 15, 1 << 15}).has_value());
}

// The range a picture states in its Description.
PngScale StatedScale(const std::string& png) {
  PngScale s;
  const size_t at = png.find("span [");
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) {
    EXPECT_EQ(std::sscanf(png.c_str() + at, "span [%lf, %lf]", &s.lo, &s.hi), 2);
  }
  return s;
}

class PictureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = testutil::OpenOnDisk(testutil::NewDisk());
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    container_ = std::move(*c);
    // The store view the mount reads through; the fixture owns the container.
    store_ = ContainerStore(std::shared_ptr<Container>(container_.get(), [](Container*) {}));
  }

  Dataset Make(const std::string& path, DType t, Dims shape, const void* data) {
    DatasetOptions o;
    o.dtype = t;
    o.shape = shape;
    o.chunks = Dims(shape.size(), 16);
    auto ds = container_->CreateDataset(path, o);
    EXPECT_TRUE(ds.has_value());
    EXPECT_OK(ds->Write(Slab::All(shape), data));
    return *ds;
  }

  // The picture of view `slice` of ds, decoded.
  Decoded Picture(const Dataset& ds, std::optional<std::string> slice, unsigned channels,
                  std::string* png_out = nullptr) {
    auto v = ResolveView(ViewKind::kPng, slice, ds.info());
    EXPECT_TRUE(v.has_value());
    Status s = AttachPicture(cache_, *store_, FileData(ds), timespec{1, 0}, *v);
    EXPECT_OK(s);
    if (!s.ok()) return {};
    std::string png(v->size_bytes, '\0');
    auto n = v->png->ReadAt(0, png.size(), png.data());
    EXPECT_EQ(n.value_or(0), png.size());
    if (png_out) *png_out = png;
    return Decode(png, channels);
  }

  std::unique_ptr<Container> container_;
  std::unique_ptr<Store> store_;
  PngCache cache_;
};

TEST_F(PictureTest, LevelsFollowTheDocumentedScale) {
  // 40 x 30 f8 with a NaN, infinities and a _FillValue.
  std::vector<double> v(40 * 30);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(i * 0.37) * 100 + i * 0.1;
  v[5] = kNaN;
  v[6] = kInf;
  v[7] = -kInf;
  v[8] = -9999;
  Dataset ds = Make("/t", DType::kF8, {40, 30}, v.data());
  ASSERT_OK(container_->SetAttribute(ds.id(), "_FillValue", Attribute::Float(-9999)));
  std::vector<double> finite;
  for (double x : v) {
    if (std::isfinite(x) && x != -9999) finite.push_back(x);
  }
  PngScale s;
  s.lo = Percentile(finite, 1);
  s.hi = Percentile(finite, 99);
  s.missing = {-9999};
  Decoded d = Picture(ds, std::nullopt, 1);
  ASSERT_EQ(d.width, 30u);
  ASSERT_EQ(d.height, 40u);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(d.pixels[i], LevelOf(v[i], s)) << i;
  EXPECT_EQ(d.pixels[5], 0);
  EXPECT_EQ(d.pixels[6], 255);
  EXPECT_EQ(d.pixels[7], 0);
  EXPECT_EQ(d.pixels[8], 0);
}

TEST_F(PictureTest, SliceOfAStackIsOneFrame) {
  std::vector<int16_t> v(3 * 20 * 24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int16_t>((i % 480) * (i / 480 + 1) - 700);
  Dataset ds = Make("/frames", DType::kI2, {3, 20, 24}, v.data());
  auto whole = ResolveView(ViewKind::kPng, std::nullopt, ds.info());
  ASSERT_TRUE(whole.has_value());
  EXPECT_CODE(AttachPicture(cache_, *store_, FileData(ds), timespec{1, 0}, *whole), Code::kNotFound);
  Decoded d = Picture(ds, std::string("2"), 1);
  ASSERT_EQ(d.width, 24u);
  ASSERT_EQ(d.height, 20u);
  std::vector<double> frame(v.begin() + 960, v.end());
  std::vector<double> sorted = frame;
  PngScale s{.lo = Percentile(sorted, 1), .hi = Percentile(sorted, 99), .missing = {}};
  for (size_t i = 0; i < frame.size(); ++i) ASSERT_EQ(d.pixels[i], LevelOf(frame[i], s)) << i;
  // A strided slice: every other row and column of frame 1.
  Decoded sub = Picture(ds, std::string("1, ::2, 1::2"), 1);
  EXPECT_EQ(sub.width, 12u);
  EXPECT_EQ(sub.height, 10u);
}

TEST_F(PictureTest, ColormapAttributeMakesAPalettePicture) {
  std::vector<uint8_t> v(16 * 16);
  std::iota(v.begin(), v.end(), 0);
  Dataset ds = Make("/ramp", DType::kU1, {16, 16}, v.data());
  ASSERT_OK(container_->SetAttribute(ds.id(), "colormap", Attribute::String("viridis")));
  Decoded d = Picture(ds, std::nullopt, 3);
  const Palette pal = *NamedColormap("viridis");
  std::vector<double> all(v.begin(), v.end());
  PngScale s{.lo = Percentile(all, 1), .hi = Percentile(all, 99), .missing = {}};
  for (size_t i = 0; i < v.size(); ++i) {
    const Rgb want = pal[LevelOf(v[i], s)];
    ASSERT_EQ((Rgb{d.pixels[3 * i], d.pixels[3 * i + 1], d.pixels[3 * i + 2]}), want) << i;
  }
  ASSERT_OK(container_->SetAttribute(ds.id(), "colormap", Attribute::String("rainbow")));
  auto bad = ResolveView(ViewKind::kPng, std::nullopt, ds.info());
  EXPECT_CODE(AttachPicture(cache_, *store_, FileData(ds), timespec{2, 0}, *bad), Code::kInvalidArgument);
}

TEST_F(PictureTest, RgbOfBytesIsAsStored) {
  std::vector<uint8_t> v(9 * 7 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 5 + 1);
  Dataset ds = Make("/rgb", DType::kU1, {9, 7, 3}, v.data());
  Decoded d = Picture(ds, std::nullopt, 3);
  EXPECT_EQ(d.width, 7u);
  EXPECT_EQ(d.height, 9u);
  EXPECT_EQ(d.pixels, v);
}

TEST_F(PictureTest, LargePictureIsSampledAndStreamed) {
  // 1500 x 1000 u2: more than kSampleValues, and its PNG spills to a file.
  const uint64_t h = 1500, w = 1000;
  std::vector<uint16_t> v(h * w);
  std::mt19937 rng(3);
  for (auto& x : v) x = static_cast<uint16_t>(rng());
  Dataset ds = Make("/big", DType::kU2, {h, w}, v.data());
  std::string png;
  Decoded d = Picture(ds, std::nullopt, 1, &png);
  ASSERT_EQ(d.height, h);
  EXPECT_NE(png.find("a sample"), std::string::npos);
  // Uniform noise: the sampled range is close to the whole one.
  std::vector<double> all(v.begin(), v.end());
  const double lo = Percentile(all, 1), hi = Percentile(all, 99);
  const PngScale s = StatedScale(png);
  EXPECT_NEAR(s.lo, lo, 200);
  EXPECT_NEAR(s.hi, hi, 200);
  for (size_t i = 0; i < v.size(); i += 997) ASSERT_EQ(d.pixels[i], LevelOf(v[i], s)) << i;
}

TEST_F(PictureTest, RowsWiderThanABatchAreReadInPieces) {
  // 3 x 700000 f8: a row is 5.6 MB (over the 4 MiB batch), and the sample
  // takes every other pixel of each row.
  const uint64_t h = 3, w = 700000;
  std::vector<double> v(h * w);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 100003);
  DatasetOptions o;
  o.dtype = DType::kF8;
  o.shape = {h, w};
  o.chunks = {1, 65536};
  ASSERT_OK_AND_ASSIGN(Dataset ds, container_->CreateDataset("/wide", o));
  ASSERT_OK(ds.Write(Slab::All(o.shape), v.data()));
  std::string png;
  Decoded d = Picture(ds, std::nullopt, 1, &png);
  ASSERT_EQ(d.width, w);
  ASSERT_EQ(d.height, h);
  EXPECT_NE(png.find("a sample"), std::string::npos);
  const PngScale s = StatedScale(png);
  EXPECT_NEAR(s.lo, 1000, 50);
  EXPECT_NEAR(s.hi, 99003, 50);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(d.pixels[i], LevelOf(v[i], s)) << i;
}

TEST_F(PictureTest, CacheKeepsAPictureUntilItsStampChanges) {
  std::vector<float> v(20 * 20, 1.5f);
  v[0] = 0;
  Dataset ds = Make("/c", DType::kF4, {20, 20}, v.data());
  auto a = ResolveView(ViewKind::kPng, std::nullopt, ds.info());
  ASSERT_OK(AttachPicture(cache_, *store_, FileData(ds), timespec{1, 0}, *a));
  auto b = ResolveView(ViewKind::kPng, std::nullopt, ds.info());
  ASSERT_OK(AttachPicture(cache_, *store_, FileData(ds), timespec{1, 0}, *b));
  EXPECT_EQ(a->png, b->png);  // the same encoding
  auto c = ResolveView(ViewKind::kPng, std::nullopt, ds.info());
  ASSERT_OK(AttachPicture(cache_, *store_, FileData(ds), timespec{2, 0}, *c));
  EXPECT_NE(a->png, c->png);  // the dataset changed since
  EXPECT_EQ(cache_.size(), 1u);
  for (int i = 0; i < 20; ++i) {
    auto s = ResolveView(ViewKind::kPng, std::to_string(i) + ":" + std::to_string(i + 1), ds.info());
    ASSERT_OK(AttachPicture(cache_, *store_, FileData(ds), timespec{2, 0}, *s));
  }
  EXPECT_EQ(cache_.size(), PngCache::kMaxEntries);
}

}  // namespace
}  // namespace slabfs::fusefs::views
