// How many CPUs this process may run on: the size of its affinity mask, not
// the machine's count. std::thread::hardware_concurrency() counts every CPU
// online, so a process bound to fewer (taskset, a Slurm task's
// --cpus-per-task binding, a container's cpuset) that sized its thread
// pools by it would run more threads than it has CPUs. Two agents on one
// host are given disjoint CPUs this way (deploy/quickstart.sh) so that a
// trial measures the same whether or not the other agent runs one beside
// it; every thread count of the CPU executor and the planner's parallel
// search is taken from here.
//
//   const int threads = UsableCpuCount();
#pragma once

namespace tessera {

// The CPUs in the calling thread's affinity mask (sched_getaffinity), at
// least 1; hardware_concurrency() where the mask cannot be read.
int UsableCpuCount();

}  // namespace tessera
