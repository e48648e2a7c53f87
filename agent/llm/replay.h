// agent/llm/replay.h — an LlmClient with no network: it serves recorded exchanges
// (from the store, a JSON file or a vector) so that a run can be replayed exactly,
// tested on a CPU, or audited. Recorded failures are replayed as the same LlmError.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "agent/llm/client.h"

namespace tessera::llm {

enum class ReplayMatch {
  InOrder,    // the next unused exchange, whatever the request (robust to prompt drift)
  ByRequest,  // the first unused exchange whose request has the same fingerprint
};

class ReplayClient final : public LlmClient {
 public:
  explicit ReplayClient(std::vector<Exchange> exchanges, ReplayMatch match = ReplayMatch::InOrder);
  // Reads a file written by save_exchanges (see exchange_json.h).
  static ReplayClient from_file(const std::string& path, ReplayMatch match = ReplayMatch::InOrder);

  // Throws LlmError(ReplayExhausted) when no recorded exchange is left (or matches).
  Reply complete(const Conversation& conversation) override;
  std::string provider_name() const override { return "replay"; }

  size_t served() const;
  size_t remaining() const;

 private:
  std::vector<Exchange> exchanges_;
  std::vector<bool> used_;
  ReplayMatch match_;
  mutable std::mutex mutex_;
  size_t next_ = 0;
  size_t served_ = 0;
};

}  // namespace tessera::llm
