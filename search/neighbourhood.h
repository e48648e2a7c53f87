// search/neighbourhood.h — the moves local strategies make in a Space.
//
// Neighbours of a configuration differ in one parameter: "adjacent" ones by one
// step in its value list (the next larger or smaller tile, say), "hamming" ones by
// any other value. Only valid configurations are returned. Also here: drawing a
// random valid configuration, and one the Tuning has not seen yet.
#pragma once

#include <optional>
#include <vector>

#include "search/rng.h"
#include "search/space.h"
#include "search/strategy.h"

namespace tessera::search {

enum class Neighbourhood { adjacent, hamming };

std::vector<Config> neighbours(const Space& space, const Config& c, Neighbourhood kind);

// A uniformly random valid configuration; the space must have one.
Config random_valid(const Space& space, Rng& rng);

// A random valid configuration not yet evaluated, or nothing when all have been.
std::optional<Config> random_unseen(const Tuning& tuning, Rng& rng);

// Moves `steps` times to a random neighbour (adjacent first, hamming where a
// parameter has no valid adjacent value): the "kick" of iterated local search.
Config random_walk(const Space& space, Config c, int steps, Rng& rng);

}  // namespace tessera::search
