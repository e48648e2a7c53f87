// cli/report.cpp — `tessera report`: Markdown and one self-contained HTML page
// per call, with, per operator, the leaderboard (per GPU model), the best
// speedup over time and the champion's per-shape times against the baseline and
// the roofline floor (inline SVG plots), the re-check verdicts (regressions),
// and the runs with their GPU busy fraction. No script and no network: the page
// is readable from a file anywhere.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/recheck.h"
#include "cli/reporting.h"
#include "store/report_queries.h"

namespace tessera::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

// Markdown table cell: no pipes, no newlines.
std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? '/' : c == '\n' ? ' ' : c;
  return o;
}

double epoch(const std::string& iso) {
  std::tm tm{};
  if (!strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return static_cast<double>(timegm(&tm));
}

std::string pct(double f) {
  return fmt::format("{:.1f}%", 100 * f);
}

std::string params_text(const std::string& js) {
  try {
    auto j = json::parse(js.empty() ? "{}" : js);
    std::string s;
    for (auto& [k, v] : j.items()) s += (s.empty() ? "" : " ") + k + "=" + v.dump();
    return s;
  } catch (json::exception&) {
    return js;
  }
}

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"};

// "Nice" tick step for a span.
double nice_step(double span, int target) {
  double raw = span / std::max(1, target);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> best;    // step line (time, best so far)
  std::vector<std::pair<double, double>> points;  // every ok evaluation
};

// Best geomean speedup over time, one step line per GPU model.
std::string speedup_plot(const std::string& id, const std::vector<store::TimelinePoint>& tl) {
  std::map<std::string, Series> by;
  double t0 = 1e300, t1 = -1e300, ymax = 1.0;
  for (auto& p : tl) {
    double t = epoch(p.created);
    auto& s = by[p.device];
    s.name = p.device;
    double best = s.best.empty() ? 0 : s.best.back().second;
    s.points.push_back({t, p.speedup});
    if (p.speedup > best) s.best.push_back({t, p.speedup});
    t0 = std::min(t0, t);
    t1 = std::max(t1, t);
    ymax = std::max(ymax, p.speedup);
  }
  if (t1 <= t0) t0 -= 60, t1 += 60;
  const double W = 720, H = 300, L = 60, R = 20, T = 20, B = 50;
  double ystep = nice_step(ymax * 1.1, 5), ytop = std::ceil(ymax * 1.1 / ystep) * ystep;
  auto X = [&](double t) { return L + (t - t0) / (t1 - t0) * (W - L - R); };
  auto Y = [&](double v) { return T + (1 - v / ytop) * (H - T - B); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" id=\"{}\" data-kind=\"speedup-over-time\" "
      "viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"best geomean speedup over time\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      id, W, H, W, H);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", W, H);
  for (double v = 0; v <= ytop + 1e-9; v += ystep)
    s += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\" text-anchor=\"end\">{:.2g}×</text>\n",
        L, W - R, Y(v), Y(v), L - 6, Y(v) + 4, v);
  for (int k = 0; k <= 4; ++k) {
    double t = t0 + (t1 - t0) * k / 4;
    std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%m-%d %H:%M", &tm);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", X(t), H - B + 16, buf);
  }
  s += fmt::format(
      "<line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#888\" "
      "stroke-dasharray=\"4 3\"/><text x=\"{1:.1f}\" y=\"{3:.1f}\" text-anchor=\"end\" fill=\"#666\">"
      "baseline</text>\n",
      L, W - R, Y(1), Y(1) - 4);
  s +=
      fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time (UTC)</text>\n", (L + W - R) / 2, H - 8);
  int c = 0;
  for (auto& [dev, ser] : by) {
    const char* col = kPalette[c % 6];
    for (auto& [t, v] : ser.points)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" fill-opacity=\"0.3\"/>\n", X(t), Y(v),
                       col);
    std::string d;
    for (size_t i = 0; i < ser.best.size(); ++i) {
      auto [t, v] = ser.best[i];
      if (i == 0)
        d += fmt::format("M{:.1f},{:.1f}", X(t), Y(v));
      else
        d += fmt::format(" H{:.1f} V{:.1f}", X(t), Y(v));
    }
    d += fmt::format(" H{:.1f}", X(t1));
    s += fmt::format(
        "<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>{}: best "
        "{:.3f}×</title></path>\n",
        d, col, esc(dev), ser.best.back().second);
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        L + 10, T + 4 + 16 * c, col, L + 24, T + 13 + 16 * c, esc(dev.empty() ? "(unknown GPU)" : dev));
    ++c;
  }
  s += "</svg>\n";
  return s;
}

// The champion's per-shape medians: candidate, baseline, roofline floor (log scale).
std::string shapes_plot(const std::string& id, const std::vector<store::ShapeRow>& shapes) {
  double lo = 1e300, hi = 0;
  for (auto& r : shapes)
    for (double v : {r.cand_median_ms, r.base_median_ms, r.floor_ms})
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (hi <= 0) return "";
  double e0 = std::floor(std::log10(lo)), e1 = std::ceil(std::log10(hi));
  if (e1 <= e0) e1 = e0 + 1;
  const double L = 60, R = 20, T = 30, B = 90, group = 54;
  const double W = std::max(420.0, L + R + group * static_cast<double>(shapes.size())), H = 330;
  auto Y = [&](double v) { return T + (1 - (std::log10(v) - e0) / (e1 - e0)) * (H - T - B); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" id=\"{}\" data-kind=\"champion-shapes\" viewBox=\"0 0 "
      "{} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"champion per-shape median times against the "
      "baseline and the roofline floor\" font-family=\"sans-serif\" font-size=\"11\">\n",
      id, W, H, W, H);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", W, H);
  for (double e = e0; e <= e1 + 1e-9; e += 1)
    s += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\" text-anchor=\"end\">{:g} ms</text>\n",
        L, W - R, Y(std::pow(10, e)), Y(std::pow(10, e)), L - 6, Y(std::pow(10, e)) + 4, std::pow(10, e));
  const char* names[] = {"candidate", "baseline", "roofline floor"};
  const char* cols[] = {"#1f77b4", "#999999", "#2ca02c"};
  for (int k = 0; k < 3; ++k)
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"8\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1f}\" y=\"17\">{}</text>\n",
        L + 120.0 * k, cols[k], L + 120.0 * k + 14, names[k]);
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto& r = shapes[i];
    double x = L + group * static_cast<double>(i) + 6;
    double vals[] = {r.cand_median_ms, r.base_median_ms, r.floor_ms};
    for (int k = 0; k < 3; ++k) {
      if (vals[k] <= 0) continue;
      double y = Y(std::max(vals[k], std::pow(10, e0)));
      s += fmt::format(
          "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"13\" height=\"{:.1f}\" fill=\"{}\"><title>{} "
          "{}: {:.4g} ms</title></rect>\n",
          x + 14 * k, y, H - B - y, cols[k], esc(r.shape), names[k], vals[k]);
    }
    double cx = x + 20, cy = H - B + 8;
    s += fmt::format(
        "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"end\" transform=\"rotate(-40 {0:.1f} {1:.1f})\">{2}</text>\n",
        cx, cy, esc(r.shape.size() > 22 ? r.shape.substr(0, 21) + "…" : r.shape));
  }
  s += "</svg>\n";
  return s;
}

struct Doc {
  std::string md, html;
  void h(int level, const std::string& text, const std::string& id = "") {
    md += std::string(static_cast<size_t>(level), '#') + " " + text + "\n\n";
    html += fmt::format("<h{0}{2}>{1}</h{0}>\n", level, esc(text), id.empty() ? "" : " id=\"" + id + "\"");
  }
  void p(const std::string& text) {
    md += text + "\n\n";
    html += "<p>" + esc(text) + "</p>\n";
  }
  void table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
             const std::string& cls = "", const std::vector<bool>& flagged = {}) {
    md += "|";
    for (auto& c : head) md.append(" ").append(md_cell(c)).append(" |");
    md += "\n|";
    for (size_t i = 0; i < head.size(); ++i) md += "---|";
    md += "\n";
    html += fmt::format("<table{}><thead><tr>", cls.empty() ? "" : " class=\"" + cls + "\"");
    for (auto& c : head) html.append("<th>").append(esc(c)).append("</th>");
    html += "</tr></thead><tbody>\n";
    for (size_t r = 0; r < rows.size(); ++r) {
      md += "|";
      for (auto& c : rows[r]) md.append(" ").append(md_cell(c)).append(" |");
      md += "\n";
      html += r < flagged.size() && flagged[r] ? "<tr class=\"flag\">" : "<tr>";
      for (auto& c : rows[r]) html.append("<td>").append(esc(c)).append("</td>");
      html += "</tr>\n";
    }
    html += "</tbody></table>\n";
    md += "\n";
  }
  static std::string md_cell(const std::string& s) { return md_escape(s); }
};

// A plot written to DIR/plots/FILE and shown in both documents.
void figure(Doc& d, ReportFiles& files, const std::string& dir, const std::string& file, const std::string& svg,
            const std::string& alt, const std::string& caption) {
  std::ofstream(fs::path(dir) / file) << svg;
  files.plots.push_back((fs::path(dir) / file).string());
  d.md += fmt::format("![{}]({})\n\n", alt, file);
  d.html += "<figure>" + svg + "<figcaption>" + caption + "</figcaption></figure>\n";
}

// Leaderboard per GPU model (timings compare only within one model).
void leaderboard_section(Doc& d, store::Store& db, const std::string& op, const std::vector<std::string>& models) {
  d.h(3, "Leaderboard");
  if (models.empty()) {
    auto all = db.leaderboard(op, "", 10);
    d.p(fmt::format("No candidate has been timed on a GPU yet; {} candidate(s) recorded (latest status shown).",
                    all.size()));
    std::vector<std::vector<std::string>> rows;
    for (auto& r : all)
      rows.push_back(
          {std::to_string(r.candidate_id), r.template_name, params_text(r.params_json), r.status, r.created});
    if (!rows.empty()) d.table({"id", "template", "parameters", "status", "when"}, rows, "leaderboard");
  }
  for (auto& m : models) {
    auto board = store::timed_leaderboard(db, op, m, 10);
    if (models.size() > 1) d.h(4, m);
    std::vector<std::vector<std::string>> rows;
    int rank = 0;
    for (auto& r : board)
      rows.push_back({std::to_string(++rank), fmt::format("#{}", r.candidate_id), r.template_name,
                      params_text(r.params_json), r.status,
                      r.status == "ok" ? fmt::format("{:.3f}×", r.geomean_speedup) : "—",
                      r.status == "ok" && r.roofline_fraction > 0 ? pct(r.roofline_fraction) : "—",
                      fmt::format("{:.2e}", r.max_rel_l2), r.created});
    d.table({"rank", "candidate", "template", "parameters", "status", "speedup", "roofline", "max rel. L2", "when"},
            rows, "leaderboard");
  }
}

void timeline_section(Doc& d, ReportFiles& files, store::Store& db, const std::string& op, const std::string& dir) {
  d.h(3, "Best speedup over time");
  auto tl = store::ok_timeline(db, op);
  if (tl.empty()) {
    d.p("No timed evaluation yet: nothing to plot.");
    return;
  }
  figure(d, files, dir, "plots/" + op + "-speedup.svg", speedup_plot("plot-" + op + "-speedup", tl),
         "best geomean speedup over time",
         fmt::format("Best geomean speedup over the baseline so far, per GPU model "
                     "({} timed evaluations; dots: every one).",
                     tl.size()));
}

// The champion on the first GPU model: its figures, per-shape plot and table.
void champion_section(Doc& d, ReportFiles& files, store::Store& db, const std::string& op,
                      const std::vector<std::string>& models, const std::string& dir) {
  d.h(3, "Champion per shape");
  if (models.empty()) {
    d.p("No champion yet.");
    return;
  }
  auto board = store::timed_leaderboard(db, op, models[0], 1);
  if (board.empty() || board[0].status != "ok") {
    d.p(fmt::format("No candidate currently passes on {}.", models[0]));
    return;
  }
  auto& c = board[0];
  d.p(fmt::format("Candidate #{} ({} {}) on {}: {:.3f}× the baseline (geomean), {} of the roofline.", c.candidate_id,
                  c.template_name, params_text(c.params_json), models[0], c.geomean_speedup, pct(c.roofline_fraction)));
  std::string svg = shapes_plot("plot-" + op + "-shapes", c.shapes);
  if (!svg.empty())
    figure(d, files, dir, "plots/" + op + "-shapes.svg", svg, "champion per-shape times",
           "Median time per benchmark shape (log scale): the champion, the baseline and the "
           "roofline floor (what the measured ceilings allow).");
  std::vector<std::vector<std::string>> rows;
  for (auto& r : c.shapes)
    rows.push_back({r.shape, fmt::format("{:.4g}", r.cand_median_ms), fmt::format("{:.4g}", r.base_median_ms),
                    r.floor_ms > 0 ? fmt::format("{:.4g}", r.floor_ms) : "—", fmt::format("{:.3f}×", r.speedup),
                    r.roofline_fraction > 0 ? pct(r.roofline_fraction) : "—"});
  d.table({"shape", "champion ms", "baseline ms", "floor ms", "speedup", "roofline"}, rows, "shapes");
}

void rechecks_section(Doc& d, store::Store& db, const std::vector<store::RunRow>& runs) {
  d.h(3, "Re-checks and regressions");
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> flags;
  int regressions = 0;
  for (auto& run : runs) {
    for (auto& v : agent::verdicts_of_run(db, run)) {
      rows.push_back({run.started, run.device, fmt::format("#{}", v.candidate_id), std::to_string(v.rank), v.verdict,
                      v.regression ? "REGRESSION" : "",
                      v.speedup_before > 0 ? fmt::format("{:.3f}×", v.speedup_before) : "—",
                      v.speedup_now > 0 ? fmt::format("{:.3f}×", v.speedup_now) : "—",
                      v.time_ratio > 0 ? fmt::format("{:.3f}", v.time_ratio) : "—", v.note});
      flags.push_back(v.regression);
      regressions += v.regression;
    }
  }
  if (rows.empty()) {
    d.p("No re-check has run yet (`tessera nightly` re-checks the champion and the top N).");
    return;
  }
  d.p(regressions ? fmt::format("{} regression(s) of a champion found (highlighted).", regressions)
                  : "No champion regressed.");
  d.table(
      {"when", "GPU", "candidate", "rank", "verdict", "", "speedup before", "speedup now", "time now/before", "note"},
      rows, "rechecks", flags);
}

// A run's GPU busy fraction, and with several GPUs each one's share (runs.settings "per_gpu").
std::string busy_text(const store::RunRow& r) {
  std::string busy = r.gpu_busy_fraction && r.device != "(no GPU)" ? pct(*r.gpu_busy_fraction) : "—";
  json s = json::parse(r.settings.empty() ? "{}" : r.settings, nullptr, false);
  if (s.is_object() && s.contains("per_gpu") && s["per_gpu"].is_array() && s["per_gpu"].size() > 1) {
    std::string each;
    for (auto& g : s["per_gpu"])
      each += fmt::format("{}GPU {} {} ({} evaluated; idle {:.1f} s for the compiler, {:.1f} s at batch ends)",
                          each.empty() ? "" : ", ", g.value("gpu", 0), pct(g.value("busy", 0.0)),
                          g.value("evaluated", 0), g.value("waited_s", 0.0), g.value("tail_s", 0.0));
    busy += " — " + each;
  }
  return busy;
}

void runs_section(Doc& d, const std::vector<store::RunRow>& runs) {
  d.h(3, "Runs");
  std::vector<std::vector<std::string>> rows;
  for (auto& r : runs)
    rows.push_back({std::to_string(r.id), r.started, r.proposer + (r.strategy.empty() ? "" : "/" + r.strategy), r.host,
                    r.device, std::to_string(r.budget), std::to_string(r.evaluations), std::to_string(r.timed),
                    r.status, busy_text(r)});
  d.table(
      {"run", "started", "proposer/strategy", "host", "GPU", "budget", "evaluations", "timed", "status", "GPU busy"},
      rows, "runs");
}

// The HTML document around the body: one page, its style inline.
std::string html_page(const std::string& title, const std::string& body) {
  std::string css = R"CSS(
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3} tr.flag td{background:#fde2e2;font-weight:600}
figure{margin:1em 0} figcaption{font-size:12px;color:#555}
section.operator{border-top:2px solid #444;margin-top:2em} .meta{color:#666}
)CSS";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n"
      "</head>\n<body>\n{}</body>\n</html>\n",
      esc(title), css, body);
}

}  // namespace

ReportFiles write_report(store::Store& db, std::vector<std::string> ops, const std::string& dir,
                         const std::string& title) {
  auto known = store::operators_in(db);
  if (ops.empty()) ops = known;
  for (auto& op : ops)
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string list;
      for (auto& n : known) list += (list.empty() ? "" : ", ") + n;
      throw std::invalid_argument(
          fmt::format("no history of '{}' in the database (it has: {})", op, list.empty() ? "nothing" : list));
    }
  fs::create_directories(fs::path(dir) / "plots");
  ReportFiles files;
  Doc d;
  std::string generated = store::now_iso();
  d.md += "# " + title + "\n\n";
  d.md += fmt::format("Generated {} on {} from the tessera history.\n\n", generated, store::hostname());
  d.html += fmt::format("<h1>{}</h1>\n<p class=\"meta\">Generated {} on {} from the tessera history.</p>\n<nav><ul>",
                        esc(title), generated, esc(store::hostname()));
  for (auto& op : ops) d.html += fmt::format("<li><a href=\"#op-{0}\">{0}</a></li>", esc(op));
  d.html += "</ul></nav>\n";
  for (auto& op : ops) {
    d.html += "<section class=\"operator\">\n";
    d.h(2, op, "op-" + op);
    auto models = store::devices_of(db, op);
    auto runs = store::runs_of(db, op);
    leaderboard_section(d, db, op, models);
    timeline_section(d, files, db, op, dir);
    champion_section(d, files, db, op, models, dir);
    rechecks_section(d, db, runs);
    runs_section(d, runs);
    d.html += "</section>\n";
  }
  files.markdown = (fs::path(dir) / "report.md").string();
  files.html = (fs::path(dir) / "report.html").string();
  std::ofstream(files.markdown) << d.md;
  std::ofstream(files.html) << html_page(title, d.html);
  return files;
}

int cmd_report(const std::string& db, const std::vector<std::string>& ops, const std::string& out,
               const std::string& title) {
  if (!fs::exists(db)) throw store::StoreError(fmt::format("no database at {} (pass --db)", db));
  store::Store st(db);
  ReportFiles f;
  try {
    f = write_report(st, ops, out, title);
  } catch (std::invalid_argument& e) {
    std::cerr << "tessera report: " << e.what() << "\n";
    return 2;
  }
  std::cout << fmt::format("wrote {} and {} ({} plots)\n", f.markdown, f.html, f.plots.size());
  return 0;
}

}  // namespace tessera::cli
