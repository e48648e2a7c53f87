// tests/core/channel_test.cpp — the rules of the worker's private channel
// (evaluator/channel.h): which lines are a reply, which a step, and which end the
// worker. The whole path (fake worker, agent) is tested in tests/pipeline.
#include "evaluator/channel.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using tessera::evaluator::ChannelMessage;
using tessera::evaluator::make_channel_secret;
using tessera::evaluator::read_channel_line;

namespace {
const std::string kSecret = "00112233445566778899aabbccddeeff";
using Kind = ChannelMessage::Kind;
}  // namespace

TEST(Channel, AReplyWithTheRightIdAndSecretIsTheReply) {
  auto m = read_channel_line(R"({"id":7,"secret":"00112233445566778899aabbccddeeff","reply":{"ok":true,"x":1}})",
                             kSecret, 7);
  ASSERT_EQ(m.kind, Kind::reply) << m.why;
  EXPECT_EQ(m.body.at("x"), 1);
  auto s = read_channel_line(
      R"({"id":7,"secret":"00112233445566778899aabbccddeeff","step":{"what":"timing","limit_s":5.5}})", kSecret, 7);
  ASSERT_EQ(s.kind, Kind::step) << s.why;
  EXPECT_EQ(s.body.at("limit_s"), 5.5);
}

TEST(Channel, EverythingElseIsInvalidAndSaysWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"debug: row 0 inv=0.5", "not a JSON object"},
      {R"({"id":7,"secret":"00112233445566778899aabbccddeeff","reply":{"ok":tr)", "not a JSON object"},  // cut off
      {R"([1,2,3])", "not a JSON object"},
      {R"({"ok":true,"report":{"status":"ok","geomean_speedup":1000}})", "without the worker's secret"},
      {R"({"id":7,"secret":"ffffffffffffffffffffffffffffffff","reply":{"ok":true}})", "without the worker's secret"},
      {R"({"id":7,"secret":7,"reply":{"ok":true}})", "without the worker's secret"},
      {R"({"id":6,"secret":"00112233445566778899aabbccddeeff","reply":{"ok":true}})", "for request 6 while request 7"},
      {R"({"id":"7","secret":"00112233445566778899aabbccddeeff","reply":{"ok":true}})", "while request 7"},
      {R"({"id":7,"secret":"00112233445566778899aabbccddeeff"})", "neither a reply nor a step"},
      {R"({"id":7,"secret":"00112233445566778899aabbccddeeff","reply":true})", "neither a reply nor a step"},
      {R"({"id":7,"secret":"00112233445566778899aabbccddeeff","step":{"limit_s":0}})", "neither a reply nor a step"},
      {R"({"id":7,"secret":"00112233445566778899aabbccddeeff","step":{"what":"x"}})", "neither a reply nor a step"},
      {R"({"id":7,"secret":"00112233445566778899aabbccddeeff","reply":{},"step":{"limit_s":1}})", "neither"},
  };
  for (auto& [line, why] : cases) {
    auto m = read_channel_line(line, kSecret, 7);
    EXPECT_EQ(m.kind, Kind::invalid) << line;
    EXPECT_NE(m.why.find(why), std::string::npos) << line << " -> " << m.why;
  }
  // A quoted line never carries control bytes into a message.
  auto m = read_channel_line(std::string("\x1b[2Jgarbage\x01"), kSecret, 7);
  EXPECT_EQ(m.why.find('\x1b'), std::string::npos);
}

TEST(Channel, SecretsAreFreshAndLong) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    std::string s = make_channel_secret();
    EXPECT_EQ(s.size(), 32u);
    EXPECT_EQ(s.find_first_not_of("0123456789abcdef"), std::string::npos) << s;
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 64u);
}
