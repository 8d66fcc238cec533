#include "costmodel/comm/pipeline_comm.h"

#include "costmodel/comm/collectives.h"

namespace tessera::costmodel {

double PipelineSendTimeS(const ModelConfig& model, const LayerShard& shard,
                         bool crosses_nodes, const ClusterConfig& cl,
                         const Calibration& c) {
  // 2*b*(s/cp)*h/tp bytes (Narayanan et al. SC'21, Section 4.1).
  const double bytes =
      2 * shard.local_tokens() * model.hidden / static_cast<double>(shard.tp);
  return PointToPointTimeS(bytes, crosses_nodes, cl, c);
}

}  // namespace tessera::costmodel
