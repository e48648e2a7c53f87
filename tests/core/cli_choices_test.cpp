// tests/core/cli_choices_test.cpp — the typed choices at the CLI boundary (the GPUs,
// the proposer, the L2 flush, the stopping rule): each word made a value once, wrong words refused with
// a message that names the flag and the accepted words, and the run row records the
// value's name as it recorded the word.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "agent/gpu_selection.h"
#include "agent/optimize.h"
#include "tests/support/shell.h"

namespace fs = std::filesystem;
using tessera::agent::GpuSelection;
using tessera::agent::Proposer;

namespace {

// The message of the std::invalid_argument that parse(word) throws; "" when it accepts it.
template <class Parse>
std::string refusal(Parse parse, const std::string& word) {
  try {
    parse(word);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

tessera::testing::ShellResult run(const std::string& args) {
  return tessera::testing::shell(std::string(TESSERA_BINARY) + " " + args);
}

std::string temp_db() {
  auto p = fs::temp_directory_path() / ("tessera-choices-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
  fs::remove(p);
  return p.string();
}

}  // namespace

TEST(CliChoices, GpuSelectionReadsAllNoneAndLists) {
  using tessera::agent::parse_gpu_selection;
  EXPECT_EQ(parse_gpu_selection("all"), GpuSelection::all());
  EXPECT_EQ(parse_gpu_selection("none"), GpuSelection::none());
  GpuSelection two = parse_gpu_selection("2,0");
  EXPECT_EQ(two.kind, GpuSelection::Kind::list);
  EXPECT_EQ(two.ordinals, (std::vector<int>{2, 0})) << "the order given";
  EXPECT_EQ(parse_gpu_selection("7").ordinals, std::vector<int>{7});
  for (const char* word : {"all", "none", "0", "0,1", "3,1,2"})
    EXPECT_EQ(tessera::agent::gpu_selection_name(parse_gpu_selection(word)), word);
}

TEST(CliChoices, GpuSelectionRefusesWhatIsNotAListOfOrdinals) {
  using tessera::agent::parse_gpu_selection;
  for (const char* word : {"", "first", "ALL", "0,", ",1", "0,,1", "-1", "1a", " 1", "0;1", "12345"}) {
    std::string m = refusal(parse_gpu_selection, word);
    EXPECT_NE(m.find("expected all, none or a list of GPU ordinals like 0,1"), std::string::npos)
        << "'" << word << "': " << m;
    EXPECT_NE(m.find(std::string("'") + word + "'"), std::string::npos) << "names the word: " << m;
  }
  EXPECT_NE(refusal(parse_gpu_selection, "0,1,0").find("names GPU 0 twice"), std::string::npos);
}

TEST(CliChoices, ProposerNamesRoundTripAndUnknownOnesAreRefused) {
  using tessera::agent::parse_proposer;
  using tessera::agent::proposer_name;
  for (Proposer p : {Proposer::search, Proposer::llm, Proposer::hybrid}) EXPECT_EQ(parse_proposer(proposer_name(p)), p);
  EXPECT_STREQ(proposer_name(Proposer::hybrid), "hybrid");
  EXPECT_EQ(parse_proposer("llm"), Proposer::llm);
  for (const char* word : {"oracle", "Search", ""})
    EXPECT_NE(refusal(parse_proposer, word).find("expected search, llm or hybrid"), std::string::npos) << word;
}

TEST(CliChoices, WrongWordsAreUsageErrorsNamingTheFlagAndTheChoices) {
  std::string db = temp_db();
  struct Case {
    std::string args, flag, choices;
  };
  for (const Case& c : std::vector<Case>{
           {"optimize rmsnorm --gpus first", "--gpus", "expected all, none or a list of GPU ordinals like 0,1"},
           {"optimize rmsnorm --gpus 0,0", "--gpus", "names GPU 0 twice"},
           {"optimize rmsnorm --proposer oracle", "--proposer", "expected search, llm or hybrid"},
           {"optimize rmsnorm --l2-flush memset", "--l2-flush", "expected write or read"},
           {"recheck rmsnorm --gpus 1,", "--gpus", "expected all, none or a list of GPU ordinals"},
           {"recheck rmsnorm --l2-flush cold", "--l2-flush", "expected write or read"},
           {"optimize rmsnorm --stopping-rule entropy", "--stopping-rule", "expected rse or plateau"},
           {"recheck rmsnorm --stopping-rule RSE", "--stopping-rule", "expected rse or plateau"},
       }) {
    auto r = run(c.args + " --db " + db);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.flag + ": "), std::string::npos) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.choices), std::string::npos) << c.args << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(db)) << "a usage error opens no database";
}

TEST(CliChoices, TheRunRowRecordsTheChoicesByName) {
  std::string db = temp_db();
  auto r = run("optimize rmsnorm --gpus none --proposer search --budget 1 --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h,
                               "SELECT proposer, json_extract(settings, '$.gpus'), "
                               "json_extract(settings, '$.proposer'), json_extract(settings, '$.stopping_rule') "
                               "FROM runs",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  auto text = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i))); };
  EXPECT_EQ(text(0), "search");
  EXPECT_EQ(text(1), "none");
  EXPECT_EQ(text(2), "search");
  EXPECT_EQ(text(3), "rse") << "the default rule, said";
  sqlite3_finalize(st);
  sqlite3_close(h);
}

TEST(CliChoices, TheRunRowRecordsTheStoppingRuleChosen) {
  std::string db = temp_db();
  auto r = run("optimize rmsnorm --gpus none --stopping-rule plateau --budget 1 --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT json_extract(settings, '$.stopping_rule') FROM runs", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "plateau");
  sqlite3_finalize(st);
  sqlite3_close(h);
}
