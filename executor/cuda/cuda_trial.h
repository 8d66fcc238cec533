// The CUDA path of a trial (docs/architecture.md "A trial"): the same engine, steps and
// TrialResult as the CPU path, on the CUDA backend.
//
//   process_rank < 0   every rank is a thread of this process on GPU 0, over
//                      the in-process communicator on device memory (the
//                      multi-rank check on one GPU; its timings are those of
//                      ranks sharing one device)
//   process_rank >= 0  this process runs that rank on GPU (local rank % GPUs)
//                      and meets the others through NCCL (the rendezvous
//                      file carries rank 0's unique id)
//
// Measured per step: the step's wall time (the engine synchronizes the
// backend's stream at its end), communication and exposed communication
// (NCCL: from CUDA events on the communicators' and the compute streams,
// nccl_communicator.h; threads: the host time in collectives, all exposed),
// peak device memory (the backend's high-water mark), and each GPU's energy
// over the measured steps (NVML; absent when NVML or its counter is missing).
// MFU divides by the device's dense bf16 peak from gpu_peak.h's table, or,
// for a device it does not know, by a measured bf16 GEMM rate (said so in
// peak_tflops_source).
//
// Failures are typed as on the CPU: no CUDA device or a layout that does not
// fit is invalid ("no CUDA device was found (...)"), an allocation past the
// limit or the device is oom, a NaN loss is nan, passing the time limit is
// timeout, anything else crash.
//
//   TrialConfig config;  // backend "cuda", model, layout, ranks, ...
//   TrialResult result = RunCudaTrial(config);
#pragma once

#include "core/trial_result.h"
#include "executor/trial/trial_config.h"

namespace tessera::executor {

TrialResult RunCudaTrial(const TrialConfig& config);

}  // namespace tessera::executor
