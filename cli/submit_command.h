// `tessera submit STUDY.json [--wait]`: sends a study (a StudySpec in JSON,
// proto/spec_json.h) to the planner, which ranks its layouts and queues
// trials for the agents, and prints the new study's id; with --wait it then
// follows the study as `tessera watch` does and ends with the
// recommendation. The file is checked here first, so that a bad one is one
// line naming the field, planner or not.
//
//   ID=$(tessera submit deploy/examples/study.json)
//   tessera submit study.json --wait --planner 10.0.0.5:50051
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera submit` with `args` (the arguments after "submit").
int RunSubmit(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace tessera::cli
