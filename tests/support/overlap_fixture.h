// tests/support/overlap_fixture.h — the GPU tests of a plan whose two kernels must overlap
// (tests/gpu/fixtures/side_rmsnorm: a side launch; pdl_rmsnorm: a programmatic dependent),
// through the judge as `tessera optimize` runs it. Three sessions on the fixture's targets:
// its overlapping template timed by captured graphs (--graph-below-ms 5: every rmsnorm
// baseline here is shorter) and by events (0), and its `serial` template (the same kernels in
// plain stream order), which must fail validation, or the test could not tell. In both
// fixtures a kernel holds its SM for 1 ms after its rows, so an ok timing that did not wait
// for every kernel of the plan would be shorter than 0.95 ms.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/gpu.h"
#include "tests/support/hostile_targets.h"
#include "tests/support/shell.h"

namespace tessera::testing {

// binary: the tessera binary; fixture: the folder under tests/gpu/fixtures (also the
// operator's name); tpl: the template whose kernels overlap.
inline void expect_overlap_judged(const std::string& binary, const std::string& fixture, const std::string& tpl) {
  namespace fs = std::filesystem;
  const fs::path targets = make_rmsnorm_fixture_targets(source_dir(), fixture, tpl);
  const std::string env = "TESSERA_TARGETS=" + targets.string() + " ";
  struct Session {
    std::string tpl;
    const char* graph_below_ms;
    const char* method;
  };
  for (const Session& s : {Session{tpl, "5", "graph"}, Session{tpl, "0", "events"}, Session{"serial", "0", ""}}) {
    const std::string db = (targets / (s.tpl + s.graph_below_ms + ".db")).string();
    const std::string out = shell(env + binary + " optimize " + fixture + " --template " + s.tpl +
                                  " --strategy exhaustive --budget 1 --timeout 30 --max-seconds-per-shape 0.3" +
                                  " --graph-below-ms " + s.graph_below_ms + " --quiet --db " + db)
                                .out;
    SCOPED_TRACE(s.tpl + " " + s.graph_below_ms + ":\n" + out);
    const auto rows = nlohmann::json::parse(
        shell(env + binary + " leaderboard " + fixture + " --json --limit 10 --db " + db).out, nullptr, false);
    ASSERT_TRUE(rows.is_array() && rows.size() == 1u) << rows.dump();
    if (s.tpl == "serial") {
      EXPECT_EQ(rows[0]["status"], "wrong_result");
      continue;
    }
    EXPECT_EQ(rows[0]["status"], "ok");
    const auto shown = nlohmann::json::parse(
        shell(binary + " show " + std::to_string(rows[0]["candidate"].get<long long>()) + " --json --db " + db).out,
        nullptr, false);
    ASSERT_FALSE(shown.is_discarded());
    const auto& timings = shown["evaluations"].back()["report"]["timings"];
    ASSERT_FALSE(timings.empty());
    for (const auto& t : timings) {
      EXPECT_EQ(t.value("method", ""), s.method) << t["shape"];
      EXPECT_GE(t["candidate"]["median_ms"].get<double>(), 0.95) << t["shape"];
    }
  }
  fs::remove_all(targets);
}

}  // namespace tessera::testing
