// search/rng.h — the random numbers strategies draw, identical on every platform.
//
// std::uniform_*_distribution may differ between standard libraries; these do not,
// so a strategy run with a given seed proposes the same configurations everywhere.
#pragma once

#include <cstdint>
#include <random>

namespace tessera::search {

using Rng = std::mt19937_64;

// Uniform in [0, n), n > 0 (the modulo bias is below 2^-40 for any realistic n).
inline size_t pick(Rng& rng, size_t n) {
  return static_cast<size_t>(rng() % n);
}

// Uniform in [0, 1).
inline double uniform01(Rng& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace tessera::search
