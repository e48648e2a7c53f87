// cli/main.cpp — the `tessera` executable: parses the command line (CLI11) and
// dispatches to the subcommands. Exit codes: 0 success, 1 failure, 2 usage.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "agent/optimize.h"
#include "agent/recorded.h"
#include "agent/run_candidate.h"
#include "cli/commands.h"
#include "cli/reporting.h"
#include "evaluator/worker.h"
#include "export/export.h"
#include "search/bench.h"
#include "search/strategy.h"
#include "store/store.h"

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{"tessera — an autonomous CUDA kernel optimizer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  std::string db = cli::default_db();
  bool as_json = false;

  // Typed choices: read as words, checked by CLI11, made enums once after parsing.
  std::string opt_l2_flush = "write", rc_l2_flush = "write";
  agent::OptimizeOptions opt;
  opt.db = db;
  auto* o = app.add_subcommand("optimize", "search for faster variants of an operator");
  o->add_option("operator", opt.op, "operator name (see `tessera targets`)")->required();
  o->add_option("--budget,-n", opt.budget, "candidates to evaluate")->check(CLI::PositiveNumber);
  o->add_option("--time", opt.time_limit_s, "time limit in seconds")->check(CLI::PositiveNumber);
  std::string strategies;
  for (auto& s : search::strategy_names()) strategies += (strategies.empty() ? "" : ", ") + s;
  o->add_option("--strategy", opt.strategy, "search strategy (" + strategies + "; default " + agent::default_strategy() + ")");
  o->add_option("--arch", opt.arch, "target architecture (default: the GPU's, else sm_90a)");
  o->add_option("--db", opt.db, "database (default $TESSERA_DB or runs/tessera.db)");
  o->add_option("--gpus", opt.gpus, "GPUs to use: all, none, or a list like 0,1");
  o->add_option("--template", opt.template_name, "only this template");
  o->add_flag("!--no-warm-start", opt.warm_start,
              "do not start from the template's results on another GPU model in the database (docs/search.md)");
  o->add_option("--seed", opt.seed, "seed of the search and the inputs");
  o->add_option("--timeout", opt.request_timeout_s, "seconds allowed per step of an evaluation (default: scaled to the step, docs/statuses.md)");
  o->add_option("--seeds", opt.seeds, "fresh input seeds per validation shape")->check(CLI::Range(1, 100));
  o->add_option("--max-seconds-per-shape", opt.max_seconds_per_shape, "timing cap per benchmark shape");
  o->add_option("--graph-below-ms", opt.graph_below_ms,
                "time programs shorter than this (ms) by replaying a captured graph of launches; 0: never")
      ->check(CLI::NonNegativeNumber);
  o->add_option("--l2-flush", opt_l2_flush,
                "evict L2 before each timed launch by a memset (write, default) or by reading a buffer (read)")
      ->check(CLI::IsMember({"write", "read"}));
  o->add_flag("--quiet,-q", opt.quiet, "no progress output");
  // Proposers and the language model (docs/llm.md); flags override TESSERA_LLM_* variables.
  o->add_option("--proposer", opt.proposer, "who proposes candidates: search (default), llm, or hybrid (search, then the model)")
      ->check(CLI::IsMember({"search", "llm", "hybrid"}));
  o->add_option("--llm-provider", opt.llm.provider, "API spoken: openai (also vLLM, SGLang, llama.cpp, Ollama, NIM) or anthropic");
  o->add_option("--llm-base-url", opt.llm.base_url, "where the API lives, e.g. http://127.0.0.1:8000/v1");
  o->add_option("--llm-model", opt.llm.model, "model name as the server knows it");
  o->add_option("--llm-key-env", opt.llm.key_env, "NAME of the environment variable holding the API key (never the key)");
  o->add_option("--llm-max-calls", opt.llm.max_calls, "model calls per run (0: no cap)")->check(CLI::NonNegativeNumber);
  o->add_option("--llm-proposals", opt.llm.proposals_per_turn, "proposals asked for per turn")->check(CLI::Range(1, 8));
  o->add_option("--llm-template-budget", opt.llm.template_budget, "candidates the search spends on each proposed template");
  o->add_option("--llm-replay", opt.llm.replay, "serve recorded exchanges (a --llm-record file, or a database[#RUN]) instead of calling the model");
  o->add_option("--llm-record", opt.llm.record, "write this run's exchanges to FILE (JSON, replayable)");

  std::string lb_op, lb_status;
  int lb_limit = 20;
  std::string lb_db = db;
  auto* lb = app.add_subcommand("leaderboard", "ranked variants of an operator");
  lb->add_option("operator", lb_op)->required();
  lb->add_option("--status", lb_status, "only candidates with this status (e.g. ok, wrong_result, crashed)");
  lb->add_option("--limit", lb_limit)->check(CLI::PositiveNumber);
  lb->add_option("--db", lb_db);
  lb->add_flag("--json", as_json, "machine-readable output");
  bool lb_per_shape = false;
  lb->add_flag("--per-shape", lb_per_shape, "the best candidate for each benchmark shape separately");

  long long show_id = 0;
  std::string show_db = db;
  auto* sh = app.add_subcommand("show", "a candidate: source, parameters, per-shape figures, compile report");
  sh->add_option("id", show_id)->required();
  sh->add_option("--db", show_db);
  sh->add_flag("--json", as_json);

  exporter::ExportOptions ex;
  ex.db = db;
  long long ex_candidate = 0;
  bool ex_best = false;
  auto* exc = app.add_subcommand("export", "package a candidate's kernels for C++, PyTorch or FlashInfer (docs/export.md)");
  exc->add_option("operator", ex.op)->required();
  auto* ex_c = exc->add_option("--candidate", ex_candidate, "the candidate to pack (default: the champion)");
  exc->add_flag("--best", ex_best, "the operator's champion (the default)")->excludes(ex_c);
  exc->add_flag("--per-shape", ex.per_shape, "also pack each benchmark shape's champion and dispatch on the call's shape");
  exc->add_option("--format", ex.formats, "cpp, torch, flashinfer (several: comma-separated)")->delimiter(',');
  exc->add_option("--arch", ex.archs, "architectures to compile for, e.g. sm_90a,sm_103a (default: the candidate's)")
      ->delimiter(',');
  exc->add_option("--out", ex.out, "output folder")->required();
  exc->add_option("--db", ex.db, "database (default $TESSERA_DB or runs/tessera.db)");

  importer::ImportOptions im;
  std::string im_path, im_out, im_workloads;
  auto* imc = app.add_subcommand("import", "make an operator of a FlashInfer Trace definition (docs/import.md)");
  imc->add_option("path", im_path, "a definition .json, a folder with definition.json, or a dataset folder")->required();
  imc->add_option("--name", im.name, "the definition's name in a dataset folder (or the operator's new name)");
  imc->add_option("--out", im_out, "where the operator folder goes (default: the targets folder)");
  imc->add_option("--workloads", im_workloads, "workloads.jsonl to use instead of the dataset's");
  imc->add_option("--max-shapes", im.max_benchmark_shapes, "benchmark shapes at most (chosen from the workloads)")
      ->check(CLI::PositiveNumber);
  imc->add_flag("--json", as_json);

  auto* tg = app.add_subcommand("targets", "operators tessera knows");
  tg->add_flag("--json", as_json);

  std::string doc_db = db;
  bool measure = false;
  auto* dr = app.add_subcommand("doctor", "NVRTC, driver, GPUs and their measured ceilings");
  dr->add_option("--db", doc_db);
  dr->add_flag("--json", as_json);
  dr->add_flag("--measure", measure, "measure the ceilings again");

  agent::RunOptions runo;
  runo.db = db;
  bool run_reference = false, run_baseline = false;
  auto* rn = app.add_subcommand("run", "run one kernel on inputs from .npy files, write its outputs as .npy");
  rn->add_option("operator", runo.op)->required();
  auto* rn_c = rn->add_option("--candidate", runo.candidate, "a candidate id from the leaderboard");
  auto* rn_r = rn->add_flag("--reference", run_reference, "run the float64 reference instead");
  auto* rn_b = rn->add_flag("--baseline", run_baseline, "run the baseline instead");
  rn_c->excludes(rn_r)->excludes(rn_b);
  rn_r->excludes(rn_b);
  rn->add_option("--inputs", runo.inputs_dir, "folder with one <tensor>.npy per input (bf16 as float32)")
      ->required()->check(CLI::ExistingDirectory);
  rn->add_option("--outputs", runo.outputs_dir, "folder for <output>.npy files")->required();
  rn->add_option("--repeat", runo.repeat, "also time this many cold-L2 launches")->check(CLI::NonNegativeNumber);
  rn->add_option("--gpu", runo.gpu, "GPU ordinal");
  rn->add_option("--db", runo.db);
  rn->add_flag("--json", as_json);

  std::vector<std::string> caches;
  int repeats = 20;
  std::string sb_db, sb_op, sb_tpl;
  auto* sb = app.add_subcommand("search-bench",
                                "score every search strategy on recorded tuning data: Kernel Tuner caches, or "
                                "tessera's own history (--db with --operator)");
  auto* sb_cache = sb->add_option("--cache", caches, "Kernel Tuner cache file (.json or .json.gz), repeatable")
                       ->check(CLI::ExistingFile);
  auto* sb_dbo = sb->add_option("--db", sb_db, "a tessera database, e.g. runs/recorded/h200-2026-11-30.db");
  sb->add_option("--operator", sb_op, "with --db: the operator whose recorded runs to replay");
  sb->add_option("--template", sb_tpl, "with --db: only this template");
  sb_cache->excludes(sb_dbo);
  sb->add_option("--repeats", repeats, "runs per strategy (different seeds)")->check(CLI::PositiveNumber);
  std::vector<std::string> sb_only;
  sb->add_option("--strategies", sb_only, "only these strategies (default: all but exhaustive)")->delimiter(',');
  size_t sb_parallel = 1;
  sb->add_option("--parallel", sb_parallel, "evaluations judged at once, as on that many GPUs (batches widen)")
      ->check(CLI::Range(1, 64));
  search::SearchBenchOptions sbo;
  sb->add_option("--warm-from", sbo.warm_from, "with --cache: also every strategy warm-started from this cache "
                 "(the same kernel on another GPU)")->check(CLI::ExistingFile);
  sb->add_option("--peer", sbo.peer, "with --cache: Kernel Tuner's rows from benchmarks/search/kt_peer.py --json FILE")
      ->check(CLI::ExistingFile);
  sb->add_flag("--loso", sbo.leave_one_out, "with --cache: the leave-one-space-out choice of a strategy");
  sb->add_option("--json", sbo.json, "with --cache: append every row measured to FILE (JSON lines)");
  sb->add_option("--rows", sbo.rows, "with --cache: print the rows of an earlier --json FILE too "
                 "(--strategies none: only those)")->check(CLI::ExistingFile);

  cli::NightlyFlags nf;
  auto* ng = app.add_subcommand("nightly", "the nightly job: re-check champions, search on, report (exit 3 regressions, 4 failures)");
  ng->add_option("--config", nf.config, "job file (JSON; see runs/nightly/README.md)")->required()->check(CLI::ExistingFile);
  ng->add_option("--db", nf.db, "database (overrides the job file)");
  ng->add_option("--report-dir", nf.report_dir, "report folder (overrides the job file)");
  ng->add_option("--gpus", nf.gpus, "GPUs: all, none or a list like 0,1 (overrides the job file)");
  ng->add_flag("--check", nf.check, "only parse and check the job file");
  ng->add_flag("--quiet,-q", nf.quiet, "no progress output");

  cli::RecheckFlags rf;
  rf.db = db;
  auto* rc = app.add_subcommand("recheck",
                                "judge stored candidates again on this machine (the champion by default) and compare "
                                "with their stored figures (exit 3 if the champion regressed)");
  rc->add_option("operator", rf.op, "operator")->required();
  rc->add_option("--candidate", rf.candidates, "candidate id (repeatable; default: the top N)");
  rc->add_option("--top", rf.top, "re-check the top N of the leaderboard")->check(CLI::Range(1, 1000));
  rc->add_option("--db", rf.db);
  rc->add_option("--gpus", rf.gpus, "GPUs: all or a list like 0,1");
  rc->add_option("--noise-threshold", rf.noise_threshold, "smallest relative change reported")->check(CLI::Range(0.0, 1.0));
  rc->add_option("--l2-flush", rc_l2_flush, "write (default) or read, as for optimize")
      ->check(CLI::IsMember({"write", "read"}));
  rc->add_flag("--json", rf.json);
  rc->add_flag("--quiet,-q", rf.quiet);

  std::vector<std::string> rp_ops;
  std::string rp_out, rp_db = db, rp_title = "tessera report";
  auto* rp = app.add_subcommand("report", "Markdown and self-contained HTML report with plots");
  rp->add_option("operators", rp_ops, "operators (default: every operator in the database)");
  rp->add_option("--out", rp_out, "output folder")->required();
  rp->add_option("--db", rp_db);
  rp->add_option("--title", rp_title);

  std::string mg_out;
  std::vector<std::string> mg_shards;
  auto* mg = app.add_subcommand("merge", "merge database shards into one history (idempotent)");
  mg->add_option("out", mg_out, "merged database (created if missing)")->required();
  mg->add_option("shards", mg_shards, "shard databases")->required();
  mg->add_flag("--json", as_json);

  int gpu = 0;
  auto* wk = app.add_subcommand("worker", "internal: evaluate kernels for the agent on one GPU");
  wk->add_option("--gpu", gpu);
  wk->group("");  // hidden

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  opt.l2_flush = evaluator::parse_l2_flush(opt_l2_flush);
  rf.l2_flush = evaluator::parse_l2_flush(rc_l2_flush);
  try {
    if (*o) return agent::optimize(opt);
    if (*lb && lb_per_shape) return cli::cmd_leaderboard_per_shape(lb_db, lb_op, as_json);
    if (*lb) return cli::cmd_leaderboard(lb_db, lb_op, lb_status, lb_limit, as_json);
    if (*sh) return cli::cmd_show(show_db, show_id, as_json);
    if (*exc) {
      if (ex_candidate > 0) ex.candidate = ex_candidate;  // (--best, the default, needs nothing)
      (void)ex_best;
      return exporter::run_export(ex);
    }
    if (*tg) return cli::cmd_targets(as_json);
    if (*imc) {
      im.path = im_path, im.out = im_out, im.workloads = im_workloads;
      return cli::cmd_import(im, as_json);
    }
    if (*dr) return cli::cmd_doctor(doc_db, as_json, measure);
    if (*wk) return evaluator::worker_main(gpu);
    if (*ng) return cli::cmd_nightly(nf);
    if (*rc) return cli::cmd_recheck(rf);
    if (*rp) return cli::cmd_report(rp_db, rp_ops, rp_out, rp_title);
    if (*mg) return cli::cmd_merge(mg_out, mg_shards, as_json);
    if (*rn) {
      runo.json = as_json;
      runo.role = run_reference ? "reference" : run_baseline ? "baseline" : "candidate";
      if (runo.role == "candidate" && runo.candidate <= 0) {
        std::cerr << "tessera run: give --candidate ID, --reference or --baseline\n";
        return 2;
      }
      return agent::run_candidate(runo);
    }
    if (*sb) {
      if (!sb_db.empty()) {
        if (sb_op.empty()) {
          std::cerr << "tessera search-bench: --db needs --operator\n";
          return 2;
        }
        return agent::search_bench_recorded(sb_db, sb_op, sb_tpl, repeats, std::cout, sb_only, sb_parallel);
      }
      if (caches.empty()) {
        std::cerr << "tessera search-bench: give --cache FILE... or --db FILE --operator OP\n";
        return 2;
      }
      sbo.caches = caches, sbo.repeats = repeats, sbo.only = sb_only, sbo.parallel = sb_parallel;
      return search::search_bench_main(sbo, std::cout);
    }
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
