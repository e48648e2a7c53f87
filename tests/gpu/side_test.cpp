// tests/gpu/side_test.cpp — a plan with a side launch (spec::KernelLaunch::stream) through
// the judge (fixtures/side_rmsnorm): the side kernel, forked first, must run beside the
// main kernel launched after it (they wait on each other), and the program's end must wait
// for it, in validation and in both timing paths (events, captured graph). The same two
// kernels on one stream must fail, or the test could not tell.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/support/gpu.h"
#include "tests/support/hostile_targets.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;

namespace {
std::string binary() {
  const char* e = std::getenv("TESSERA_BIN");
  return e ? e : TESSERA_BINARY;
}
std::string run(const std::string& cmd) {
  return tessera::testing::shell(cmd).out;
}
}  // namespace

TEST(Judge, RunsSideLaunchesBesideTheMainStreamAndWaitsForThem) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  ASSERT_TRUE(fs::exists(binary())) << "no tessera binary at " << binary();
  fs::path targets =
      tessera::testing::make_rmsnorm_fixture_targets(tessera::testing::source_dir(), "side_rmsnorm", "side");
  const std::string env = "TESSERA_TARGETS=" + targets.string() + " ";
  // Three sessions: the side template timed by captured graphs (--graph-below-ms 5: every
  // rmsnorm baseline here is shorter) and by events (0), the serial one.
  struct Session {
    const char* tpl;
    const char* graph_below_ms;
    const char* method;
  };
  for (const Session& s : {Session{"side", "5", "graph"}, Session{"side", "0", "events"}, Session{"serial", "0", ""}}) {
    const std::string db = (targets / (std::string(s.tpl) + s.graph_below_ms + ".db")).string();
    const std::string out =
        run(env + binary() + " optimize side_rmsnorm --template " + s.tpl +
            " --strategy exhaustive --budget 1 --timeout 30 --max-seconds-per-shape 0.3 --graph-below-ms " +
            s.graph_below_ms + " --quiet --db " + db);
    SCOPED_TRACE(std::string(s.tpl) + " " + s.graph_below_ms + ":\n" + out);
    const auto rows = nlohmann::json::parse(
        run(env + binary() + " leaderboard side_rmsnorm --json --limit 10 --db " + db), nullptr, false);
    ASSERT_TRUE(rows.is_array() && rows.size() == 1u) << rows.dump();
    if (std::string(s.tpl) == "serial") {
      EXPECT_EQ(rows[0]["status"], "wrong_result");
      continue;
    }
    EXPECT_EQ(rows[0]["status"], "ok");
    // The side kernel's block 0 holds its SM for 1 ms after the rows: a timing that did not
    // wait for the side stream would be shorter than that.
    const auto shown = nlohmann::json::parse(
        run(binary() + " show " + std::to_string(rows[0]["candidate"].get<long long>()) + " --json --db " + db),
        nullptr, false);
    ASSERT_FALSE(shown.is_discarded());
    const auto& timings = shown["evaluations"].back()["report"]["timings"];
    ASSERT_FALSE(timings.empty());
    for (auto& t : timings) {
      EXPECT_EQ(t.value("method", ""), s.method) << t["shape"];
      EXPECT_GE(t["candidate"]["median_ms"].get<double>(), 0.95) << t["shape"];
    }
  }
  fs::remove_all(targets);
}
