// tests/nightly/helpers.h — shared by the nightly tests: running the tessera
// binary, temporary folders, and databases built from recorded figures.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "store/store.h"
#include "tests/support/shell.h"

namespace nightly_test {

namespace fs = std::filesystem;

using Cmd = tessera::testing::ShellResult;

inline Cmd sh(const std::string& cmd) {
  return tessera::testing::shell(cmd);
}

inline Cmd run_tessera(const std::string& args) {
  return sh(std::string(TESSERA_BINARY) + " " + args);
}

inline bool have(const std::string& prog) {
  return sh("command -v " + prog + " >/dev/null").code == 0;
}

// A fresh folder per test, removed afterwards (kept with TESSERA_KEEP_TEST_DIRS=1).
class TempDir {
 public:
  TempDir() {
    auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("tessera-nightly-" + std::string(t->test_suite_name()) + "-" + t->name() + "-" + std::to_string(getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    const char* keep = std::getenv("TESSERA_KEEP_TEST_DIRS");
    if (!(keep && *keep == '1')) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void sql(tessera::store::Store& db, const std::string& s) {
  char* err = nullptr;
  if (sqlite3_exec(db.raw(), s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error(m + " in " + s);
  }
}

inline long long scalar(tessera::store::Store& db, const std::string& s) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db.raw(), s.c_str(), -1, &st, nullptr) != SQLITE_OK) throw std::runtime_error(s);
  long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

// (shape, candidate median ms, candidate p90 ms, samples, baseline median ms, floor ms)
using Shape = std::tuple<std::string, double, double, int, double, double>;

inline tessera::store::EvaluationInfo timed(long long cid, long long run, const std::string& status,
                                            const std::vector<Shape>& shapes,
                                            const std::string& device = "NVIDIA H200") {
  tessera::store::EvaluationInfo e;
  e.candidate_id = cid;
  e.run_id = run;
  e.device = device;
  e.driver = "12080";
  e.host = "node-a";
  e.spec_hash = "spec1";
  e.status = status;
  double logs = 0;
  for (auto& [name, med, p90, n, base, floor] : shapes) {
    tessera::store::ShapeRow r;
    r.shape = name;
    r.cand_median_ms = med;
    r.cand_min_ms = med * 0.98;
    r.cand_p90_ms = p90;
    r.cand_samples = n;
    r.base_median_ms = base;
    r.base_samples = n;
    r.speedup = base / med;
    r.floor_ms = floor;
    r.roofline_fraction = floor / med;
    logs += std::log(r.speedup);
    e.shapes.push_back(r);
  }
  if (!shapes.empty()) e.geomean_speedup = std::exp(logs / static_cast<double>(shapes.size()));
  return e;
}

inline long long add_candidate(tessera::store::Store& db, const std::string& source, long long run,
                               const std::string& op = "rmsnorm") {
  tessera::store::CandidateInfo c;
  c.op = op;
  c.template_name = "rows";
  c.params_json = R"({"BLOCK":256})";
  c.source_hash = "h-" + std::to_string(std::hash<std::string>{}(source));
  c.arch = "sm_90a";
  c.origin = "test";
  c.run_id = run;
  return db.add_candidate(c, source);
}

inline long long add_run(tessera::store::Store& db, const std::string& op, const std::string& device, double busy,
                         const std::string& started) {
  tessera::store::RunInfo r{op, "genetic", "search", "sm_90a", device, "node-a", "{}", 10};
  long long id = db.begin_run(r);
  db.finish_run(id, "finished", busy);
  sql(db, "UPDATE runs SET started='" + started + "' WHERE id=" + std::to_string(id));
  return id;
}

}  // namespace nightly_test
