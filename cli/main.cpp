// cli/main.cpp — the `tessera` executable: one function per subcommand registers its
// options (CLI11) and returns what runs it; main parses and dispatches. Typed choices
// (the L2 flush, the stopping rule, the proposer, the GPUs) are read as words and made
// values once, here (add_choice).
// Exit codes: 0 success, 1 failure, 2 usage.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "agent/optimize.h"
#include "agent/profile.h"
#include "agent/recorded.h"
#include "agent/run_candidate.h"
#include "cli/commands.h"
#include "cli/reporting.h"
#include "evaluator/worker.h"
#include "export/export.h"
#include "search/bench.h"
#include "search/strategy.h"
#include "store/store.h"

namespace tessera::cli {
namespace {

// A registered subcommand and what runs it once it is the one parsed.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// A typed choice (the L2 flush, the stopping rule, the proposer, the GPUs): the word is
// made a value by `parse` while CLI11 parses, once; a word it refuses
// (std::invalid_argument, naming the accepted ones) is a usage error that names the flag.
template <class T, class Parse>
CLI::Option* add_choice(CLI::App* app, const std::string& flag, T& into, Parse parse, const std::string& help) {
  auto set = [&into, parse, flag](const std::string& word) {
    try {
      into = parse(word);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError(flag, e.what());
    }
  };
  return app->add_option_function<std::string>(flag, set, help);
}

void add_llm_options(CLI::App* o, agent::OptimizeOptions& opt) {
  // Proposers and the language model (docs/llm.md); flags override TESSERA_LLM_* variables.
  add_choice(o, "--proposer", opt.proposer, agent::parse_proposer,
             "who proposes candidates: search (default), llm, or hybrid (search, then the model)");
  o->add_option("--llm-provider", opt.llm.provider,
                "API spoken: openai (also vLLM, SGLang, llama.cpp, Ollama, NIM) or anthropic");
  o->add_option("--llm-base-url", opt.llm.base_url, "where the API lives, e.g. http://127.0.0.1:8000/v1");
  o->add_option("--llm-model", opt.llm.model, "model name as the server knows it");
  o->add_option("--llm-key-env", opt.llm.key_env,
                "NAME of the environment variable holding the API key (never the key)");
  o->add_option("--llm-max-calls", opt.llm.max_calls, "model calls per run (0: no cap)")->check(CLI::NonNegativeNumber);
  o->add_option("--llm-proposals", opt.llm.proposals_per_turn, "proposals asked for per turn")->check(CLI::Range(1, 8));
  o->add_option("--llm-template-budget", opt.llm.template_budget,
                "candidates the search spends on each proposed template");
  o->add_option("--llm-replay", opt.llm.replay,
                "serve recorded exchanges (a --llm-record file, or a database[#RUN]) instead of calling the model");
  o->add_option("--llm-record", opt.llm.record, "write this run's exchanges to FILE (JSON, replayable)");
}

Command add_optimize(CLI::App& app, const std::string& db) {
  auto s = std::make_shared<agent::OptimizeOptions>();
  agent::OptimizeOptions& opt = *s;
  opt.db = db;
  auto* o = app.add_subcommand("optimize", "search for faster variants of an operator");
  o->add_option("operator", opt.op, "operator name (see `tessera targets`)")->required();
  o->add_option("--budget,-n", opt.budget, "candidates to evaluate")->check(CLI::PositiveNumber);
  o->add_option("--time", opt.time_limit_s, "time limit in seconds")->check(CLI::PositiveNumber);
  std::string strategies;
  for (auto& n : search::strategy_names()) strategies += (strategies.empty() ? "" : ", ") + n;
  o->add_option("--strategy", opt.strategy,
                "search strategy (" + strategies + "; default " + agent::default_strategy() + ")");
  o->add_option("--arch", opt.arch, "target architecture (default: the GPU's, else sm_90a)");
  o->add_option("--db", opt.db, "database (default $TESSERA_DB or runs/tessera.db)");
  add_choice(o, "--gpus", opt.gpus, agent::parse_gpu_selection, "GPUs to use: all (default), none, or a list like 0,1");
  o->add_option("--template", opt.template_name, "only this template");
  o->add_flag("!--no-warm-start", opt.warm_start,
              "do not start from the template's results on another GPU model in the database (docs/search.md)");
  o->add_option("--seed", opt.seed, "seed of the search and the inputs");
  o->add_option("--timeout", opt.request_timeout_s,
                "seconds allowed per step of an evaluation (default: scaled to the step, docs/statuses.md)");
  o->add_option("--seeds", opt.seeds, "fresh input seeds per validation shape")->check(CLI::Range(1, 100));
  o->add_option("--max-seconds-per-shape", opt.max_seconds_per_shape, "timing cap per benchmark shape");
  o->add_option("--graph-below-ms", opt.graph_below_ms,
                "time programs shorter than this (ms) by replaying a captured graph of launches; 0: never")
      ->check(CLI::NonNegativeNumber);
  add_choice(o, "--l2-flush", opt.l2_flush, evaluator::parse_l2_flush,
             "evict L2 before each timed launch by a memset (write, default) or by reading a buffer (read)");
  add_choice(o, "--stopping-rule", opt.stopping_rule, evaluator::parse_stopping_criterion,
             "what ends a shape's timing under its caps: rse (relative standard error under 1 %, default) or "
             "plateau (the samples' entropy has stopped rising; docs/statuses.md)");
  o->add_flag("--quiet,-q", opt.quiet, "no progress output");
  add_llm_options(o, opt);
  return {o, [s] { return agent::optimize(*s); }};
}

Command add_leaderboard(CLI::App& app, const std::string& db) {
  struct State {
    std::string op, status, db, device;
    int limit = 20;
    bool json = false, per_shape = false;
  };
  auto s = std::make_shared<State>();
  s->db = db;
  auto* lb = app.add_subcommand("leaderboard", "ranked variants of an operator");
  lb->add_option("operator", s->op)->required();
  lb->add_option("--status", s->status, "only candidates with this status (e.g. ok, wrong_result, crashed)");
  lb->add_option("--limit", s->limit)->check(CLI::PositiveNumber);
  lb->add_option("--db", s->db);
  lb->add_flag("--json", s->json, "machine-readable output");
  lb->add_flag("--per-shape", s->per_shape, "the best candidate for each benchmark shape separately");
  lb->add_option("--device", s->device,
                 "the GPU model whose timings rank (as `show` names it; default: the latest evaluation's, where "
                 "the history has several)");
  return {lb, [s] {
            if (s->per_shape) return cmd_leaderboard_per_shape(s->db, s->op, s->device, s->json);
            return cmd_leaderboard(s->db, s->op, s->status, s->limit, s->device, s->json);
          }};
}

Command add_show(CLI::App& app, const std::string& db) {
  struct State {
    long long id = 0;
    std::string db;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  s->db = db;
  auto* sh = app.add_subcommand("show", "a candidate: source, parameters, per-shape figures, compile report");
  sh->add_option("id", s->id)->required();
  sh->add_option("--db", s->db);
  sh->add_flag("--json", s->json);
  return {sh, [s] { return cmd_show(s->db, s->id, s->json); }};
}

Command add_export(CLI::App& app, const std::string& db) {
  struct State {
    exporter::ExportOptions ex;
    long long candidate = 0;
    bool best = false;
  };
  auto s = std::make_shared<State>();
  exporter::ExportOptions& ex = s->ex;
  ex.db = db;
  auto* exc =
      app.add_subcommand("export", "package a candidate's kernels for C++, PyTorch or FlashInfer (docs/export.md)");
  exc->add_option("operator", ex.op)->required();
  auto* ex_c = exc->add_option("--candidate", s->candidate, "the candidate to pack (default: the champion)");
  exc->add_flag("--best", s->best, "the operator's champion (the default)")->excludes(ex_c);
  exc->add_flag("--per-shape", ex.per_shape,
                "also pack each benchmark shape's champion and dispatch on the call's shape");
  exc->add_option("--format", ex.formats, "cpp, torch, flashinfer (several: comma-separated)")->delimiter(',');
  exc->add_option("--arch", ex.archs, "architectures to compile for, e.g. sm_90a,sm_103a (default: the candidate's)")
      ->delimiter(',');
  exc->add_option("--device", ex.device,
                  "the GPU model whose timings choose the champions (default: the latest evaluation's, where the "
                  "history has several)");
  exc->add_option("--out", ex.out, "output folder")->required();
  exc->add_option("--db", ex.db, "database (default $TESSERA_DB or runs/tessera.db)");
  return {exc, [s] {
            if (s->candidate > 0) s->ex.candidate = s->candidate;  // (--best, the default, needs nothing)
            return exporter::run_export(s->ex);
          }};
}

Command add_import(CLI::App& app) {
  struct State {
    importer::ImportOptions im;
    std::string path, out, workloads;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  auto* imc = app.add_subcommand("import", "make an operator of a FlashInfer Trace definition (docs/import.md)");
  imc->add_option("path", s->path, "a definition .json, a folder with definition.json, or a dataset folder")
      ->required();
  imc->add_option("--name", s->im.name, "the definition's name in a dataset folder (or the operator's new name)");
  imc->add_option("--out", s->out, "where the operator folder goes (default: the targets folder)");
  imc->add_option("--workloads", s->workloads, "workloads.jsonl to use instead of the dataset's");
  imc->add_option("--max-shapes", s->im.max_benchmark_shapes, "benchmark shapes at most (chosen from the workloads)")
      ->check(CLI::PositiveNumber);
  imc->add_flag("--json", s->json);
  return {imc, [s] {
            s->im.path = s->path, s->im.out = s->out, s->im.workloads = s->workloads;
            return cmd_import(s->im, s->json);
          }};
}

Command add_targets(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* tg = app.add_subcommand("targets", "operators tessera knows");
  tg->add_flag("--json", *json);
  return {tg, [json] { return cmd_targets(*json); }};
}

Command add_doctor(CLI::App& app, const std::string& db) {
  struct State {
    std::string db;
    bool json = false, measure = false;
  };
  auto s = std::make_shared<State>();
  s->db = db;
  auto* dr = app.add_subcommand("doctor", "NVRTC, driver, GPUs and their measured ceilings");
  dr->add_option("--db", s->db);
  dr->add_flag("--json", s->json);
  dr->add_flag("--measure", s->measure, "measure the ceilings again");
  return {dr, [s] { return cmd_doctor(s->db, s->json, s->measure); }};
}

Command add_run(CLI::App& app, const std::string& db) {
  struct State {
    agent::RunOptions runo;
    bool reference = false, baseline = false, json = false;
  };
  auto s = std::make_shared<State>();
  agent::RunOptions& runo = s->runo;
  runo.db = db;
  auto* rn = app.add_subcommand("run", "run one kernel on inputs from .npy files, write its outputs as .npy");
  rn->add_option("operator", runo.op)->required();
  auto* rn_c = rn->add_option("--candidate", runo.candidate, "a candidate id from the leaderboard");
  auto* rn_r = rn->add_flag("--reference", s->reference, "run the float64 reference instead");
  auto* rn_b = rn->add_flag("--baseline", s->baseline, "run the baseline instead");
  rn_c->excludes(rn_r)->excludes(rn_b);
  rn_r->excludes(rn_b);
  rn->add_option("--inputs", runo.inputs_dir, "folder with one <tensor>.npy per input (bf16 as float32)")
      ->required()
      ->check(CLI::ExistingDirectory);
  rn->add_option("--outputs", runo.outputs_dir, "folder for <output>.npy files")->required();
  rn->add_option("--repeat", runo.repeat, "also time this many cold-L2 launches")->check(CLI::NonNegativeNumber);
  rn->add_option("--gpu", runo.gpu, "GPU ordinal");
  rn->add_option("--db", runo.db);
  rn->add_flag("--json", s->json);
  return {rn, [s] {
            s->runo.json = s->json;
            s->runo.role = s->reference ? "reference" : s->baseline ? "baseline" : "candidate";
            if (s->runo.role == "candidate" && s->runo.candidate <= 0) {
              std::cerr << "tessera run: give --candidate ID, --reference or --baseline\n";
              return 2;
            }
            return agent::run_candidate(s->runo);
          }};
}

Command add_profile(CLI::App& app, const std::string& db) {
  auto s = std::make_shared<agent::ProfileOptions>();
  agent::ProfileOptions& po = *s;
  po.db = db;
  auto* pr = app.add_subcommand("profile",
                                "run a stored candidate's launch plan under ncu or a compute-sanitizer tool, or "
                                "disassemble it (docs/profile.md)");
  pr->add_option("operator", po.op)->required();
  pr->add_option("--candidate", po.candidate, "a candidate id from the leaderboard")->required();
  add_choice(
      pr, "--tool", po.tool, agent::parse_profile_tool,
      "ncu (default: Nsight Compute report), memcheck, racecheck, synccheck, initcheck (compute-sanitizer), sass "
      "(disassembly, no GPU)");
  pr->add_option("--shape", po.shape, "a benchmark or validation shape by name (default: the first benchmark shape)");
  pr->add_option("--out", po.out, "report folder (default: runs/profiles/<op>-c<ID>-<tool>-<date>)");
  pr->add_option("--gpus,--gpu", po.gpu, "the GPU ordinal to run on (default 0)")->check(CLI::NonNegativeNumber);
  pr->add_option("--runs", po.runs, "plan runs profiled after the warm-up (default 1)")->check(CLI::Range(1, 1000));
  pr->add_option("--arch", po.arch, "sass: the architecture to compile for (default: the candidate's)");
  pr->add_option("--timeout", po.timeout_s, "seconds allowed for the run under the tool (default 900)")
      ->check(CLI::PositiveNumber);
  pr->add_option("--tool-arg", po.tool_args, "one more word for the tool's command line (repeatable)")
      ->allow_extra_args(false);
  pr->add_option("--db", po.db, "database (default $TESSERA_DB or runs/tessera.db)");
  return {pr, [s] { return agent::profile(*s); }};
}

Command add_search_bench(CLI::App& app) {
  struct State {
    std::vector<std::string> caches, only;
    int repeats = 20;
    std::string db, op, tpl;
    size_t parallel = 1;
    search::SearchBenchOptions sbo;
  };
  auto s = std::make_shared<State>();
  auto* sb = app.add_subcommand("search-bench",
                                "score every search strategy on recorded tuning data: Kernel Tuner caches, or "
                                "tessera's own history (--db with --operator)");
  auto* sb_cache = sb->add_option("--cache", s->caches, "Kernel Tuner cache file (.json or .json.gz), repeatable")
                       ->check(CLI::ExistingFile);
  auto* sb_dbo = sb->add_option("--db", s->db, "a tessera database, e.g. runs/recorded/h200-2026-11-30.db");
  sb->add_option("--operator", s->op, "with --db: the operator whose recorded runs to replay");
  sb->add_option("--template", s->tpl, "with --db: only this template");
  sb_cache->excludes(sb_dbo);
  sb->add_option("--repeats", s->repeats, "runs per strategy (different seeds)")->check(CLI::PositiveNumber);
  sb->add_option("--strategies", s->only, "only these strategies (default: all but exhaustive)")->delimiter(',');
  sb->add_option("--parallel", s->parallel, "evaluations judged at once, as on that many GPUs (batches widen)")
      ->check(CLI::Range(1, 64));
  search::SearchBenchOptions& sbo = s->sbo;
  sb->add_option("--warm-from", sbo.warm_from,
                 "with --cache: also every strategy warm-started from this cache "
                 "(the same kernel on another GPU)")
      ->check(CLI::ExistingFile);
  sb->add_option("--peer", sbo.peer, "with --cache: Kernel Tuner's rows from benchmarks/search/kt_peer.py --json FILE")
      ->check(CLI::ExistingFile);
  sb->add_flag("--loso", sbo.leave_one_out, "with --cache: the leave-one-space-out choice of a strategy");
  sb->add_option("--json", sbo.json, "with --cache: append every row measured to FILE (JSON lines)");
  sb->add_option("--rows", sbo.rows,
                 "with --cache: print the rows of an earlier --json FILE too "
                 "(--strategies none: only those)")
      ->check(CLI::ExistingFile);
  return {sb, [s] {
            if (!s->db.empty()) {
              if (s->op.empty()) {
                std::cerr << "tessera search-bench: --db needs --operator\n";
                return 2;
              }
              return agent::search_bench_recorded(s->db, s->op, s->tpl, s->repeats, std::cout, s->only, s->parallel);
            }
            if (s->caches.empty()) {
              std::cerr << "tessera search-bench: give --cache FILE... or --db FILE --operator OP\n";
              return 2;
            }
            s->sbo.caches = s->caches, s->sbo.repeats = s->repeats, s->sbo.only = s->only,
            s->sbo.parallel = s->parallel;
            return search::search_bench_main(s->sbo, std::cout);
          }};
}

Command add_nightly(CLI::App& app) {
  auto nf = std::make_shared<NightlyFlags>();
  auto* ng = app.add_subcommand(
      "nightly", "the nightly job: re-check champions, search on, report (exit 3 regressions, 4 failures)");
  ng->add_option("--config", nf->config, "job file (JSON; see runs/nightly/README.md)")
      ->required()
      ->check(CLI::ExistingFile);
  ng->add_option("--db", nf->db, "database (overrides the job file)");
  ng->add_option("--report-dir", nf->report_dir, "report folder (overrides the job file)");
  add_choice(ng, "--gpus", nf->gpus, agent::parse_gpu_selection,
             "GPUs: all, none or a list like 0,1 (overrides the job file)");
  ng->add_flag("--check", nf->check, "only parse and check the job file");
  ng->add_flag("--quiet,-q", nf->quiet, "no progress output");
  return {ng, [nf] { return cmd_nightly(*nf); }};
}

Command add_recheck(CLI::App& app, const std::string& db) {
  auto s = std::make_shared<RecheckFlags>();
  RecheckFlags& rf = *s;
  rf.db = db;
  auto* rc = app.add_subcommand("recheck",
                                "judge stored candidates again on this machine (the champion by default) and compare "
                                "with their stored figures (exit 3 if the champion regressed)");
  rc->add_option("operator", rf.op, "operator")->required();
  auto* cand = rc->add_option("--candidate", rf.candidates, "candidate id (repeatable; default: the top N)");
  rc->add_option("--top", rf.top, "re-check the top N of the leaderboard")->check(CLI::Range(1, 1000));
  rc->add_flag("--per-shape", rf.per_shape,
               "each shape's champion (leaderboard --per-shape), then the shapes' new champions not yet judged "
               "again, in up to three runs")
      ->excludes(cand);
  rc->add_option("--db", rf.db);
  add_choice(rc, "--gpus", rf.gpus, agent::parse_gpu_selection, "GPUs: all (default), none or a list like 0,1");
  rc->add_option("--noise-threshold", rf.noise_threshold, "smallest relative change reported")
      ->check(CLI::Range(0.0, 1.0));
  add_choice(rc, "--l2-flush", rf.l2_flush, evaluator::parse_l2_flush, "write (default) or read, as for optimize");
  add_choice(rc, "--stopping-rule", rf.stopping_rule, evaluator::parse_stopping_criterion,
             "rse (default) or plateau, as for optimize");
  rc->add_flag("--json", rf.json);
  rc->add_flag("--quiet,-q", rf.quiet);
  return {rc, [s] { return cmd_recheck(*s); }};
}

Command add_report(CLI::App& app, const std::string& db) {
  struct State {
    std::vector<std::string> ops;
    std::string out, db, title = "tessera report";
  };
  auto s = std::make_shared<State>();
  s->db = db;
  auto* rp = app.add_subcommand("report", "Markdown and self-contained HTML report with plots");
  rp->add_option("operators", s->ops, "operators (default: every operator in the database)");
  rp->add_option("--out", s->out, "output folder")->required();
  rp->add_option("--db", s->db);
  rp->add_option("--title", s->title);
  return {rp, [s] { return cmd_report(s->db, s->ops, s->out, s->title); }};
}

Command add_merge(CLI::App& app) {
  struct State {
    std::string out;
    std::vector<std::string> shards;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  auto* mg = app.add_subcommand("merge", "merge database shards into one history (idempotent)");
  mg->add_option("out", s->out, "merged database (created if missing)")->required();
  mg->add_option("shards", s->shards, "shard databases")->required();
  mg->add_flag("--json", s->json);
  return {mg, [s] { return cmd_merge(s->out, s->shards, s->json); }};
}

Command add_worker(CLI::App& app) {
  auto gpu = std::make_shared<int>(0);
  auto* wk = app.add_subcommand("worker", "internal: evaluate kernels for the agent on one GPU");
  wk->add_option("--gpu", *gpu);
  wk->group("");  // hidden
  return {wk, [gpu] { return evaluator::worker_main(*gpu); }};
}

// The parsed subcommand, run; the errors no subcommand catches become exit codes.
int dispatch(const std::vector<Command>& commands) {
  try {
    for (auto& c : commands)
      if (*c.app) return c.run();
  } catch (store::StoreError& e) {
    std::cerr << "tessera: " << e.what() << "\n";
    return 1;
  } catch (std::invalid_argument& e) {
    std::cerr << "tessera: " << e.what() << "\n";
    return 2;
  } catch (std::exception& e) {
    std::cerr << "tessera: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tessera::cli

int main(int argc, char** argv) {
  using namespace tessera::cli;
  CLI::App app{"tessera — an autonomous CUDA kernel optimizer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  const std::string db = default_db();
  std::vector<Command> commands = {
      add_optimize(app, db), add_leaderboard(app, db), add_show(app, db),   add_export(app, db),  add_import(app),
      add_targets(app),      add_doctor(app, db),      add_run(app, db),    add_profile(app, db), add_search_bench(app),
      add_nightly(app),      add_recheck(app, db),     add_report(app, db), add_merge(app),       add_worker(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return dispatch(commands);
}
