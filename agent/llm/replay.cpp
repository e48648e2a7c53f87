// agent/llm/replay.cpp — ReplayClient: serving recorded exchanges in order or by
// request fingerprint.
#include "agent/llm/replay.h"

#include <fmt/format.h>

#include "agent/llm/exchange_json.h"

namespace tessera::llm {

ReplayClient::ReplayClient(std::vector<Exchange> exchanges, ReplayMatch match)
    : exchanges_(std::move(exchanges)), used_(exchanges_.size(), false), match_(match) {}

ReplayClient ReplayClient::from_file(const std::string& path, ReplayMatch match) {
  return ReplayClient(load_exchanges(path), match);
}

Reply ReplayClient::complete(const Conversation& conversation) {
  Exchange served;
  {
    std::lock_guard lock(mutex_);
    size_t index = exchanges_.size();
    if (match_ == ReplayMatch::InOrder) {
      while (next_ < exchanges_.size() && used_[next_]) ++next_;
      index = next_;
    } else {
      std::string want = conversation_fingerprint(conversation);
      for (size_t i = 0; i < exchanges_.size(); ++i)
        if (!used_[i] && conversation_fingerprint(exchanges_[i].request) == want) {
          index = i;
          break;
        }
    }
    if (index >= exchanges_.size()) {
      std::string what = match_ == ReplayMatch::InOrder
                             ? fmt::format("the replay has no recorded exchange left ({} served)", served_)
                             : fmt::format(
                                   "no unused recorded exchange matches this request (fingerprint {}, "
                                   "{} served)",
                                   conversation_fingerprint(conversation), served_);
      throw LlmError(LlmErrorKind::ReplayExhausted, what);
    }
    used_[index] = true;
    ++served_;
    served = exchanges_[index];
  }
  Exchange observed = served;
  observed.request = conversation;  // what this run asked, answered by the recording
  notify(observed);
  if (served.error_kind) throw LlmError(*served.error_kind, served.error, served.reply.http_status);
  return served.reply;
}

size_t ReplayClient::served() const {
  std::lock_guard lock(mutex_);
  return served_;
}

size_t ReplayClient::remaining() const {
  std::lock_guard lock(mutex_);
  return exchanges_.size() - served_;
}

}  // namespace tessera::llm
