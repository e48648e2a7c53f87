// tests/gpu/pdl_test.cpp — a plan whose second step is a programmatic dependent launch
// (spec::KernelLaunch::pdl) through the judge (fixtures/pdl_rmsnorm): the dependent must
// start while the kernel before it still runs (the first waits for a flag only it raises
// before its grid dependency wait), and its wait must hold until that kernel has ended (it
// rounds what the first wrote), in validation and in both timing paths (events, captured
// graph). The same two kernels in plain stream order must fail, or the test could not tell.
#include <gtest/gtest.h>

#include <filesystem>
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

TEST(Judge, LaunchesProgrammaticDependentsWhileTheKernelBeforeThemRuns) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  {
    auto drv = tessera::evaluator::Driver::load(&why);
    ASSERT_TRUE(drv) << why;
    tessera::evaluator::Device dev(drv, 0);
    const std::string arch = dev.info().arch();
    if (arch.rfind("sm_9", 0) != 0 && arch.rfind("sm_10", 0) != 0 && arch.rfind("sm_12", 0) != 0)
      GTEST_SKIP() << "programmatic dependent launches need sm_90 or later; this GPU is " << arch;
  }
  ASSERT_TRUE(fs::exists(binary())) << "no tessera binary at " << binary();
  fs::path targets =
      tessera::testing::make_rmsnorm_fixture_targets(tessera::testing::source_dir(), "pdl_rmsnorm", "pdl");
  const std::string env = "TESSERA_TARGETS=" + targets.string() + " ";
  struct Session {
    const char* tpl;
    const char* graph_below_ms;
    const char* method;
  };
  for (const Session& s : {Session{"pdl", "5", "graph"}, Session{"pdl", "0", "events"}, Session{"serial", "0", ""}}) {
    const std::string db = (targets / (std::string(s.tpl) + s.graph_below_ms + ".db")).string();
    const std::string out =
        run(env + binary() + " optimize pdl_rmsnorm --template " + s.tpl +
            " --strategy exhaustive --budget 1 --timeout 30 --max-seconds-per-shape 0.3 --graph-below-ms " +
            s.graph_below_ms + " --quiet --db " + db);
    SCOPED_TRACE(std::string(s.tpl) + " " + s.graph_below_ms + ":\n" + out);
    const auto rows = nlohmann::json::parse(
        run(env + binary() + " leaderboard pdl_rmsnorm --json --limit 10 --db " + db), nullptr, false);
    ASSERT_TRUE(rows.is_array() && rows.size() == 1u) << rows.dump();
    if (std::string(s.tpl) == "serial") {
      EXPECT_EQ(rows[0]["status"], "wrong_result");
      continue;
    }
    EXPECT_EQ(rows[0]["status"], "ok");
    const auto shown = nlohmann::json::parse(
        run(binary() + " show " + std::to_string(rows[0]["candidate"].get<long long>()) + " --json --db " + db),
        nullptr, false);
    ASSERT_FALSE(shown.is_discarded());
    const auto& timings = shown["evaluations"].back()["report"]["timings"];
    ASSERT_FALSE(timings.empty());
    for (auto& t : timings) {
      EXPECT_EQ(t.value("method", ""), s.method) << t["shape"];
      // block 0 of the first kernel writes its rows 1 ms after the handshake: a timing that
      // ended before the dependent (and with it the first kernel) would be shorter
      EXPECT_GE(t["candidate"]["median_ms"].get<double>(), 0.95) << t["shape"];
    }
  }
  fs::remove_all(targets);
}
