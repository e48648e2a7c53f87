// agent/ceilings.cpp — a device's ceilings measured by a worker and stored (agent/ceilings.h).
#include "agent/ceilings.h"

namespace tessera::agent {

std::optional<store::DeviceCeilings> measure_ceilings(evaluator::WorkerClient& worker, store::Store& db,
                                                      const std::string& device, const std::string& driver,
                                                      std::string* error) {
  auto r = worker.request({{"type", "ceilings"}}, 300);
  if (r.kind != evaluator::WorkerReply::Kind::ok || !r.body.value("ok", false)) {
    if (error) *error = r.kind == evaluator::WorkerReply::Kind::ok ? r.body.value("error", "") : r.detail;
    return std::nullopt;
  }
  db.put_ceilings({device, driver, store::hostname(), "", r.body.value("copy_bytes_per_s", 0.0),
                   r.body.value("bf16_flops_per_s", 0.0)});
  return db.ceilings(device, driver);
}

}  // namespace tessera::agent
