#include "proto/spec_json.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// The error of parsing `json` as a spec named "s.json" ("" when it parses).
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<v1::StudySpec> spec = StudySpecFromJson(json, "s.json");
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message().find('\n'), absl::string_view::npos)
      << "errors are one line: " << spec.status().message();
  return std::string(spec.status().message());
}

TEST(SpecJsonTest, ReadsTheExampleStudy) {
  absl::StatusOr<v1::StudySpec> spec = ReadStudySpecFile(
      std::string(TESSERA_SOURCE_DIR) + "/deploy/examples/study.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().preset(), "llama2-7b");
  EXPECT_FALSE(spec->model().has_layers());
  EXPECT_EQ(spec->cluster().gpu().preset(), "h100-sxm");
  EXPECT_EQ(spec->cluster().nodes(), 32);
  EXPECT_EQ(spec->cluster().gpus_per_node(), 8);
  EXPECT_EQ(spec->training().global_batch(), 512);
  EXPECT_EQ(spec->training().seq_len(), 4096);
  EXPECT_DOUBLE_EQ(spec->training().total_tokens(), 1e12);
  EXPECT_EQ(spec->search().top(), 10);
}

TEST(SpecJsonTest, ExplicitDimensionsAndCamelCase) {
  absl::StatusOr<v1::StudySpec> spec = StudySpecFromJson(
      R"({"model": {"layers": 2, "hidden": 64, "heads": 4, "kvHeads": 2,
                    "ffn_hidden": 176, "vocab": 100, "mlp": "gelu",
                    "tie_embeddings": true},
          "cluster": {"gpu": {"preset": "a100-sxm-80g", "tdp_w": 350},
                      "nodes": "4", "gpusPerNode": 8,
                      "inter_node_latency_us": 7.5},
          "training": {"global_batch": 64, "seq_len": 1024,
                       "total_tokens": "2e9"}})",
      "inline");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->model().preset().empty());
  EXPECT_EQ(spec->model().kv_heads(), 2);
  EXPECT_EQ(spec->model().ffn_hidden(), 176);
  EXPECT_EQ(spec->model().mlp(), "gelu");
  EXPECT_TRUE(spec->model().has_tie_embeddings());
  EXPECT_FALSE(spec->model().has_rope_theta());
  EXPECT_DOUBLE_EQ(spec->cluster().gpu().tdp_w(), 350);
  EXPECT_FALSE(spec->cluster().gpu().has_hbm_gbs());
  EXPECT_EQ(spec->cluster().nodes(), 4);  // int64 may come as a string
  EXPECT_EQ(spec->cluster().gpus_per_node(), 8);
  EXPECT_DOUBLE_EQ(spec->cluster().inter_node_latency_us(), 7.5);
  EXPECT_FALSE(spec->cluster().has_inter_node_gbs());
  EXPECT_DOUBLE_EQ(spec->training().total_tokens(), 2e9);
  EXPECT_FALSE(spec->search().has_top());
}

TEST(SpecJsonTest, UnknownFieldsAreErrorsWithTheirPath) {
  EXPECT_EQ(ErrorOf(R"({"nodez": 3})"), "spec: s.json: unknown field 'nodez'");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"nodez": 3}})"),
            "spec: s.json: unknown field 'cluster.nodez'");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"gpu": {"preset": "h100-sxm",
                                            "tflops": 1}}})"),
            "spec: s.json: unknown field 'cluster.gpu.tflops'");
  EXPECT_EQ(ErrorOf(R"({"trials": {"max_trialz": 1}})"),
            "spec: s.json: unknown field 'trials.max_trialz'");
}

TEST(SpecJsonTest, WrongTypesNameTheField) {
  EXPECT_EQ(ErrorOf(R"({"cluster": {"nodes": "abc"}})"),
            "spec: s.json: cluster.nodes: invalid value \"abc\" (expected an "
            "integer)");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"nodes": 3.5}})"),
            "spec: s.json: cluster.nodes: invalid value 3.5 (expected an "
            "integer)");
  EXPECT_EQ(ErrorOf(R"({"training": {"total_tokens": "lots"}})"),
            "spec: s.json: training.total_tokens: invalid value \"lots\" "
            "(expected a number)");
  EXPECT_EQ(ErrorOf(R"({"model": {"preset": 7}})"),
            "spec: s.json: model.preset: invalid value 7 (expected a string)");
  EXPECT_EQ(ErrorOf(R"({"model": {"tie_embeddings": 1}})"),
            "spec: s.json: model.tie_embeddings: invalid value 1 (expected "
            "true or false)");
  EXPECT_EQ(ErrorOf(R"({"model": "llama2-7b"})"),
            "spec: s.json: model: invalid value \"llama2-7b\" (expected an "
            "object {...})");
  EXPECT_NE(ErrorOf(R"({"model": [1]})").find("model"), std::string::npos);
}

TEST(SpecJsonTest, MalformedJsonSaysWhere) {
  const std::string truncated = ErrorOf("{\n  \"name\": \"x\",\n");
  EXPECT_EQ(truncated.rfind("spec: s.json: malformed JSON: parse error at "
                            "line 3",
                            0),
            0u)
      << truncated;
  EXPECT_NE(ErrorOf(R"({"name": "x",})").find("malformed JSON"),
            std::string::npos);  // strict: no trailing comma
  EXPECT_NE(ErrorOf(R"({"name": "x"} tail)").find("malformed JSON"),
            std::string::npos);
  EXPECT_NE(ErrorOf("").find("malformed JSON"), std::string::npos);
  // nlohmann reports an overflowing number as out_of_range, not parse_error
  // (found by the fuzz smoke test).
  EXPECT_EQ(ErrorOf(R"({"training": {"total_tokens": 1e999}})"),
            "spec: s.json: malformed JSON: number overflow parsing '1e999'");
  EXPECT_EQ(ErrorOf("[1, 2]"),
            "spec: s.json: expected a JSON object {...} at the top");
  EXPECT_EQ(ErrorOf("{}"), "");  // empty but well-formed; values checked later
}

TEST(SpecJsonTest, UnreadableFilesAreNamed) {
  absl::StatusOr<v1::StudySpec> spec =
      ReadStudySpecFile("/nonexistent/study.json");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "spec: /nonexistent/study.json: cannot read: No such file or "
            "directory");
  spec = ReadStudySpecFile(TESSERA_SOURCE_DIR);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            absl::StrCat("spec: ", TESSERA_SOURCE_DIR,
                         ": cannot read: is a directory"));
}

TEST(SpecJsonTest, FileErrorsCarryThePath) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tessera_spec_json_test.json")
          .string();
  {
    std::ofstream file(path);
    file << R"({"cluster": {"nodez": 3}})";
  }
  absl::StatusOr<v1::StudySpec> spec = ReadStudySpecFile(path);
  std::remove(path.c_str());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            absl::StrCat("spec: ", path, ": unknown field 'cluster.nodez'"));
}

}  // namespace
}  // namespace tessera
