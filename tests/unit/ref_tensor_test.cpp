// HostTensor, RtArgs, casting, npy and Philox.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "toroid/ops/host_tensor.h"
#include "toroid/ops/npy.h"
#include "toroid/ops/philox.h"
#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"

using namespace toroid;
using namespace toroid::ops;

namespace {
HostTensor make(DType d, std::vector<int64_t> sizes, std::vector<double> vals) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  for (size_t i = 0; i < vals.size(); ++i) t.set_double(static_cast<int64_t>(i), vals[i]);
  return t;
}
const DType kAll[] = {DType::Bool,    DType::UInt8,    DType::Int8,    DType::Int16,   DType::Int32,
                      DType::Int64,   DType::Float16,  DType::BFloat16, DType::Float32, DType::Float64};
}  // namespace

TEST(RefTensor, ZerosAlignedAndContiguous) {
  HostTensor t = HostTensor::zeros(DType::Float32, {2, 3});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.get_double(i), 0.0);
  EXPECT_EQ(t.describe(), "f32[2, 3]");
  EXPECT_THROW(HostTensor::zeros(DType::Float32, {-1}), UserError);
}

TEST(RefTensor, AsStridedSharesAndChecksBounds) {
  HostTensor t = make(DType::Int64, {6}, {0, 1, 2, 3, 4, 5});
  HostTensor v = t.as_strided({2, 2}, {1, 2}, 1);  // [[1,3],[2,4]]
  EXPECT_TRUE(v.shares_storage(t));
  EXPECT_EQ(v.get_int(0), 1);
  EXPECT_EQ(v.get_int(1), 3);
  EXPECT_EQ(v.get_int(2), 2);
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.describe(), "i64[2, 2]{strides=[1, 2], offset=1}");
  v.set_int(3, 40);
  EXPECT_EQ(t.get_int(4), 40);
  EXPECT_THROW(t.as_strided({2, 3}, {3, 1}, 1), UserError);  // needs 7 elements
  EXPECT_THROW(t.as_strided({2}, {-1}, 3), UserError);
  EXPECT_THROW(t.as_strided({2}, {1}, -1), UserError);
  EXPECT_THROW(t.as_strided({2}, {1, 1}, 0), UserError);
  EXPECT_THROW(t.as_strided({2, 1}, {std::numeric_limits<int64_t>::max(), 1}, 0), UserError);
  EXPECT_NO_THROW(t.as_strided({0, 100}, {1000, 1}, 6));  // empty views address nothing
}

TEST(RefTensor, CloneIsContiguousAndIndependent) {
  HostTensor t = make(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor tt = t.as_strided({3, 2}, {1, 3}, 0);  // transpose
  HostTensor c = tt.clone();
  EXPECT_FALSE(c.shares_storage(t));
  EXPECT_TRUE(c.is_contiguous());
  std::vector<double> expect = {1, 4, 2, 5, 3, 6};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.get_double(i), expect[static_cast<size_t>(i)]);
  c.set_double(0, 9);
  EXPECT_EQ(t.get_double(0), 1);
}

TEST(RefTensor, CastFloatToIntTruncatesAndDefinesOutOfRange) {
  HostTensor f = make(DType::Float64, {8}, {2.9, -2.9, NAN, INFINITY, -INFINITY, 1e30, 300.0, -1.0});
  HostTensor i64 = f.to(DType::Int64);
  EXPECT_EQ(i64.get_int(0), 2);
  EXPECT_EQ(i64.get_int(1), -2);
  EXPECT_EQ(i64.get_int(2), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.get_int(3), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.get_int(5), std::numeric_limits<int64_t>::min());
  HostTensor i32 = f.to(DType::Int32);
  EXPECT_EQ(i32.get_int(2), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32.get_int(6), 300);
  HostTensor u8 = f.to(DType::UInt8);
  EXPECT_EQ(u8.get_int(6), 44);   // 300 wraps mod 256
  EXPECT_EQ(u8.get_int(7), 255);  // -1 wraps
  EXPECT_EQ(u8.get_int(2), 0);    // nan -> INT32_MIN -> low byte 0
  HostTensor b = f.to(DType::Bool);
  EXPECT_EQ(b.get_int(2), 1);  // nan != 0
  EXPECT_EQ(b.get_int(0), 1);
  EXPECT_EQ(make(DType::Float32, {1}, {-0.0}).to(DType::Bool).get_int(0), 0);
}

TEST(RefTensor, CastToHalfAndBFloat16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between two f16 values: ties to even gives 1.0.
  HostTensor f = make(DType::Float32, {4}, {1.0 + std::ldexp(1.0, -11), 1.0 + 3 * std::ldexp(1.0, -11), 70000.0, 1.0 + std::ldexp(1.0, -8)});
  HostTensor h = f.to(DType::Float16);
  EXPECT_EQ(h.get_double(0), 1.0);
  EXPECT_EQ(h.get_double(1), 1.0 + 4 * std::ldexp(1.0, -11));
  EXPECT_TRUE(std::isinf(h.get_double(2)));
  HostTensor bf = f.to(DType::BFloat16);
  EXPECT_EQ(bf.get_double(3), 1.0);  // halfway, ties to even
  EXPECT_EQ(bf.get_double(2), 70144.0);
}

TEST(RefTensor, IntCastsWrap) {
  HostTensor t = make(DType::Int64, {3}, {257, -129, 65536 + 5});
  EXPECT_EQ(t.to(DType::UInt8).get_int(0), 1);
  EXPECT_EQ(t.to(DType::Int8).get_int(1), 127);
  EXPECT_EQ(t.to(DType::Int16).get_int(2), 5);
  EXPECT_EQ(t.to(DType::Bool).get_int(2), 1);
}

TEST(RefTensor, PromoteTypes) {
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int8), DType::Int16);
  EXPECT_EQ(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::Bool, DType::Int32), DType::Int32);
  EXPECT_EQ(promote_types(DType::Int32, DType::Int16), DType::Int32);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int64), DType::Int64);
  // result_type: an int tensor with a float scalar is the default float; with an int scalar stays
  PromoteArg a[] = {{DType::Int32, false, false}, {DType::Float64, true, true}};
  EXPECT_EQ(result_type(a), DType::Float32);
  PromoteArg b[] = {{DType::Int8, false, false}, {DType::Int64, true, true}};
  EXPECT_EQ(result_type(b), DType::Int8);
  PromoteArg c[] = {{DType::Float16, false, false}, {DType::Float64, true, false}};  // 0-dim f64 tensor
  EXPECT_EQ(result_type(c), DType::Float16);
  PromoteArg d[] = {{DType::Int32, false, false}, {DType::Float64, true, false}};
  EXPECT_EQ(result_type(d), DType::Float64);
  PromoteArg e[] = {{DType::Bool, false, false}, {DType::Int64, true, true}};
  EXPECT_EQ(result_type(e), DType::Int64);
  PromoteArg f[] = {{DType::UInt8, false, false}, {DType::Int64, true, false}};
  EXPECT_EQ(result_type(f), DType::UInt8);
}

// ---- npy ----------------------------------------------------------------------------------

TEST(RefNpy, RoundTripEveryDtype) {
  for (DType d : kAll) {
    HostTensor t = HostTensor::zeros(d, {2, 3});
    for (int64_t i = 0; i < 6; ++i) t.set_double(i, d == DType::Bool ? (i % 2) : (i * 1.5 - 3));
    HostTensor back = parse_npy(serialize_npy(t.as_strided({3, 2}, {1, 3}, 0)));
    ASSERT_EQ(back.dtype(), d);
    ASSERT_EQ(back.sizes(), (std::vector<int64_t>{3, 2}));
    HostTensor expect = t.as_strided({3, 2}, {1, 3}, 0);
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(back.get_double(i), expect.get_double(i)) << dtype_short_name(d);
  }
}

TEST(RefNpy, HeaderIsNumpyCompatible) {
  std::string s = serialize_npy(HostTensor::zeros(DType::BFloat16, {4}));
  EXPECT_EQ(s.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t hl = static_cast<unsigned char>(s[8]) | (static_cast<unsigned char>(s[9]) << 8);
  EXPECT_EQ((10 + hl) % 64, 0u);
  EXPECT_NE(s.find("{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }"), std::string::npos);
  EXPECT_EQ(s[10 + hl - 1], '\n');
  std::string s0 = serialize_npy(HostTensor::zeros(DType::Float32, {}));
  EXPECT_NE(s0.find("'shape': ()"), std::string::npos);
  EXPECT_EQ(parse_npy(s0).dim(), 0);
}

namespace {
std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  std::string h = dict + "\n";
  size_t n = h.size();
  size_t lb = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lb; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + h + data;
}
}  // namespace

TEST(RefNpy, BigEndianAndVersions) {
  std::string data("\x00\x00\x00\x01\xff\xff\xff\xfe", 8);  // >i4: 1, -2
  for (int major : {1, 2, 3}) {
    HostTensor t = parse_npy(npy_bytes(major, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", data));
    EXPECT_EQ(t.dtype(), DType::Int32);
    EXPECT_EQ(t.get_int(0), 1);
    EXPECT_EQ(t.get_int(1), -2);
  }
  std::string f("\x3f\xf0\x00\x00\x00\x00\x00\x00", 8);  // >f8 1.0
  EXPECT_EQ(parse_npy(npy_bytes(1, "{\"descr\": \">f8\", \"fortran_order\": False, \"shape\": ()}", f)).get_double(0), 1.0);
}

TEST(RefNpy, FortranOrderIsConverted) {
  // Column-major 2x3 of [[0,1,2],[3,4,5]] stores 0,3,1,4,2,5.
  std::string data;
  for (int8_t v : {0, 3, 1, 4, 2, 5}) data += static_cast<char>(v);
  HostTensor t = parse_npy(npy_bytes(1, "{'descr': '|i1', 'fortran_order': True, 'shape': (2, 3), }", data));
  EXPECT_TRUE(t.is_contiguous());
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.get_int(i), i);
}

TEST(RefNpy, MalformedFilesAreUserErrors) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string eight(8, '\0');
  auto err = [](const std::string& bytes) -> std::string {
    try {
      parse_npy(bytes, "x.npy");
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(err("hello").find("x.npy: not a .npy"), std::string::npos);
  EXPECT_NE(err(npy_bytes(1, good, eight.substr(0, 7))).find("needs 8"), std::string::npos);
  EXPECT_NE(err(npy_bytes(1, good, eight + "x")).find("x.npy: data has 9"), std::string::npos);
  EXPECT_NE(err(npy_bytes(4, good, eight)).find("version 4.0"), std::string::npos);
  EXPECT_NE(err(npy_bytes(1, "{'descr': '<c32', 'fortran_order': False, 'shape': (2,), }", eight)).find("'<c32'"),
            std::string::npos);
  EXPECT_NE(err(npy_bytes(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", eight)).find("descr"),
            std::string::npos);
  EXPECT_NE(err(npy_bytes(1, "{'descr': '<f4', 'shape': (2,), }", eight)).find("keys"), std::string::npos);
  EXPECT_NE(err(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", eight)).find("shape"),
            std::string::npos);
  EXPECT_NE(err(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }", eight)).find("too large"),
            std::string::npos);
  EXPECT_NE(err(npy_bytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", eight)).find("True or False"),
            std::string::npos);
  std::string huge("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  EXPECT_NE(err(huge).find("too large"), std::string::npos);
  EXPECT_NE(err(std::string("\x93NUMPY\x01\x00\x40\x00{", 11)).find("truncated"), std::string::npos);
  // Every prefix of a valid file fails cleanly.
  std::string valid = serialize_npy(HostTensor::zeros(DType::Float64, {3}));
  for (size_t n = 0; n < valid.size(); ++n) EXPECT_THROW(parse_npy(valid.substr(0, n)), UserError);
}

TEST(RefNpy, FileRoundTrip) {
  std::string path = ::testing::TempDir() + "ref_npy_test.npy";
  HostTensor t = make(DType::Float16, {2}, {0.5, -2});
  write_npy(path, t);
  HostTensor back = read_npy(path);
  EXPECT_EQ(back.dtype(), DType::Float16);
  EXPECT_EQ(back.get_double(1), -2.0);
  EXPECT_THROW(read_npy(path + ".missing"), UserError);
}

// ---- Philox -------------------------------------------------------------------------------

TEST(RefPhilox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (PhiloxBlock{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (PhiloxBlock{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (PhiloxBlock{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(RefPhilox, UniformRanges) {
  EXPECT_EQ(uniform_f32(0), 0.0f);
  EXPECT_LT(uniform_f32(0xffffffffu), 1.0f);
  EXPECT_EQ(uniform_f32(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_LT(uniform_f64(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_TRUE(std::isfinite(normal_from_block({0, 0, 0, 0})));
  EXPECT_TRUE(std::isfinite(normal_from_block({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu})));
  EXPECT_NE(philox_block(1, 0), philox_block(2, 0));
  EXPECT_NE(philox_block(1, 0), philox_block(1, 1));
  EXPECT_NE(philox_block(1, 0), philox_block(1, uint64_t{1} << 32));
}
