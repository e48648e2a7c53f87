// search/neighbourhood.h — the moves local strategies make in a Space.
//
// Neighbours of a configuration differ in one parameter: "adjacent" ones by one
// step in its value list (the next larger or smaller tile, say), "hamming" ones by
// any other value; "exchanges" swap the values of two parameters. Only valid
// configurations are returned. Also here: drawing a random valid configuration,
// and one the Tuning has not seen yet.
#pragma once

#include <optional>
#include <vector>

#include "search/rng.h"
#include "search/space.h"
#include "search/strategy.h"

namespace tessera::search {

enum class Neighbourhood { adjacent, hamming };

std::vector<Config> neighbours(const Space& space, const Config& c, Neighbourhood kind);

// Valid configurations that exchange the values of two parameters with the same
// value list (a tile of 128 x 64 becomes 64 x 128): transposed shapes often perform
// alike, yet they are several single-parameter steps apart.
std::vector<Config> exchanges(const Space& space, const Config& c);

// A uniformly random valid configuration; the space must have one.
Config random_valid(const Space& space, Rng& rng);

// A random valid configuration not yet evaluated, or nothing when all have been.
std::optional<Config> random_unseen(const Tuning& tuning, Rng& rng);

}  // namespace tessera::search
