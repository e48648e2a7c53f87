// tests/search/kt_cache_test.cpp — reading Kernel Tuner caches (closed, unclosed,
// gzipped) and replaying them as a Simulation.
#include "search/kt_cache.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "search/simulation.h"

namespace tessera::search {
namespace {

const std::string kData = TESSERA_SEARCH_TEST_DATA;

const KtCacheEntry* find(const KtCache& c, const std::vector<std::string>& values) {
  for (auto& e : c.entries)
    if (e.values == values) return &e;
  return nullptr;
}

void expect_tiny(const KtCache& c, size_t entries) {
  ASSERT_EQ(c.params.size(), 3u);
  EXPECT_EQ(c.params[0].name, "block_size_x");
  EXPECT_EQ(c.params[0].values, (std::vector<std::string>{"32", "64", "128"}));
  EXPECT_EQ(c.params[2].values, (std::vector<std::string>{"True", "False"}));  // Python's str()
  EXPECT_EQ(c.kernel_name, "tiny_kernel");
  ASSERT_EQ(c.entries.size(), entries);
  const KtCacheEntry* ok = find(c, {"32", "2", "True"});
  ASSERT_NE(ok, nullptr);
  EXPECT_TRUE(ok->ok);
  EXPECT_DOUBLE_EQ(ok->time_ms, 2.25);
  EXPECT_DOUBLE_EQ(ok->compile_ms, 500.0);
  EXPECT_DOUBLE_EQ(ok->benchmark_ms, 250.0);
  const KtCacheEntry* cf = find(c, {"64", "1", "True"});
  ASSERT_NE(cf, nullptr);
  EXPECT_FALSE(cf->ok);
  EXPECT_EQ(cf->failure, "CompilationFailedConfig");
  EXPECT_EQ(find(c, {"64", "2", "False"})->failure, "RuntimeFailedConfig");
  EXPECT_EQ(find(c, {"128", "2", "False"})->failure, "InvalidConfig");
}

TEST(KtCache, ReadsClosedFile) {
  KtCache c = read_kt_cache(kData + "/tiny.json");
  EXPECT_FALSE(c.repaired);
  expect_tiny(c, 6);
  EXPECT_TRUE(find(c, {"128", "1", "False"})->ok);
}

TEST(KtCache, ReadsGzippedFileLikePlain) {
  KtCache c = read_kt_cache(kData + "/tiny.json.gz");
  EXPECT_FALSE(c.repaired);
  expect_tiny(c, 6);
}

TEST(KtCache, RepairsUnclosedFileDroppingHalfWrittenEntry) {
  KtCache c = read_kt_cache(kData + "/tiny_unclosed.json");
  EXPECT_TRUE(c.repaired);
  expect_tiny(c, 5);
  EXPECT_EQ(find(c, {"128", "1", "False"}), nullptr);
}

TEST(KtCache, UnreadableFileNamesIt) {
  try {
    read_kt_cache(kData + "/no-such-file.json");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-file.json"), std::string::npos);
  }
}

TEST(KtCache, CloseTruncatedJson) {
  using nlohmann::json;
  EXPECT_EQ(close_truncated_json("{\"a\": [1, 2]}"), "{\"a\": [1, 2]}");
  EXPECT_EQ(json::parse(close_truncated_json("{\"a\": 1, \"b\": {\"c\": [1, 2")),
            json::parse("{\"a\": 1, \"b\": {\"c\": [1]}}"));
  // Depth-limited: an incomplete member at depth 3 goes as a whole.
  EXPECT_EQ(json::parse(close_truncated_json("{\"c\": {\"k1\": {\"t\": 1}, \"k2\": {\"t\": 2, \"u\"", 2)),
            json::parse("{\"c\": {\"k1\": {\"t\": 1}}}"));
  // Brackets inside strings do not count.
  EXPECT_EQ(json::parse(close_truncated_json("{\"c\": {\"k}1\": {\"t\": \"[\"}, \"k2\": {", 2)),
            json::parse("{\"c\": {\"k}1\": {\"t\": \"[\"}}}"));
}

TEST(Simulation, ReplaysCacheWithFailuresAndSimulatedSeconds) {
  Simulation sim = Simulation::from_kt_cache(read_kt_cache(kData + "/tiny.json"));
  const Space& space = sim.space();
  EXPECT_EQ(space.cartesian_size(), 12u);
  EXPECT_EQ(space.valid_configs().size(), 5u);  // InvalidConfig is outside the space
  EXPECT_EQ(sim.failed(), 2u);
  EXPECT_EQ(sim.sorted_costs(), (std::vector<double>{1.75, 2.25, 3.5}));
  Config good{0, 1, 0}, compile_failed{1, 0, 0}, invalid{2, 1, 1}, unrecorded{2, 0, 0};
  EXPECT_EQ(space.key(good), "32,2,True");
  EXPECT_TRUE(space.is_valid(compile_failed));
  EXPECT_FALSE(space.is_valid(invalid));
  EXPECT_FALSE(space.is_valid(unrecorded));
  auto got = sim.evaluate({good, compile_failed, unrecorded});
  EXPECT_TRUE(got[0].ok);
  EXPECT_DOUBLE_EQ(got[0].cost, 2.25);
  EXPECT_DOUBLE_EQ(got[0].seconds, 0.75);  // (500 + 0 + 250) ms
  EXPECT_FALSE(got[1].ok);
  EXPECT_EQ(got[1].failure, "CompilationFailedConfig");
  EXPECT_DOUBLE_EQ(got[1].seconds, 1.2);
  EXPECT_FALSE(got[2].ok);
}

}  // namespace
}  // namespace tessera::search
