// tests/nightly/report_test.cpp — `tessera report`: Markdown and one
// self-contained HTML page from a recorded history. The page is loaded in
// headless Chromium with the network cut off: it must render, hold both plots
// per operator, and log nothing to the console. Skips (saying so) when no
// chromium is installed; CI installs the Debian package `chromium`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "helpers.h"

using namespace nightly_test;
using namespace tessera;

namespace {
std::string read(const std::string& path) {
  std::string s;
  std::getline(std::ifstream(path), s, '\0');
  return s;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A history over three days: searches with their busy fractions, a champion
// with per-shape figures, and a re-check in which the champion got slower.
std::string recorded_history(TempDir& dir) {
  std::string path = dir / "history.db";
  store::Store db(path);
  std::vector<Shape> shapes = {{"B=1 N=4096", 0.010, 0.0102, 400, 0.016, 0.004},
                               {"B=64 N=8192", 0.120, 0.1210, 300, 0.250, 0.090},
                               {"B=512 N=16384 <&>", 2.10, 2.12, 120, 3.90, 1.60}};
  long long r1 = add_run(db, "rmsnorm", "NVIDIA H200", 0.91, "2026-11-27T01:00:00Z");
  long long r2 = add_run(db, "rmsnorm", "NVIDIA H200", 0.87, "2026-11-28T01:00:00Z");
  long long a = add_candidate(db, "a", r1), b = add_candidate(db, "b", r1), c = add_candidate(db, "c", r2);
  auto slower = [](std::vector<Shape> s, double f) {
    for (auto& x : s) std::get<1>(x) *= f, std::get<2>(x) *= f;
    return s;
  };
  db.add_evaluation(timed(a, r1, "ok", slower(shapes, 1.4)));
  db.add_evaluation(timed(b, r1, "wrong_result", {}));
  db.add_evaluation(timed(c, r2, "ok", shapes));
  sql(db, "UPDATE evaluations SET created='2026-11-27T01:05:00Z' WHERE run_id=" + std::to_string(r1));
  sql(db, "UPDATE evaluations SET created='2026-11-28T01:30:00Z' WHERE run_id=" + std::to_string(r2));
  long long r3 = add_run(db, "rmsnorm", "NVIDIA H200", 0.95, "2026-11-29T01:00:00Z");
  nlohmann::json s = {{"kind", "recheck"}, {"candidates", {{{"id", c}, {"rank", 1}}, {{"id", a}, {"rank", 2}}}}};
  sql(db, "UPDATE runs SET proposer='recheck', strategy='recheck', settings='" + s.dump() +
              "' WHERE id=" + std::to_string(r3));
  db.add_evaluation(timed(c, r3, "ok", slower(shapes, 1.25)));
  db.add_evaluation(timed(a, r3, "ok", slower(shapes, 1.4)));
  sql(db, "UPDATE evaluations SET created='2026-11-29T01:10:00Z' WHERE run_id=" + std::to_string(r3));
  // A second operator with only untimed (compiled) candidates: no plots, a plain message.
  long long g = add_run(db, "gemm", "(no GPU)", 0, "2026-11-29T02:00:00Z");
  long long gc = add_candidate(db, "g", g, "gemm");
  db.add_evaluation(timed(gc, g, "compiled", {}, "(no GPU)"));
  return path;
}
}  // namespace

TEST(Report, MarkdownAndHtmlHoldEverySection) {
  TempDir dir;
  std::string db = recorded_history(dir);
  auto r = run_tessera("report --db " + db + " --out " + (dir / "out"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::string md = read(dir / "out/report.md"), html = read(dir / "out/report.html");
  for (auto* section : {"## rmsnorm", "### Leaderboard", "### Best speedup over time", "### Champion per shape",
                        "### Re-checks and regressions", "### Runs", "## gemm"})
    EXPECT_NE(md.find(section), std::string::npos) << section;
  EXPECT_NE(md.find("![best geomean speedup over time](plots/rmsnorm-speedup.svg)"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "out/plots/rmsnorm-speedup.svg"));
  EXPECT_TRUE(fs::exists(dir / "out/plots/rmsnorm-shapes.svg"));
  EXPECT_NE(md.find("| 1 | #3 |"), std::string::npos) << "the champion leads the leaderboard\n" << md;
  EXPECT_NE(md.find("REGRESSION"), std::string::npos) << "the champion got 25% slower on re-check";
  EXPECT_NE(md.find("91.0%"), std::string::npos) << "GPU busy fraction of the runs";
  EXPECT_NE(md.find("No candidate has been timed on a GPU yet"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"plot\""), 2u);
  EXPECT_NE(html.find("B=512 N=16384 &lt;&amp;&gt;"), std::string::npos) << "text is escaped";
  // Self-contained: no script, nothing fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*"(https?:)?//)")));
  // Asking for an operator without history is a usage error naming what there is.
  auto none = run_tessera("report nosuchop --db " + db + " --out " + (dir / "o2"));
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("no history of 'nosuchop' in the database (it has: gemm, rmsnorm)"), std::string::npos)
      << none.out;
}

TEST(Report, RendersInHeadlessChromiumWithPlotsAndNoConsoleErrors) {
  std::string browser;
  for (auto* b : {"chromium", "chromium-browser", "google-chrome"})
    if (have(b)) {
      browser = b;
      break;
    }
  if (browser.empty())
    GTEST_SKIP() << "no chromium installed (apt-get install chromium): the HTML report is not rendered";
  TempDir dir;
  std::string db = recorded_history(dir);
  ASSERT_EQ(run_tessera("report rmsnorm --db " + db + " --out " + (dir / "out")).code, 0);
  std::string flags =
      " --headless --no-sandbox --disable-gpu --no-first-run --enable-logging=stderr --v=0 "
      "--host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir=" +
      (dir / "profile");
  auto check_page = [&](const std::string& page, std::string* dom) {
    auto r = sh("(timeout 90 " + browser + flags + " --dump-dom file://" + page + " 2>" + (dir / "console.log") + ")");
    *dom = r.out;
    std::vector<std::string> console;
    std::ifstream log(dir / "console.log");
    for (std::string line; std::getline(log, line);)
      if (line.find(":CONSOLE") != std::string::npos) console.push_back(line);
    return console;
  };
  // The harness sees console errors: a page that logs one is caught.
  std::ofstream(dir / "broken.html")
      << "<!DOCTYPE html><p>x</p><script>console.error('deliberate'); nosuchfn();</script>";
  std::string dom;
  auto control = check_page(dir / "broken.html", &dom);
  ASSERT_GE(control.size(), 1u) << "chromium did not report console messages; the check below would be blind";

  auto console = check_page(dir / "out/report.html", &dom);
  EXPECT_TRUE(console.empty()) << console.size()
                               << " console message(s), first: " << (console.empty() ? "" : console[0]);
  EXPECT_NE(dom.find("<h2 id=\"op-rmsnorm\">rmsnorm</h2>"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("id=\"plot-rmsnorm-speedup\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"plot-rmsnorm-shapes\""), std::string::npos);
  EXPECT_GE(count(dom, "class=\"series\""), 1u) << "the speedup line is drawn";
  EXPECT_EQ(count(dom, "class=\"bar\""), 9u) << "3 shapes x (champion, baseline, floor)";
  EXPECT_GE(count(dom, "<tr class=\"flag\">"), 1u) << "the regression is highlighted";
  // And it paints: a screenshot of the page is a real image.
  auto shot = sh("timeout 90 " + browser + flags + " --window-size=1200,2400 --screenshot=" + (dir / "shot.png") +
                 " file://" + (dir / "out/report.html") + " 2>/dev/null");
  ASSERT_TRUE(fs::exists(dir / "shot.png")) << shot.out;
  EXPECT_GT(fs::file_size(dir / "shot.png"), 20000u);
}
