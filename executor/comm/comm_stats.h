// Counters of one communicator's traffic, for the engine's per-step report of
// communication time. Kept by the calling rank's thread without locks: read
// them from that thread, or after it has been joined.
//
//   const CommStats before = tp.stats();
//   ... one training step ...
//   double comm_s = tp.stats().wait_s + tp.stats().copy_s -
//                   (before.wait_s + before.copy_s);
#pragma once

#include <cstdint>

namespace tessera::executor {

struct CommStats {
  int64_t collectives = 0;  // AllReduce .. Split, Barrier included
  int64_t sends = 0;
  int64_t recvs = 0;
  // Payload bytes as nccl-tests counts "size": the buffer for AllReduce and
  // Broadcast, recv for AllGather, send for ReduceScatter, the message for
  // Send and Recv.
  int64_t bytes = 0;
  double wait_s = 0;  // blocked: waiting for peers to arrive, finish or send
  double copy_s =
      0;  // in MemoryOps: this rank's share of copies and reductions
};

}  // namespace tessera::executor
