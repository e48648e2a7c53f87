// store/merge.h — merges database shards (one per node of a Slurm job array,
// say) into one history.
//
// Candidates are deduplicated by content (operator, source hash, arch), sources
// by hash, device ceilings by (name, driver); every run, compile, evaluation
// (with its host and GPU), per-shape row and LLM exchange is kept, its
// references remapped to the merged ids. Merging is idempotent: each run gets a
// random identity (table run_uids, written into the shard and the output the
// first time they are merged), so merging a shard again, or a shard that grew
// since, or a shard that started as a copy of the merged history, adds only
// what is new. Other append-only rows are recognised by their full content.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/store.h"

namespace tessera::store {

struct MergeStats {
  struct Counts {
    long long added = 0, present = 0;
  };
  std::map<std::string, Counts> tables;  // by table name
  std::vector<std::string> warnings;     // rows or tables that could not be merged
};

// Merges the database at shard_path into out, in one transaction. Throws
// StoreError when the shard is missing, not a tessera database, the output
// itself, or cannot be given run identities (read-only file).
MergeStats merge_shard(Store& out, const std::string& shard_path);

// Gives every run of the database (schema name "main" or an attached one) a
// random identity if it has none yet; creates the table run_uids if needed.
void tag_runs(sqlite3* db, const std::string& schema);

}  // namespace tessera::store
