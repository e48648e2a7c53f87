// agent/ceilings.h — a device's ceilings (copy bandwidth, bf16 tensor-core rate) as a
// worker on that device measures them, stored per device and driver
// (store::DeviceCeilings): for a session's roofline figures and `tessera doctor`.
#pragma once

#include <optional>
#include <string>

#include "evaluator/worker_client.h"
#include "store/store.h"

namespace tessera::agent {

// Asks `worker` to measure its device's ceilings (300 s at most) and stores them in `db`
// under device, driver and this host. Returns the stored row; nullopt when the worker
// fails, with *error (where given) saying why.
std::optional<store::DeviceCeilings> measure_ceilings(evaluator::WorkerClient& worker, store::Store& db,
                                                      const std::string& device, const std::string& driver,
                                                      std::string* error = nullptr);

}  // namespace tessera::agent
