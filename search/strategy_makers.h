// search/strategy_makers.h — constructors of the strategies, one per strategy file.
//
// Only the registry (strategies.cpp) includes this; everyone else asks
// make_strategy(name) so that strategies stay interchangeable.
#pragma once

#include <memory>

#include "search/strategy.h"

namespace tessera::search {

std::unique_ptr<Strategy> make_simulated_annealing();  // strategy_annealing.cpp
std::unique_ptr<Strategy> make_genetic_algorithm();    // strategy_genetic.cpp
std::unique_ptr<Strategy> make_greedy_ils();           // strategy_greedy_ils.cpp
std::unique_ptr<Strategy> make_bayes_opt();            // strategy_bayes.cpp
std::unique_ptr<Strategy> make_genetic_ils();          // strategy_genetic_ils.cpp
std::unique_ptr<Strategy> make_portfolio();            // strategy_portfolio.cpp

}  // namespace tessera::search
