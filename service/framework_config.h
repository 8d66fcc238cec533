// A command trial's layout in its training stack's own configuration format
// (export/: torchtitan, Megatron-LM, DeepSpeed, NeMo), for the command's
// {config} placeholder. The planner renders it into the assignment, so an
// agent writes what it is given and links no exporter and no cost model.
//
//   v1::TrialAssignment a = ...;  // command, stack, precision, layout set
//   AttachFrameworkConfig(a);
//   // a.framework_config_file(): "ds_config.json"; a.framework_config(): its
//   // text, or a.framework_config_error(): why the format cannot say it.
#pragma once

#include "tessera/v1/service.pb.h"

namespace tessera::service {

// Sets `a`'s framework_config_file, and framework_config or
// framework_config_error, from its model, layout, batch, sequence length,
// gang shape, stack and precision; leaves them empty when the stack has no
// export target. The error reads "assignment.model: ...",
// "assignment.precision: ..." or "assignment.layout: {config}: ..." (the
// exporter's refusal, naming the field the format cannot say).
void AttachFrameworkConfig(v1::TrialAssignment& a);

}  // namespace tessera::service
