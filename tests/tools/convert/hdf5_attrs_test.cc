// Attributes between slabfs and HDF5, on an in-memory HDF5 file: what an
// export writes reads back the same, and HDF5 attributes slabfs cannot
// hold say why.
#include "tools/convert/hdf5_attrs.h"

#include <cstring>

#include <gtest/gtest.h>

#include "tests/testutil/status_matchers.h"
#include "tools/convert/hdf5_util.h"

namespace slabfs::tools::convert {
namespace {

class Hdf5AttrsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
    ASSERT_GE(H5Pset_fapl_core(fapl.get(), 1 << 16, /*backing_store=*/0), 0);
    ASSERT_GE(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), 0);
    file_ = H5Handle(H5Fcreate("attrs_test.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    ASSERT_TRUE(file_.valid());
    root_ = H5Handle(H5Gopen2(file_.get(), "/", H5P_DEFAULT));
    ASSERT_TRUE(root_.valid());
  }

  Hdf5Attribute Read(const std::string& name) {
    auto a = ReadHdf5Attribute(root_.get(), "/", name);
    EXPECT_OK(a);
    return a ? *a : Hdf5Attribute{};
  }

  // Writes a raw attribute of `type` and `space` holding `data`.
  void WriteRaw(const char* name, hid_t type, hid_t space, const void* data) {
    H5Handle attr(H5Acreate2(root_.get(), name, type, space, H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_TRUE(attr.valid());
    if (data != nullptr) {
      ASSERT_GE(H5Awrite(attr.get(), type, data), 0);
    }
  }

  Hdf5Session session_;
  H5Handle file_;
  H5Handle root_;
};

TEST_F(Hdf5AttrsTest, WhatIsWrittenReadsBackTheSame) {
  const std::vector<Attribute> values = {
      Attribute::String("m/s"),
      Attribute::String(""),
      Attribute::String("Grüße"),
      Attribute::Integer(-7),
      Attribute::Float(0.5),
      Attribute::Numbers(DType::kU2, std::string("\x01\x00\x02\x00\x03\x00", 6)),
      Attribute::Numbers(DType::kI1, std::string("\xff", 1)),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string name = "a" + std::to_string(i);
    ASSERT_OK(WriteHdf5Attribute(root_.get(), "/", name, values[i]));
    Hdf5Attribute got = Read(name);
    ASSERT_TRUE(got.value) << name << ": " << got.why_not;
    EXPECT_EQ(got.value->kind, values[i].kind) << name;
    EXPECT_EQ(got.value->data, values[i].data) << name;
    if (values[i].kind == Attribute::Kind::kNumeric) {
      EXPECT_EQ(got.value->dtype, values[i].dtype);
    }
  }
  // Replacing, and storing numbers as another type (netCDF's _FillValue).
  ASSERT_OK(WriteHdf5Attribute(root_.get(), "/", "a0", Attribute::Integer(3), DType::kF4));
  Hdf5Attribute got = Read("a0");
  ASSERT_TRUE(got.value);
  EXPECT_EQ(got.value->dtype, DType::kF4);
  float f;
  std::memcpy(&f, got.value->data.data(), 4);
  EXPECT_EQ(f, 3.0f);
  EXPECT_EQ(*Hdf5AttributeNames(root_.get(), "/"),
            (std::vector<std::string>{"a0", "a1", "a2", "a3", "a4", "a5", "a6"}));
}

TEST_F(Hdf5AttrsTest, ReadsStringsOfEveryPadding) {
  H5Handle scalar(H5Screate(H5S_SCALAR));
  H5Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), 8);
  H5Tset_strpad(type.get(), H5T_STR_SPACEPAD);
  WriteRaw("space", type.get(), scalar.get(), "abc     ");
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  WriteRaw("nul", type.get(), scalar.get(), "abc\0\0\0\0\0");
  H5Handle vlen(H5Tcopy(H5T_C_S1));
  H5Tset_size(vlen.get(), H5T_VARIABLE);
  const char* text = "variable";
  WriteRaw("vlen", vlen.get(), scalar.get(), &text);
  H5Handle null(H5Screate(H5S_NULL));
  WriteRaw("empty", type.get(), null.get(), nullptr);
  EXPECT_EQ(Read("space").value->data, "abc");
  EXPECT_EQ(Read("nul").value->data, "abc");
  EXPECT_EQ(Read("vlen").value->data, "variable");
  EXPECT_EQ(Read("empty").value->data, "");
}

TEST_F(Hdf5AttrsTest, SaysWhyItCannotHoldTheRest) {
  hsize_t two[1] = {2};
  H5Handle pair(H5Screate_simple(1, two, nullptr));
  const char* texts[2] = {"a", "b"};
  H5Handle vlen(H5Tcopy(H5T_C_S1));
  H5Tset_size(vlen.get(), H5T_VARIABLE);
  WriteRaw("strings", vlen.get(), pair.get(), texts);
  hsize_t many[1] = {9000};
  H5Handle big(H5Screate_simple(1, many, nullptr));
  std::vector<double> zeros(9000);
  WriteRaw("big", H5T_IEEE_F64LE, big.get(), zeros.data());
  H5Handle scalar(H5Screate(H5S_SCALAR));
  uint16_t half = 0x3c00;
  WriteRaw("half", H5T_NATIVE_B16, scalar.get(), &half);
  H5Handle null(H5Screate(H5S_NULL));
  WriteRaw("nothing", H5T_STD_I32LE, null.get(), nullptr);
  H5Handle compound(H5Tcreate(H5T_COMPOUND, 8));
  H5Tinsert(compound.get(), "a", 0, H5T_NATIVE_INT);
  H5Tinsert(compound.get(), "b", 4, H5T_NATIVE_FLOAT);
  char bytes[8] = {};
  WriteRaw("pair", compound.get(), scalar.get(), bytes);
  EXPECT_EQ(Read("strings").why_not, "array of 2 strings");
  EXPECT_EQ(Read("big").why_not, "9000 values of f8 (more than 65536 bytes)");
  EXPECT_EQ(Read("half").why_not, "bitfield");
  EXPECT_EQ(Read("nothing").why_not, "empty (no values)");
  EXPECT_EQ(Read("pair").why_not, "compound");
  for (const char* name : {"strings", "big", "half", "nothing", "pair"}) {
    EXPECT_FALSE(Read(name).value) << name;
  }
  EXPECT_CODE(ReadHdf5Attribute(root_.get(), "/", "missing"), Code::kCorruption);
}

}  // namespace
}  // namespace slabfs::tools::convert
