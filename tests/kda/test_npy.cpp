// tests/kda/test_npy.cpp — the .npy reader/writer (evaluator/npy.h): round trips for
// every dtype and shape rank, the bf16-as-float32 convention, byte-exact headers
// as numpy writes them, and bad files refused with a message naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "evaluator/npy.h"

namespace npy = tessera::npy;
namespace fs = std::filesystem;

namespace {

fs::path tmp_file(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("tessera_npy_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A v1 .npy image with the given header dict and payload, padded like numpy does.
std::string npy_image(const std::string& dict, const std::string& payload, int major = 1) {
  std::string h = dict;
  std::size_t prefix = major == 1 ? 10 : 12;
  std::size_t total = prefix + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  std::string out = std::string("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  out.push_back(static_cast<char>(h.size() & 0xFF));
  out.push_back(static_cast<char>((h.size() >> 8) & 0xFF));
  if (major != 1) out.append(2, '\0');
  return out + h + payload;
}

std::string error_of(const fs::path& p) {
  try {
    npy::read(p);
  } catch (const npy::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Npy, RoundTripEveryDtypeAndRank) {
  for (auto dt : {npy::DType::F64, npy::DType::F32, npy::DType::F16, npy::DType::I64, npy::DType::I32}) {
    for (auto shape : std::vector<std::vector<std::int64_t>>{{}, {5}, {3, 4}, {2, 3, 7}, {0, 4}}) {
      npy::Array a;
      a.dtype = dt;
      a.shape = shape;
      a.data.resize(static_cast<size_t>(a.count()) * npy::dtype_size(dt));
      for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<std::uint8_t>(i * 37 + 11);
      fs::path p = tmp_file("rt.npy");
      npy::write(p, a);
      npy::Array b = npy::read(p);
      EXPECT_EQ(b.dtype, dt);
      EXPECT_EQ(b.shape, shape);
      EXPECT_EQ(b.data, a.data);
      EXPECT_EQ(fs::file_size(p) % 64, b.data.size() % 64) << "header not padded to 64 bytes";
    }
  }
}

TEST(Npy, HeaderMatchesNumpy) {
  npy::Array a;
  a.dtype = npy::DType::F32;
  a.shape = {3, 4};
  a.data.resize(48);
  auto img = npy::serialize(a);
  std::string s(img.begin(), img.end());
  EXPECT_EQ(s.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(s.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"), std::string::npos);
  EXPECT_EQ(s[127], '\n');  // 128-byte header block, as numpy writes it
  a.shape = {12};
  img = npy::serialize(a);
  s.assign(img.begin(), img.end());
  EXPECT_NE(s.find("'shape': (12,)"), std::string::npos);
}

TEST(Npy, ReadsV2AndV3Headers) {
  std::string payload(16, '\0');
  double vals[2] = {1.5, -2.25};
  std::memcpy(payload.data(), vals, 16);
  for (int major : {2, 3}) {
    fs::path p = tmp_file("v2.npy");
    write_bytes(p, npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", payload, major));
    auto a = npy::read(p);
    auto d = npy::to_f64(a);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0], 1.5);
    EXPECT_EQ(d[1], -2.25);
  }
}

TEST(Npy, Bf16StoredAsFloat32) {
  // 1 + 2^-8 is not a bf16: ties to even gives 1.0; 1 + 3*2^-8 rounds up to 1 + 2^-6.
  std::vector<float> f = {1.0f, -2.5f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 3.0e38f};
  fs::path p = tmp_file("bf.npy");
  npy::write_as(p, npy::DType::F32, f.data(), {5});
  std::vector<std::int64_t> shape;
  auto raw = npy::read_as(p, npy::DType::BF16, &shape);
  ASSERT_EQ(raw.size(), 10u);
  EXPECT_EQ(shape, std::vector<std::int64_t>{5});
  std::vector<std::uint16_t> b(5);
  std::memcpy(b.data(), raw.data(), 10);
  EXPECT_EQ(b[0], 0x3F80);
  EXPECT_EQ(b[1], 0xC020);
  EXPECT_EQ(b[2], 0x3F80);
  EXPECT_EQ(b[3], 0x3F82);
  EXPECT_EQ(npy::float_from_bf16(b[4]), npy::float_from_bf16(npy::bf16_from_float(3.0e38f)));
  // Writing bf16 gives '<f4' with exactly the widened values.
  npy::write_as(p, npy::DType::BF16, b.data(), {5});
  auto a = npy::read(p);
  EXPECT_EQ(a.dtype, npy::DType::F32);
  auto d = npy::to_f64(a);
  EXPECT_EQ(d[1], -2.5);
  EXPECT_EQ(d[3], 1.0 + 1.0 / 64);
}

TEST(Npy, HalfConversions) {
  EXPECT_EQ(npy::half_from_float(1.0f), 0x3C00);
  EXPECT_EQ(npy::half_from_float(-2.0f), 0xC000);
  EXPECT_EQ(npy::half_from_float(65504.0f), 0x7BFF);
  EXPECT_EQ(npy::half_from_float(1e6f), 0x7C00);
  EXPECT_EQ(npy::float_from_half(0x0001), std::ldexp(1.0f, -24));
  for (std::uint32_t h = 0; h < 0x7C00; ++h)
    ASSERT_EQ(npy::half_from_float(npy::float_from_half(static_cast<std::uint16_t>(h))), h);
}

TEST(Npy, ConvertsIntegerFiles) {
  std::vector<std::int64_t> v = {0, 7, 1000};
  fs::path p = tmp_file("i.npy");
  npy::write_as(p, npy::DType::I64, v.data(), {3});
  auto raw = npy::read_as(p, npy::DType::I32);
  std::vector<std::int32_t> w(3);
  std::memcpy(w.data(), raw.data(), 12);
  EXPECT_EQ(w[2], 1000);
  try {
    npy::read_as(p, npy::DType::F32);
    FAIL() << "integer file read as float";
  } catch (const npy::Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds i64 but a f32 tensor was expected"), std::string::npos) << e.what();
  }
}

TEST(Npy, BadFilesRefusedWithClearMessages) {
  const std::string four_floats(16, '\0');
  struct Case {
    std::string bytes, expect;
  };
  std::vector<Case> cases = {
      {"PK\x03\x04 not numpy at all", "bad magic"},
      {std::string("\x93NUMPY", 6), "bad magic"},
      {std::string("\x93NUMPY\x04\x00\x10\x00", 10), "unsupported .npy format version 4.0"},
      {std::string("\x93NUMPY\x01\x00\x00\x01{'descr'", 17), "truncated .npy header"},
      {npy_image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four_floats), "fortran_order True"},
      {npy_image("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four_floats), "big-endian"},
      {npy_image("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four_floats), "unsupported dtype '<c8'"},
      {npy_image("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", four_floats), "unsupported dtype '|O'"},
      {npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", four_floats), "truncated .npy payload"},
      {npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four_floats), "unexpected bytes after"},
      {npy_image("{'descr': '<f4', 'shape': (4,), }", four_floats), "must hold 'descr', 'fortran_order' and 'shape'"},
      {npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (4,x), }", four_floats), "malformed .npy header"},
      {npy_image("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", four_floats), "expected True or False"},
  };
  for (const auto& c : cases) {
    fs::path p = tmp_file("bad.npy");
    write_bytes(p, c.bytes);
    std::string msg = error_of(p);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "expected '" << c.expect << "', got '" << msg << "'";
    EXPECT_NE(msg.find(p.string()), std::string::npos) << "message does not name the file: " << msg;
  }
  std::string missing = error_of(tmp_file("does_not_exist.npy"));
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
}

TEST(Npy, WriteRefusesInconsistentArrays) {
  npy::Array a;
  a.dtype = npy::DType::F32;
  a.shape = {3};
  a.data.resize(8);
  EXPECT_THROW(npy::write(tmp_file("x.npy"), a), npy::Error);
  a.dtype = npy::DType::BF16;
  a.data.resize(6);
  EXPECT_THROW(npy::write(tmp_file("x.npy"), a), npy::Error);
}
