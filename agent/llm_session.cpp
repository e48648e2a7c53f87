// agent/llm_session.cpp — building the run's LLM client from flags and the
// environment (or a replay), and recording every exchange in the store and the
// --llm-record file. Flags override TESSERA_LLM_* variables, which override the
// defaults (agent/llm/config.h).
#include "agent/llm_session.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "agent/llm/config.h"
#include "agent/llm/exchange_json.h"
#include "agent/llm/http_client.h"
#include "agent/llm/replay.h"
#include "store/store.h"

namespace tessera::agent {

using nlohmann::json;

namespace {

bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::string(head, 15) == "SQLite format 3";
}

// "runs/tessera.db#12" names run 12 of a database; a bare path its latest LLM run.
std::pair<std::string, std::optional<long long>> split_run(const std::string& spec) {
  size_t hash = spec.rfind('#');
  if (hash == std::string::npos || hash + 1 >= spec.size()) return {spec, std::nullopt};
  try {
    size_t used = 0;
    long long run = std::stoll(spec.substr(hash + 1), &used);
    if (used == spec.size() - hash - 1) return {spec.substr(0, hash), run};
  } catch (std::exception&) {
  }
  return {spec, std::nullopt};
}

}  // namespace

std::vector<llm::Exchange> exchanges_from_store(const std::string& db_path, std::optional<long long> run_id) {
  store::Store db(db_path);
  if (!run_id) run_id = db.latest_run_with_exchanges();
  if (!run_id) throw std::runtime_error(fmt::format("{} holds no recorded LLM exchange", db_path));
  std::vector<llm::Exchange> out;
  for (auto& x : db.exchanges(*run_id)) {
    json j = {{"provider", x.provider}, {"request", json::parse(x.request_json)}};
    if (!x.error_kind.empty()) {
      j["error"] = x.error;
      j["error_kind"] = x.error_kind;
    } else {
      j["reply"] = {{"text", x.response},
                    {"model", x.model},
                    {"finish_reason", x.finish_reason},
                    {"prompt_tokens", x.prompt_tokens},
                    {"completion_tokens", x.completion_tokens},
                    {"latency_s", x.latency_s},
                    {"http_status", x.http_status}};
    }
    if (!x.outcome_json.empty()) {
      json outcome = json::parse(x.outcome_json, nullptr, false);
      if (outcome.is_object()) j["outcome"] = outcome;
    }
    out.push_back(llm::exchange_from_json(j));
  }
  if (out.empty()) throw std::runtime_error(fmt::format("run {} of {} recorded no LLM exchange", *run_id, db_path));
  return out;
}

std::unique_ptr<LlmSession> LlmSession::create(const LlmOptions& o, std::string* err) {
  std::unique_ptr<LlmSession> s(new LlmSession());
  try {
    if (!o.replay.empty()) {
      std::vector<llm::Exchange> recorded;
      auto [path, run] = split_run(o.replay);
      if (is_sqlite_file(path))
        recorded = exchanges_from_store(path, run);
      else
        recorded = llm::load_exchanges(path);
      s->description_ = fmt::format("replay of {} ({} recorded exchanges, no network)", o.replay, recorded.size());
      for (auto& x : recorded)
        if (!x.reply.model.empty()) s->model_ = x.reply.model;
      s->client_ = std::make_unique<llm::ReplayClient>(std::move(recorded), llm::ReplayMatch::InOrder);
      s->replaying_ = true;
      s->max_calls_ = o.max_calls > 0 ? o.max_calls : 0;
    } else {
      llm::LlmConfig cfg = llm::config_from_env();
      if (!o.provider.empty()) {
        auto p = llm::parse_provider(o.provider);
        if (!p) {
          *err = fmt::format("--llm-provider {}: not a provider (openai, anthropic; openai-compatible servers: openai)",
                             o.provider);
          return nullptr;
        }
        cfg.provider = *p;
      }
      if (!o.base_url.empty()) cfg.base_url = o.base_url;
      if (!o.model.empty()) cfg.model = o.model;
      if (!o.key_env.empty()) cfg.key_env = o.key_env;
      if (o.max_calls >= 0) cfg.limits.max_calls = o.max_calls;
      if (cfg.model.empty()) {
        *err =
            "no language model is configured: pass --llm-model NAME (with --llm-base-url URL for a local or "
            "self-hosted server, --llm-provider anthropic for Anthropic) or set TESSERA_LLM_MODEL; the key is "
            "read from the variable named by --llm-key-env (see docs/llm.md), or use --llm-replay FILE";
        return nullptr;
      }
      s->budget_ = std::make_shared<llm::RunBudget>(cfg.limits);
      auto client = llm::make_client(cfg, s->budget_);
      if (auto* http = dynamic_cast<llm::HttpLlmClient*>(client.get()))
        http->set_log([](const std::string& line) { std::cerr << "llm: " << line << "\n"; });
      s->client_ = std::move(client);
      s->model_ = cfg.model;
      s->description_ =
          fmt::format("{} model {} at {}", llm::to_string(cfg.provider), cfg.model, llm::effective_base_url(cfg));
    }
  } catch (const llm::LlmError& e) {
    *err = e.what();
    if (e.kind() == llm::LlmErrorKind::MissingKey) *err += "; `tessera optimize` also takes --llm-key-env NAME";
    return nullptr;
  } catch (const std::exception& e) {
    *err = fmt::format("--llm-replay {}: {}", o.replay, e.what());
    return nullptr;
  }
  s->record_path_ = o.record;
  LlmSession* self = s.get();
  s->client_->set_observer([self](const llm::Exchange& x) { self->last_ = x; });
  return s;
}

void LlmSession::attach(store::Store& db, long long run_id) {
  db_ = &db;
  run_id_ = run_id;
}

LlmSession::Answer LlmSession::ask(const llm::Conversation& conversation, int turn) {
  Answer a;
  last_.reset();
  if (replaying_ && max_calls_ > 0 && calls_ >= max_calls_) {
    a.error = fmt::format("the cap of {} model calls per run is reached (--llm-max-calls)", max_calls_);
    a.error_kind = llm::LlmErrorKind::BudgetExceeded;
    return a;
  }
  try {
    a.reply = client_->complete(conversation);
    a.ok = true;
    ++calls_;
    prompt_tokens_ += a.reply.prompt_tokens;
    completion_tokens_ += a.reply.completion_tokens;
  } catch (const llm::LlmError& e) {
    a.error = e.what();
    a.error_kind = e.kind();
    if (e.kind() != llm::LlmErrorKind::BudgetExceeded && e.kind() != llm::LlmErrorKind::ReplayExhausted) ++calls_;
  }
  if (last_) {
    if (replaying_) a.recorded_outcome = last_->outcome;
    llm::Exchange x = *last_;
    x.outcome.clear();  // this run's outcome replaces the recording's (set_outcome)
    record(x, turn, &a.exchange_id);
  }
  return a;
}

void LlmSession::record(const llm::Exchange& x, int turn, long long* id) {
  if (db_) {
    store::ExchangeRecord r;
    r.run_id = run_id_;
    r.turn = turn;
    r.provider = x.provider;
    r.model = x.reply.model.empty() ? model_ : x.reply.model;
    r.fingerprint = llm::conversation_fingerprint(x.request);
    r.request_json = llm::to_json(x.request).dump(-1, ' ', false, json::error_handler_t::replace);
    r.response = x.reply.text;
    r.finish_reason = x.reply.finish_reason;
    r.prompt_tokens = x.reply.prompt_tokens;
    r.completion_tokens = x.reply.completion_tokens;
    r.latency_s = x.reply.latency_s;
    r.elapsed_s = x.reply.elapsed_s;
    r.http_status = x.reply.http_status;
    r.attempts = x.reply.attempts;
    if (x.error_kind) {
      r.error = x.error;
      r.error_kind = llm::to_string(*x.error_kind);
    }
    *id = db_->add_exchange(r);
    recorded_index_[*id] = recorded_.size();
  }
  recorded_.push_back(x);
  save_record();
}

void LlmSession::save_record() {
  if (record_path_.empty()) return;
  try {
    llm::save_exchanges(record_path_, recorded_);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("tessera: cannot write --llm-record {}: {}\n", record_path_, e.what());
    record_path_.clear();
  }
}

void LlmSession::set_outcome(long long exchange_id, const json& outcome) {
  if (exchange_id <= 0) return;
  std::string text = outcome.dump(-1, ' ', false, json::error_handler_t::replace);
  if (db_) db_->set_exchange_outcome(exchange_id, text);
  // The record file keeps the outcome too: its candidate ids are what a later
  // replay maps the answers' "#id" references through.
  if (auto it = recorded_index_.find(exchange_id); it != recorded_index_.end()) {
    recorded_[it->second].outcome = text;
    save_record();
  }
}

std::string LlmSession::usage() const {
  return fmt::format("{} model call{}, {} prompt + {} completion tokens", calls_, calls_ == 1 ? "" : "s",
                     prompt_tokens_, completion_tokens_);
}

std::string LlmSession::describe() const {
  return description_;
}

}  // namespace tessera::agent
