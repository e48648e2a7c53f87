// tests/support/sql_rows.h — reads a database the way a test inspects it: every row
// of a query as text ("NULL" for null), the database opened read-only.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::testing {

using Rows = std::vector<std::vector<std::string>>;

inline Rows sql_rows(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h) << " in " << sql;
  Rows rows;
  while (s && sqlite3_step(s) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      auto t = sqlite3_column_text(s, c);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    rows.push_back(row);
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return rows;
}

}  // namespace tessera::testing
