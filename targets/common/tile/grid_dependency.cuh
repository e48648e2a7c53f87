// tile/grid_dependency.cuh — tessera tile library: programmatic dependent launch (sm_90
// and later), the kernel side of a launch step with "pdl": true (spec.h, KernelLaunch::pdl).
//
// A step launched as a programmatic dependent may start while the kernel before it on the
// stream is still running. Before it reads or writes anything that kernel touches it calls
// grid_dependency_wait(), which returns once that grid has completed and its writes are
// visible; launched without the attribute, it returns at once. The kernel before it may
// call allow_dependents() to let the dependent's blocks be scheduled before its own blocks
// exit (without it that happens as they exit); it changes no result, only when the
// dependent's prologue runs.
#pragma once

namespace tile {

__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

__device__ __forceinline__ void allow_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace tile
