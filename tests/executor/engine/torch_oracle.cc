#include "tests/executor/engine/torch_oracle.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tessera::executor::testing {

namespace fs = std::filesystem;

bool TorchAvailable() {
  static const bool available =
      std::system(absl::StrCat(kTorchPython,
                               " -c 'import torch, numpy' > /dev/null 2>&1")
                      .c_str()) == 0;
  return available;
}

nlohmann::json ModelManifest(const ModelConfig& model) {
  return {{"layers", model.layers},     {"hidden", model.hidden},
          {"heads", model.heads},       {"kv_heads", model.kv_heads},
          {"norm_eps", model.norm_eps}, {"rope_theta", model.rope_theta}};
}

absl::StatusOr<TorchGradients> RunTorchReference(const ModelConfig& model,
                                                 const GlobalTensors& weights,
                                                 const TokenSource& data,
                                                 int64_t global_batch,
                                                 int64_t seq_len) {
  static int calls = 0;
  const fs::path dir = fs::path(::testing::TempDir()) /
                       absl::StrCat("torch_ref_", getpid(), "_", ++calls);
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json manifest;
  manifest["model"] = ModelManifest(model);
  for (const auto& [name, t] : weights) {
    const std::string file = name + ".f32";
    std::ofstream(dir / file, std::ios::binary)
        .write(reinterpret_cast<const char*>(t.values.data()),
               static_cast<std::streamsize>(t.values.size() * sizeof(float)));
    manifest["params"].push_back(
        {{"name", name}, {"rows", t.rows}, {"cols", t.cols}, {"file", file}});
  }
  std::vector<int32_t> seq(seq_len + 1);
  for (int64_t i = 0; i < global_batch; ++i) {
    data.Sample(i, seq_len + 1, seq.data());
    manifest["tokens"].push_back(
        std::vector<int32_t>(seq.begin(), seq.end() - 1));
    manifest["targets"].push_back(
        std::vector<int32_t>(seq.begin() + 1, seq.end()));
  }
  std::ofstream(dir / "manifest.json") << manifest.dump();
  const std::string script = absl::StrCat(
      TESSERA_SOURCE_DIR, "/tests/executor/engine/torch_reference.py");
  if (std::system(
          absl::StrCat(kTorchPython, " ", script, " ", dir.string()).c_str()) !=
      0) {
    return absl::InternalError(
        absl::StrCat(script, " failed on ", dir.string()));
  }
  TorchGradients out;
  out.loss =
      nlohmann::json::parse(std::ifstream(dir / "out" / "loss.json"))["loss"];
  for (const auto& [name, t] : weights) {
    std::vector<float> grad(t.values.size());
    std::ifstream in(dir / "out" / (name + ".grad"), std::ios::binary);
    in.read(reinterpret_cast<char*>(grad.data()),
            static_cast<std::streamsize>(grad.size() * sizeof(float)));
    if (!in || in.peek() != std::char_traits<char>::eof()) {
      return absl::InternalError(
          absl::StrCat("torch_reference.py wrote no gradient of the size of ",
                       name, " (", grad.size(), " values)"));
    }
    out.grads[name] = std::move(grad);
  }
  fs::remove_all(dir);
  return out;
}

}  // namespace tessera::executor::testing
