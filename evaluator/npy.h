// evaluator/npy.h — reading and writing NumPy .npy files (format versions 1, 2, 3).
//
// What lives here: the .npy header (magic, version, the Python-dict header with
// 'descr', 'fortran_order', 'shape'), the raw little-endian payload, and the
// conversions tessera needs between a file's dtype and a tensor's dtype. Used by
// `tessera run` (inputs from .npy, outputs to .npy) and by the tests that read the
// shared test vectors. No CUDA here.
//
// What does not: anything about operators or specs; .npz archives; object arrays;
// Fortran-ordered arrays (refused: tessera's buffers are C-order, and transposing
// silently would hide a layout mistake).
//
// dtypes: '<f8' (f64), '<f4' (f32), '<f2' (f16, kept as raw 16-bit words),
// '<i8' (i64), '<i4' (i32); '|' or '=' byte order is accepted for these as well on
// this little-endian host. Big-endian ('>') and any other kind are refused.
//
// bf16: NumPy has no bfloat16 dtype. tessera stores a bf16 tensor in a .npy file as
// float32 ('<f4'): `read_as(path, DType::BF16)` converts each float32 to bf16 with
// round-to-nearest-even (exact when the file holds bf16-representable values, as
// the shared datasets do), and `write_as(path, DType::BF16, ...)` widens each bf16 to
// float32 exactly. A .npy file never holds a raw bf16 payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::npy {

// The element types tessera's tensors use (same names as the spec's dtypes).
enum class DType { F64, F32, F16, BF16, I64, I32 };

// Size of one element in bytes (in memory; BF16 and F16 are 2).
std::size_t dtype_size(DType t);
// "f64", "f32", ... as written in spec.json.
const char* dtype_name(DType t);

// A failure to read or write a .npy file. what() names the file and the problem.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An array as stored in a file: dtype of the file, C-order shape, raw bytes.
// `dtype` is never BF16 for an Array read from or written to a file.
struct Array {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // empty = a 0-d scalar (one element)
  std::vector<std::uint8_t> data;   // little-endian, C order, count() * dtype_size

  std::int64_t count() const;  // product of shape (1 for 0-d)
};

// Reads a .npy file. Throws Error for: a missing/unreadable file, a bad magic
// string, an unknown version, a malformed header, fortran_order True, an
// unsupported dtype, a truncated payload or trailing bytes after it.
Array read(const std::filesystem::path& path);

// Writes `a` (v1 header, or v2 when the header would not fit in 65535 bytes).
// Throws Error if a.dtype is BF16, if data.size() disagrees with the shape, or if
// the file cannot be written.
void write(const std::filesystem::path& path, const Array& a);

// Parses a .npy image held in memory (`name` is used in messages only).
Array parse(const std::vector<std::uint8_t>& bytes, const std::string& name);
// Serializes to a .npy image in memory.
std::vector<std::uint8_t> serialize(const Array& a);

// Reads a file and converts its elements to `target` (raw little-endian bytes of
// `target`, C order). Floating conversions: f64/f32/f16 files to any float
// target; bf16 target from a float file (rounded to nearest even). Integer files
// convert to integer targets (range-checked). Float<->integer is refused.
// `shape_out`, when non-null, receives the file's shape.
std::vector<std::uint8_t> read_as(const std::filesystem::path& path, DType target,
                                  std::vector<std::int64_t>* shape_out = nullptr);

// Writes `count(shape)` elements of type `source` held in `data` to a file; BF16 is
// written as '<f4' (exact), every other dtype as itself.
void write_as(const std::filesystem::path& path, DType source, const void* data,
              const std::vector<std::int64_t>& shape);

// Element conversions (exposed for tests and for the evaluator's host code).
std::uint16_t bf16_from_float(float f);  // round to nearest even; NaN stays NaN
float float_from_bf16(std::uint16_t b);
float float_from_half(std::uint16_t h);
std::uint16_t half_from_float(float f);  // round to nearest even

// Convenience for host-side checks: every element of a float or integer array as
// double.
std::vector<double> to_f64(const Array& a);

}  // namespace tessera::npy
