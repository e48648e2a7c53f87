// tests/nightly/slurm_test.cpp — the Slurm path for real: a one-node cluster
// on localhost (runs/slurm/local-cluster.sh: munged, slurmctld, slurmd in a
// temporary folder), runs/slurm/submit.sh submits a 3-task array, each task
// running `tessera optimize rmsnorm --gpus none --budget 2` into its own shard,
// and the merge job that waits for it; the merged history is checked. Skips,
// saying why, without slurm-wlm/munge or root. Bounded: about 2 minutes at most.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "helpers.h"

using namespace nightly_test;
using namespace tessera;

namespace {
class Cluster {
 public:
  explicit Cluster(const std::string& dir) : dir_(dir) {}
  ~Cluster() { sh(script() + " stop " + dir_); }
  Cmd start() { return sh("timeout 60 " + script() + " start " + dir_); }
  std::string env() const { return "SLURM_CONF=" + dir_ + "/slurm.conf "; }

 private:
  static std::string script() { return std::string(TESSERA_SOURCE_DIR) + "/runs/slurm/local-cluster.sh"; }
  std::string dir_;
};
}  // namespace

TEST(Slurm, ArrayOfShardsThenMergeOnALocalCluster) {
  for (auto* p : {"slurmctld", "slurmd", "sbatch", "squeue", "munged"})
    if (!have(p))
      GTEST_SKIP() << p << " not installed (apt-get install slurm-wlm munge): the Slurm path is not tested here";
  if (geteuid() != 0) GTEST_SKIP() << "not root: a local slurmd and munged cannot be started";
  TempDir dir;
  Cluster cluster(dir / "cluster");
  auto up = cluster.start();
  ASSERT_EQ(up.code, 0) << "the local cluster did not start:\n" << up.out;
  std::string work = dir / "work";
  fs::create_directories(work);
  std::string env = cluster.env() + "TESSERA_BIN=" + TESSERA_BINARY +
                    " TESSERA_ARGS='optimize rmsnorm --gpus none --budget 2 -q' TESSERA_SHARDS=" + work +
                    "/shards TESSERA_MERGED=" + work + "/merged.db TESSERA_REPORT=" + work + "/report ";
  auto sub = sh("cd " + work + " && " + env + std::string(TESSERA_SOURCE_DIR) + "/runs/slurm/submit.sh 3 --time=5");
  ASSERT_EQ(sub.code, 0) << sub.out;
  ASSERT_NE(sub.out.find("(3 tasks"), std::string::npos) << sub.out;
  // Wait for the array and the merge (the dependency is resolved within seconds).
  auto t0 = std::chrono::steady_clock::now();
  bool done = false;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(100)) {
    auto q = sh(cluster.env() + "squeue -h -o '%i %T %r'");
    if (q.code == 0 && q.out.find_first_not_of(" \n") == std::string::npos) {
      done = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  auto logs = sh("cd " + work + " && tail -n 20 *.out");
  ASSERT_TRUE(done) << "jobs still queued after 100 s:\n" << sh(cluster.env() + "squeue").out << logs.out;
  for (int t = 0; t < 3; ++t) EXPECT_TRUE(fs::exists(work + "/shards/shard_" + std::to_string(t) + ".db")) << logs.out;
  ASSERT_TRUE(fs::exists(work + "/merged.db")) << logs.out;
  store::Store db(work + "/merged.db");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status='finished'"), 3) << "one run per task";
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations"), 6) << "2 per task, all kept";
  // Same seed on every task: the same kernels, stored once.
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates"), 2);
  EXPECT_EQ(scalar(db, "SELECT count(DISTINCT run_id) FROM evaluations"), 3);
  // Each evaluation keeps its node: through its run (compile-only rows carry no host of their own).
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations e JOIN runs r ON r.id=e.run_id WHERE r.host<>''"), 6);
  EXPECT_TRUE(fs::exists(work + "/report/report.html")) << logs.out;
}
