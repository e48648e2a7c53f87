// cli/commands.h — the subcommands of the `tessera` executable.
#pragma once

#include <string>

#include "importer/target.h"

namespace tessera::cli {

int cmd_import(const importer::ImportOptions& o, bool json);

int cmd_targets(bool json);
int cmd_leaderboard(const std::string& db, const std::string& op, const std::string& status, int limit,
                    const std::string& device, bool json);
// The best candidate for each benchmark shape separately (a tile shape that
// wins at M = 8192 is the wrong one at M = 128: per-shape champions).
int cmd_leaderboard_per_shape(const std::string& db, const std::string& op, const std::string& device, bool json);
int cmd_show(const std::string& db, long long id, bool json);
int cmd_doctor(const std::string& db, bool json, bool measure);

// Default database: $TESSERA_DB, else runs/tessera.db.
std::string default_db();

}  // namespace tessera::cli
