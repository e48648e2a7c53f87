// evaluator/npy.cpp — the .npy reader and writer declared in npy.h.
//
// The header is parsed by a small hand-written scanner for the subset of Python
// literal syntax that numpy writes: a dict with string keys, a string ('descr'),
// a bool ('fortran_order') and a tuple of non-negative integers ('shape').
// Assumes a little-endian host (checked at compile time).
#include "evaluator/npy.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace tessera::npy {

static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw Error(name + ": " + what);
}

// Minimal scanner over the header dict.
struct Scanner {
  const std::string& s;
  const std::string& name;
  std::size_t i = 0;

  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool peek(char c) {
    ws();
    return i < s.size() && s[i] == c;
  }
  void expect(char c) {
    ws();
    if (i >= s.size() || s[i] != c)
      fail(name,
           std::string("malformed .npy header: expected '") + c + "' at offset " + std::to_string(i) + " in " + s);
    ++i;
  }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"'))
      fail(name, "malformed .npy header: expected a string at offset " + std::to_string(i) + " in " + s);
    char q = s[i++];
    std::size_t start = i;
    while (i < s.size() && s[i] != q) ++i;
    if (i >= s.size()) fail(name, "malformed .npy header: unterminated string in " + s);
    std::string out = s.substr(start, i - start);
    ++i;
    return out;
  }
  bool boolean() {
    ws();
    if (s.compare(i, 4, "True") == 0) {
      i += 4;
      return true;
    }
    if (s.compare(i, 5, "False") == 0) {
      i += 5;
      return false;
    }
    fail(name, "malformed .npy header: expected True or False for fortran_order in " + s);
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> out;
    while (!peek(')')) {
      ws();
      std::size_t start = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (start == i) fail(name, "malformed .npy header: expected a non-negative integer in shape in " + s);
      std::int64_t v = 0;
      for (std::size_t j = start; j < i; ++j) {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
          fail(name, "malformed .npy header: shape dimension too large in " + s);
        v = v * 10 + (s[j] - '0');
      }
      ws();
      if (i < s.size() && s[i] == 'L') ++i;  // Python 2 long suffix
      out.push_back(v);
      if (peek(','))
        ++i;
      else if (!peek(')'))
        fail(name, "malformed .npy header: bad shape tuple in " + s);
    }
    expect(')');
    return out;
  }
};

DType dtype_from_descr(const std::string& d, const std::string& name) {
  if (d.size() >= 2) {
    char order = d[0];
    std::string kind = d.substr(1);
    if (order == '>')
      fail(name, "unsupported dtype '" + d + "': big-endian data is not supported (save with a little-endian dtype)");
    if (order == '<' || order == '|' || order == '=') {
      if (kind == "f8") return DType::F64;
      if (kind == "f4") return DType::F32;
      if (kind == "f2") return DType::F16;
      if (kind == "i8") return DType::I64;
      if (kind == "i4") return DType::I32;
    }
  }
  fail(name, "unsupported dtype '" + d + "' (supported: <f8, <f4, <f2, <i8, <i4; bf16 tensors are stored as <f4)");
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::F64:
      return "<f8";
    case DType::F32:
      return "<f4";
    case DType::F16:
      return "<f2";
    case DType::I64:
      return "<i8";
    case DType::I32:
      return "<i4";
    case DType::BF16:
      break;
  }
  return nullptr;
}

bool is_float(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

std::int64_t shape_count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

double element_as_double(const Array& a, std::int64_t i) {
  const std::uint8_t* p = a.data.data();
  switch (a.dtype) {
    case DType::F64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::F16: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return float_from_half(v);
    }
    case DType::BF16: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return float_from_bf16(v);
    }
    case DType::I64: {
      std::int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
    case DType::I32: {
      std::int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
  }
  return 0;
}

std::int64_t element_as_int(const Array& a, std::int64_t i) {
  const std::uint8_t* p = a.data.data();
  if (a.dtype == DType::I64) {
    std::int64_t v;
    std::memcpy(&v, p + 8 * i, 8);
    return v;
  }
  std::int32_t v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}

}  // namespace

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F64:
      return "f64";
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::I64:
      return "i64";
    case DType::I32:
      return "i32";
  }
  return "?";
}

std::int64_t Array::count() const {
  return shape_count(shape);
}

std::uint16_t bf16_from_float(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}

float float_from_bf16(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

float float_from_half(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

std::uint16_t half_from_float(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  if (std::isnan(f)) return sign | 0x7E00;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {          // subnormal half (or zero)
    float m = a * std::ldexp(1.0f, 24);     // exact scaling; round to nearest even
    return sign | static_cast<std::uint16_t>(std::nearbyint(m));
  }
  std::uint32_t e = ((u >> 23) & 0xFF) - 112, man = u & 0x7FFFFF;
  std::uint32_t h = (e << 10) | (man >> 13);
  std::uint32_t rest = man & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into exponent correctly
  return sign | static_cast<std::uint16_t>(h);
}

Array parse(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  if (bytes.size() < kMagicLen + 2 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    fail(name, "not a .npy file (bad magic: the file must start with \\x93NUMPY)");
  int major = bytes[6], minor = bytes[7];
  std::size_t hlen = 0, hstart = 0;
  if (major == 1) {
    if (bytes.size() < 10) fail(name, "truncated .npy header");
    hlen = bytes[8] | (bytes[9] << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(name, "truncated .npy header");
    hlen = static_cast<std::size_t>(bytes[8]) | (static_cast<std::size_t>(bytes[9]) << 8) |
           (static_cast<std::size_t>(bytes[10]) << 16) | (static_cast<std::size_t>(bytes[11]) << 24);
    hstart = 12;
  } else {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  }
  if (bytes.size() < hstart + hlen)
    fail(name, "truncated .npy header (header length " + std::to_string(hlen) + ", file " +
                   std::to_string(bytes.size()) + " bytes)");
  std::string header(reinterpret_cast<const char*>(bytes.data() + hstart), hlen);

  Scanner sc{header, name};
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  std::string descr;
  Array a;
  sc.expect('{');
  while (!sc.peek('}')) {
    std::string key = sc.str();
    sc.expect(':');
    if (key == "descr") {
      if (sc.peek('[')) fail(name, "unsupported dtype: structured arrays are not supported");
      descr = sc.str();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = sc.boolean();
      have_order = true;
    } else if (key == "shape") {
      a.shape = sc.tuple();
      have_shape = true;
    } else {
      fail(name, "malformed .npy header: unexpected key '" + key + "'");
    }
    if (sc.peek(','))
      sc.expect(',');
    else if (!sc.peek('}'))
      fail(name, "malformed .npy header: expected ',' or '}' in " + header);
  }
  sc.expect('}');
  if (!have_descr || !have_order || !have_shape)
    fail(name, "malformed .npy header: it must hold 'descr', 'fortran_order' and 'shape': " + header);
  if (fortran)
    fail(name,
         "fortran_order True is not supported: save the array in C order "
         "(numpy.ascontiguousarray) first");
  a.dtype = dtype_from_descr(descr, name);

  std::int64_t n = 1;
  for (auto d : a.shape) {
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 8 / d) fail(name, "shape too large");
    n *= d;
  }
  std::size_t need = static_cast<std::size_t>(n) * dtype_size(a.dtype);
  std::size_t have = bytes.size() - hstart - hlen;
  if (have < need)
    fail(name, "truncated .npy payload: shape and dtype " + descr + " need " + std::to_string(need) +
                   " bytes, the file holds " + std::to_string(have));
  if (have > need)
    fail(name, std::to_string(have - need) + " unexpected bytes after the .npy payload (shape and " + "dtype " + descr +
                   " need " + std::to_string(need) + ")");
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(hstart + hlen), bytes.end());
  return a;
}

Array read(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path.string(), "cannot open for reading");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail(path.string(), "read error");
  return parse(bytes, path.string());
}

std::vector<std::uint8_t> serialize(const Array& a) {
  const char* descr = descr_of(a.dtype);
  if (!descr) throw Error("npy: a bf16 array cannot be stored raw in .npy; use write_as(..., DType::BF16, ...)");
  if (a.data.size() != static_cast<std::size_t>(a.count()) * dtype_size(a.dtype))
    throw Error("npy: data holds " + std::to_string(a.data.size()) + " bytes, shape and dtype need " +
                std::to_string(a.count() * static_cast<std::int64_t>(dtype_size(a.dtype))));
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    h << a.shape[i] << ",";
    if (i + 1 < a.shape.size()) h << " ";
  }
  if (a.shape.size() > 1) {  // numpy writes (3, 4) but (3,) for one dimension
    std::string s = h.str();
    s.pop_back();
    h.str("");
    h << s;
  }
  h << "), }";
  std::string header = h.str();
  // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64.
  int major = 1;
  std::size_t prefix = 10;
  std::size_t total = prefix + header.size() + 1;
  std::size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 65535) {
    major = 2;
    prefix = 12;
    total = prefix + header.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  header.append(padded - total, ' ');
  header.push_back('\n');
  std::string head(kMagic, kMagicLen);
  head.push_back(static_cast<char>(major));
  head.push_back('\0');
  std::size_t hl = header.size();
  head.push_back(static_cast<char>(hl & 0xFF));
  head.push_back(static_cast<char>((hl >> 8) & 0xFF));
  if (major == 2) {
    head.push_back(static_cast<char>((hl >> 16) & 0xFF));
    head.push_back(static_cast<char>((hl >> 24) & 0xFF));
  }
  head += header;
  std::vector<std::uint8_t> out(head.size() + a.data.size());
  std::memcpy(out.data(), head.data(), head.size());
  if (!a.data.empty()) std::memcpy(out.data() + head.size(), a.data.data(), a.data.size());
  return out;
}

void write(const std::filesystem::path& path, const Array& a) {
  std::vector<std::uint8_t> bytes = serialize(a);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(path.string(), "cannot open for writing");
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) fail(path.string(), "write error");
}

std::vector<double> to_f64(const Array& a) {
  std::vector<double> out(static_cast<std::size_t>(a.count()));
  for (std::int64_t i = 0; i < a.count(); ++i) out[i] = element_as_double(a, i);
  return out;
}

std::vector<std::uint8_t> read_as(const std::filesystem::path& path, DType target,
                                  std::vector<std::int64_t>* shape_out) {
  Array a = read(path);
  if (shape_out) *shape_out = a.shape;
  if (a.dtype == target) return std::move(a.data);
  const std::string name = path.string();
  if (is_float(a.dtype) != is_float(target))
    fail(name, std::string("the file holds ") + dtype_name(a.dtype) + " but a " + dtype_name(target) +
                   " tensor was expected (no float/integer conversion)");
  std::int64_t n = a.count();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n) * dtype_size(target));
  std::uint8_t* p = out.data();
  for (std::int64_t i = 0; i < n; ++i) {
    if (is_float(target)) {
      double v = element_as_double(a, i);
      switch (target) {
        case DType::F64:
          std::memcpy(p + 8 * i, &v, 8);
          break;
        case DType::F32: {
          float f = static_cast<float>(v);
          std::memcpy(p + 4 * i, &f, 4);
          break;
        }
        case DType::F16: {
          std::uint16_t h = half_from_float(static_cast<float>(v));
          std::memcpy(p + 2 * i, &h, 2);
          break;
        }
        case DType::BF16: {
          std::uint16_t b = bf16_from_float(static_cast<float>(v));
          std::memcpy(p + 2 * i, &b, 2);
          break;
        }
        default:
          break;
      }
    } else {
      std::int64_t v = element_as_int(a, i);
      if (target == DType::I32) {
        if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
          fail(name, "element " + std::to_string(i) + " = " + std::to_string(v) + " does not fit in i32");
        std::int32_t w = static_cast<std::int32_t>(v);
        std::memcpy(p + 4 * i, &w, 4);
      } else {
        std::memcpy(p + 8 * i, &v, 8);
      }
    }
  }
  return out;
}

void write_as(const std::filesystem::path& path, DType source, const void* data,
              const std::vector<std::int64_t>& shape) {
  Array a;
  a.shape = shape;
  std::int64_t n = shape_count(shape);
  if (source == DType::BF16) {
    a.dtype = DType::F32;
    a.data.resize(static_cast<std::size_t>(n) * 4);
    const auto* src = static_cast<const std::uint8_t*>(data);
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint16_t b;
      std::memcpy(&b, src + 2 * i, 2);
      float f = float_from_bf16(b);
      std::memcpy(a.data.data() + 4 * i, &f, 4);
    }
  } else {
    a.dtype = source;
    const auto* src = static_cast<const std::uint8_t*>(data);
    a.data.assign(src, src + static_cast<std::size_t>(n) * dtype_size(source));
  }
  write(path, a);
}

}  // namespace tessera::npy
