// evaluator/nvml.h — what NVML (loaded at run time, when present) says of a GPU: its SM
// clock, temperature and clock event reasons, read before and after every evaluation
// and per timing batch when samples are dumped.
#pragma once

namespace tessera::evaluator {

// The SM clock in MHz / the GPU temperature in °C; 0 when unreadable.
double sm_clock_mhz(int ordinal);
double gpu_temperature_c(int ordinal);
// NVML's clock event reasons (why the clocks are below their maximum: idle, power
// cap, thermal or hardware slowdown...), a bit mask; 0 when unreadable.
unsigned long long clock_event_reasons(int ordinal);

}  // namespace tessera::evaluator
