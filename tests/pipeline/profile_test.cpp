// tests/pipeline/profile_test.cpp — `tessera profile` without a GPU or the real tools:
// fake ncu, compute-sanitizer, cuobjdump and nvdisasm (shell scripts in a temporary
// $TESSERA_TOOL_DIR that record their argv, start the worker behind them as the real
// ones do, and write a fake report) in front of the fake worker (fake_worker.cpp), or
// of the real worker where only the channel is under test. Candidates come from an
// optimize run with --gpus none (status compiled) on the hostile fixture.
#include "agent/profile.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/hostile_targets.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void script(const fs::path& p, const std::string& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  chmod(p.c_str(), 0755);
}

// ncu: `--import R --page details` prints a page; otherwise records its argv, skips its
// own options, runs the worker (the rest of its argv) and writes <--export>.ncu-rep.
// $FAKE_TOOL_EXIT replaces its exit status; $FAKE_TOOL_WRAP runs the worker through
// another command (closing its channel, dropping its secret).
const char* kFakeNcu = R"(if [ "$1" = "--import" ]; then echo "details of $2"; cat <<'PAGE'
  hostile (4096, 1, 1)x(256, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    DRAM Throughput                   %        81.25
    Duration                         us        12.50
    Compute (SM) Throughput           %        20.00
PAGE
exit 0; fi
printf '%s\n' "$@" > "$FAKE_TOOL_ARGV"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --export) out="$2"; shift 2;;
    --target-processes|--profile-from-start|--kernel-name|--launch-count|--set|--section) shift 2;;
    --force-overwrite) shift;;
    *) break;;
  esac
done
if [ "$FAKE_TOOL_WRAP" = closefds ]; then "$@" 3<&- 4<&-; st=$?
elif [ "$FAKE_TOOL_WRAP" = nosecret ]; then env -u TESSERA_WORKER_SECRET "$@"; st=$?
else "$@"; st=$?; fi
[ -n "$out" ] && echo "fake report" > "$out.ncu-rep"
exit ${FAKE_TOOL_EXIT:-$st}
)";

// compute-sanitizer: records its argv, runs the worker, writes --log-file with
// $FAKE_SANITIZER_ERRORS errors in its summary.
const char* kFakeSanitizer = R"(printf '%s\n' "$@" > "$FAKE_TOOL_ARGV"
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log-file) log="$2"; shift 2;;
    --tool|--print-limit) shift 2;;
    *) break;;
  esac
done
"$@"; st=$?
n=${FAKE_SANITIZER_ERRORS:-0}
echo "========= COMPUTE-SANITIZER" > "$log"
[ "$n" -gt 0 ] && echo "========= Invalid __global__ write of size 2 bytes" >> "$log"
echo "========= ERROR SUMMARY: $n errors" >> "$log"
exit $st
)";

// cuobjdump / nvdisasm: record their argv and print the cubin's magic (it must be an ELF file).
const char* kFakeDisassembler = R"(printf '%s\n' "$@" > "$FAKE_TOOL_ARGV"
for a; do last="$a"; done
echo "fake SASS of $last"
head -c 4 "$last" | tail -c 3
echo
)";

class Profile : public ::testing::Test {
 protected:
  void SetUp() override {
    targets_ = tessera::testing::make_hostile_targets(fs::path(TESSERA_SOURCE_DIR), "profile");
    db_ = targets_ / "profile.db";
    tools_ = targets_ / "tools";
    fs::create_directories(tools_);
    script(tools_ / "ncu", kFakeNcu);
    script(tools_ / "compute-sanitizer", kFakeSanitizer);
    script(tools_ / "cuobjdump", kFakeDisassembler);
    auto r = tessera::testing::shell("TESSERA_TARGETS=" + targets_.string() + " " + TESSERA_BINARY +
                                     " optimize hostile_rmsnorm --strategy exhaustive --budget 9 --gpus none "
                                     "--quiet --db " +
                                     db_.string());
    ASSERT_EQ(r.code, 0) << r.out;
  }
  void TearDown() override { fs::remove_all(targets_); }

  // `tessera profile hostile_rmsnorm ARGS` with the fake tools (and the fake worker
  // unless real_worker), the given extra environment first.
  tessera::testing::ShellResult profile(const std::string& args, const std::string& env = "",
                                        bool real_worker = false) {
    std::string e = "TESSERA_TARGETS=" + targets_.string() + " TESSERA_TOOL_DIR=" + tools_.string() +
                    " FAKE_TOOL_ARGV=" + (targets_ / "argv").string() +
                    " FAKE_WORKER_PROFILE_LOG=" + (targets_ / "requests").string() + " ";
    if (!real_worker) e += std::string("TESSERA_WORKER_CMD=") + FAKE_WORKER + " ";
    return tessera::testing::shell(e + env + " " + TESSERA_BINARY + " profile hostile_rmsnorm --db " + db_.string() +
                                   " " + args);
  }
  std::vector<std::string> argv() { return lines(targets_ / "argv"); }
  // The stored candidate of the hostile template with this KIND.
  long long id_of_kind(int kind) {
    auto r = tessera::testing::shell("TESSERA_TARGETS=" + targets_.string() + " " + TESSERA_BINARY +
                                     " leaderboard hostile_rmsnorm --json --limit 100 --db " + db_.string());
    for (auto& row : json::parse(r.out))
      if (row["params"]["KIND"] == kind) return row["candidate"].get<long long>();
    return -1;
  }
  json request() {
    auto l = lines(targets_ / "requests");
    return l.empty() ? json() : json::parse(l.back());
  }

  fs::path targets_, db_, tools_;
};

// The word after `flag` in argv ("" when absent).
std::string after(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag) return argv[i + 1];
  return "";
}

}  // namespace

TEST(ProfilePieces, KernelFilterNamesThePlansKernelsOnce) {
  tessera::spec::Program p;
  for (const char* k : {"kda_chunk_intra", "kda_chunk_state", "kda_chunk_intra", "odd.name"}) {
    tessera::spec::KernelLaunch l;
    l.kernel = k;
    p.launch.push_back(l);
  }
  EXPECT_EQ(tessera::agent::kernel_name_filter(p), R"(regex:^(kda_chunk_intra|kda_chunk_state|odd\.name)$)");
}

TEST(ProfilePieces, SanitizerErrorCountFromItsSummary) {
  using tessera::agent::sanitizer_errors;
  EXPECT_EQ(sanitizer_errors("========= ERROR SUMMARY: 0 errors\n"), 0);
  EXPECT_EQ(sanitizer_errors("x\n========= ERROR SUMMARY: 17 errors\n"), 17);
  EXPECT_EQ(sanitizer_errors("========= ERROR SUMMARY: 1 error\n"), 1);
  EXPECT_EQ(sanitizer_errors("========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)\n"
                             "========= ERROR SUMMARY: 0 errors\n"),
            2);
  EXPECT_EQ(sanitizer_errors("the tool crashed\n"), -1);
}

// ncu's details page, as `--section SpeedOfLight` leaves it (abridged: the real one has more
// metrics and advice between the kernels): a kernel launched twice, units of both ncu forms.
TEST(ProfilePieces, KernelTimesFromTheDetailsPage) {
  const std::string page = R"([679] tessera@127.0.0.1
  kda_chunk_intra (513, 16, 1)x(256, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Elapsed Cycles                cycle      750,618
    Memory Throughput                 %        54.87
    DRAM Throughput                   %        40.00
    Duration                         us       600.00
    SM Active Cycles              cycle   736,410.91
    Compute (SM) Throughput           %        56.10

    OPT   This workload exhibits low compute throughput and memory bandwidth utilization
  kda_chunk_state (144, 1, 1)x(256, 1, 1), Context 1, Stream 14, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    DRAM Throughput                   %        79.03
    Duration                    msecond         1.20
    Compute (SM) Throughput           %        46.30
  kda_chunk_intra (513, 16, 1)x(256, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    DRAM Throughput                   %        50.00
    Duration                    usecond       200.00
    Compute (SM) Throughput           %        60.00
  no_sol_kernel (1, 1, 1)x(32, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    Section: Memory Workload Analysis
    Memory Throughput             Gbyte/second       1.00
)";
  auto ks = tessera::agent::kernel_times(page);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kernel, "kda_chunk_intra");
  EXPECT_EQ(ks[0].launches, 2);
  EXPECT_NEAR(ks[0].ms, 0.8, 1e-12);
  EXPECT_NEAR(ks[0].dram_pct, (40.0 * 0.6 + 50.0 * 0.2) / 0.8, 1e-9) << "weighted by duration";
  EXPECT_NEAR(ks[0].sm_pct, (56.1 * 0.6 + 60.0 * 0.2) / 0.8, 1e-9);
  EXPECT_EQ(ks[1].kernel, "kda_chunk_state");
  EXPECT_EQ(ks[1].launches, 1);
  EXPECT_NEAR(ks[1].ms, 1.2, 1e-12);
  EXPECT_NEAR(ks[1].dram_pct, 79.03, 1e-9);
  EXPECT_TRUE(tessera::agent::kernel_times("the tool crashed\n").empty());
  // a duration in a unit it does not know: that kernel is left out, the page still read
  auto odd = tessera::agent::kernel_times(
      "  k1 (1, 1, 1)x(32, 1, 1), Context 1\n    Duration                       fortnight         2.00\n"
      "  k2 (1, 1, 1)x(32, 1, 1), Context 1\n    Duration                         ns       500.00\n");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].kernel, "k2");
  EXPECT_NEAR(odd[0].ms, 5e-4, 1e-15);
}

TEST_F(Profile, NcuRunsTheCandidatesPlanOnTheFirstBenchmarkShape) {
  fs::path out = targets_ / "report-ncu";
  auto r = profile("--candidate 2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto a = argv();
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(after(a, "--kernel-name"), "regex:^(hostile)$");
  EXPECT_EQ(after(a, "--profile-from-start"), "off");
  EXPECT_EQ(after(a, "--launch-count"), "1");
  EXPECT_EQ(after(a, "--export"), (out / "report").string());
  // The worker's command comes last, unchanged.
  ASSERT_GE(a.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(a.end() - 4, a.end()),
            (std::vector<std::string>{FAKE_WORKER, "worker", "--gpu", "0"}));
  // What the worker was asked to run: candidate 2's template and params on 4096x4096, once.
  json req = request();
  EXPECT_EQ(req["type"], "profile");
  EXPECT_EQ(req["shape"], "4096x4096");
  EXPECT_EQ(req["runs"], 1);
  EXPECT_EQ(req["candidate"]["template"], "hostile");
  EXPECT_EQ(req["candidate"]["params"]["KIND"], 17);
  EXPECT_TRUE(fs::exists(req["candidate"]["cubin"].get<std::string>()));
  // The folder: the tool's report and details page, the command, the source, the manifest.
  EXPECT_EQ(slurp(out / "report.ncu-rep"), "fake report\n");
  EXPECT_EQ(slurp(out / "details.txt").rfind("details of " + (out / "report.ncu-rep").string() + "\n", 0), 0u);
  // where the time goes, from the page's Speed Of Light section: printed and in the manifest
  EXPECT_NE(r.out.find("where the time goes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hostile                                 1     0.0125  100.0%    81.2    20.0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(slurp(out / "command.txt").find("'regex:^(hostile)$'"), std::string::npos);
  EXPECT_NE(slurp(out / "source.cu").find("KIND"), std::string::npos);
  json m = json::parse(slurp(out / "profile.json"));
  EXPECT_EQ(m["candidate"], 2);
  EXPECT_EQ(m["params"]["KIND"], 17);
  EXPECT_EQ(m["shape"]["name"], "4096x4096");
  ASSERT_EQ(m["kernel_times"].size(), 1u) << m.dump();
  EXPECT_EQ(m["kernel_times"][0]["kernel"], "hostile");
  EXPECT_DOUBLE_EQ(m["kernel_times"][0]["ms"].get<double>(), 0.0125);
  EXPECT_EQ(m["shape"]["M"], 4096);
  EXPECT_EQ(m["kernels"], json::array({"hostile"}));
  EXPECT_EQ(m["command"].back(), "0");
  EXPECT_EQ(m["exit_code"], 0);
}

TEST_F(Profile, ShapeByNameRunsAndToolArguments) {
  fs::path out = targets_ / "report-shape";
  auto r = profile("--candidate 1 --shape 1024x8192 --runs 3 --tool-arg=--section --tool-arg=SpeedOfLight --out " +
                   out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(request()["shape"], "1024x8192");
  EXPECT_EQ(request()["runs"], 3);
  auto a = argv();
  EXPECT_EQ(after(a, "--launch-count"), "3");
  EXPECT_EQ(after(a, "--section"), "SpeedOfLight");
  EXPECT_EQ(after(a, "--set"), "");  // sections chosen: no --set full
}

TEST_F(Profile, DefaultFolderIsBesideTheDatabase) {
  auto r = profile("--candidate 1");
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<fs::path> dirs;
  for (auto& e : fs::directory_iterator(targets_ / "profiles")) dirs.push_back(e.path());
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0].filename().string().rfind("hostile_rmsnorm-c1-ncu-", 0), 0u) << dirs[0];
  EXPECT_TRUE(fs::exists(dirs[0] / "report.ncu-rep"));
}

TEST_F(Profile, ErrorsAreNamedAndExitNonZero) {
  auto r = profile("--candidate 999 --out " + (targets_ / "x").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no candidate #999"), std::string::npos) << r.out;

  r = profile("--candidate 1 --shape 5x5 --out " + (targets_ / "x").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no shape '5x5' (its shapes: 4096x4096, 1024x8192"), std::string::npos) << r.out;

  r = profile("--candidate 1 --tool perf");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown tool 'perf'"), std::string::npos) << r.out;

  fs::path empty = targets_ / "no-tools";
  fs::create_directories(empty);
  r = profile("--candidate 1 --out " + (targets_ / "x").string(), "TESSERA_TOOL_DIR=" + empty.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("ncu not found; looked in " + empty.string()), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(targets_ / "x"));  // nothing written when nothing can run

  r = profile("--candidate 1 --out " + (targets_ / "y").string(), "FAKE_TOOL_EXIT=5");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("ncu exited with status 5"), std::string::npos) << r.out;
  EXPECT_EQ(json::parse(slurp(targets_ / "y" / "profile.json"))["exit_status"], 5);
}

TEST_F(Profile, SanitizersCountTheirErrors) {
  fs::path out = targets_ / "mc";
  auto r = profile("--candidate 1 --tool memcheck --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto a = argv();
  EXPECT_EQ(after(a, "--tool"), "memcheck");
  EXPECT_EQ(after(a, "--log-file"), (out / "memcheck.txt").string());
  EXPECT_NE(r.out.find("memcheck: no errors"), std::string::npos) << r.out;
  EXPECT_EQ(json::parse(slurp(out / "profile.json"))["errors"], 0);

  r = profile("--candidate 1 --tool memcheck --out " + out.string(), "FAKE_SANITIZER_ERRORS=2");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("memcheck: 2 errors (" + (out / "memcheck.txt").string() + ")"), std::string::npos) << r.out;
  EXPECT_EQ(json::parse(slurp(out / "profile.json"))["errors"], 2);

  // A write just past the output lands in a guard zone, inside the allocation: memcheck
  // does not see it, the worker's guard check does, and that counts as memcheck's finding.
  long long past_end = id_of_kind(4);
  ASSERT_GT(past_end, 0);
  r = profile(fmt::format("--candidate {} --tool memcheck --out {}", past_end, out.string()));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("the candidate wrote outside buffer 'y'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memcheck: the candidate wrote outside its buffers"), std::string::npos) << r.out;

  fs::path rc = targets_ / "rc";
  r = profile("--candidate 1 --tool racecheck --out " + rc.string(), "FAKE_SANITIZER_ERRORS=1");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(after(argv(), "--tool"), "racecheck");
  EXPECT_TRUE(fs::exists(rc / "racecheck.txt"));

  // synccheck (barriers misused) and initcheck (global memory read before any write): the
  // same log and error count, their own names
  for (const char* t : {"synccheck", "initcheck"}) {
    fs::path dir = targets_ / t;
    r = profile(fmt::format("--candidate 1 --tool {} --out {}", t, dir.string()), "FAKE_SANITIZER_ERRORS=3");
    EXPECT_EQ(r.code, 3) << r.out;
    EXPECT_EQ(after(argv(), "--tool"), t);
    EXPECT_EQ(after(argv(), "--log-file"), (dir / (std::string(t) + ".txt")).string());
    EXPECT_NE(r.out.find(std::string(t) + ": 3 errors"), std::string::npos) << r.out;
    EXPECT_EQ(json::parse(slurp(dir / "profile.json"))["tool"], t);
    r = profile(fmt::format("--candidate 1 --tool {} --out {}", t, dir.string()));
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(std::string(t) + ": no errors"), std::string::npos) << r.out;
  }
}

TEST_F(Profile, SassDisassemblesTheCandidatesCubinWithoutAWorker) {
  fs::path out = targets_ / "sass";
  auto r = profile("--candidate 1 --tool sass --out " + out.string(), "TESSERA_WORKER_CMD=/nonexistent");
  ASSERT_EQ(r.code, 0) << r.out;
  auto a = argv();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], "-sass");
  EXPECT_EQ(a[1], (out / "candidate.cubin").string());
  EXPECT_EQ(slurp(out / "sass.txt"), "fake SASS of " + (out / "candidate.cubin").string() + "\nELF\n");
  std::string res = slurp(out / "resources.txt");
  EXPECT_NE(res.find("hostile: "), std::string::npos) << res;
  EXPECT_NE(res.find(" registers, "), std::string::npos) << res;
  EXPECT_EQ(json::parse(slurp(out / "profile.json"))["arch"], "sm_90a");

  // Without cuobjdump, nvdisasm.
  fs::remove(tools_ / "cuobjdump");
  script(tools_ / "nvdisasm", kFakeDisassembler);
  r = profile("--candidate 1 --tool sass --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(argv()[0], "--print-code");
}

// The real worker behind a tool: its channel (fds 3 and 4, the secret in its environment)
// must pass through the tool; a tool that breaks it is named as the cause.
TEST_F(Profile, AToolThatBreaksTheChannelIsNamed) {
  for (const char* wrap : {"closefds", "nosecret"}) {
    auto r = profile("--candidate 1 --out " + (targets_ / wrap).string(), std::string("FAKE_TOOL_WRAP=") + wrap,
                     /*real_worker=*/true);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("the worker did not find its channel"), std::string::npos) << wrap << ": " << r.out;
  }
}
