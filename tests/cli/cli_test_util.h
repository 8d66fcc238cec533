// Runs `tessera` in-process for the CLI tests and parses what it printed.
//
//   CliRun r = RunCli({"plan", "--spec", ExampleSpecPath(), "--json"});
//   EXPECT_EQ(r.status, 0);
//   nlohmann::json j = nlohmann::json::parse(r.out);
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tessera::cli {

struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

inline CliRun RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun r;
  r.status = RunTessera(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::string ExampleSpecPath() {
  return std::string(TESSERA_SOURCE_DIR) + "/deploy/examples/study.json";
}

// deploy/examples/study.json as flags.
inline std::vector<std::string> ExampleFlags() {
  return {"--model",        "llama2-7b", "--gpu",           "h100-sxm",
          "--nodes",        "32",        "--gpus-per-node", "8",
          "--global-batch", "512",       "--seq-len",       "4096",
          "--total-tokens", "1e12"};
}

inline std::vector<std::string> Concat(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace tessera::cli
