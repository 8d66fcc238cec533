// core/known_names.h: case folding and the near names a person meant, on
// the project's own preset, stack and target names.
#include "core/known_names.h"

#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/model.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

const std::vector<std::string> kStacks = {
    "deepspeed",   "megatron-2021", "megatron-core", "nanotron",
    "pytorch-ddp", "pytorch-fsdp",  "tessera",       "torchtitan"};

TEST(KnownNamesTest, FoldsCase) {
  EXPECT_EQ(FoldedMatch("llama3-8B", ModelPresetNames()), "llama3-8b");
  EXPECT_EQ(FoldedMatch("H100-SXM", GpuPresetNames()), "h100-sxm");
  EXPECT_EQ(FoldedMatch("TorchTitan", kStacks), "torchtitan");
  EXPECT_EQ(FoldedMatch("h100", GpuPresetNames()), std::nullopt);
  EXPECT_EQ(FoldedMatch("", kStacks), std::nullopt);
}

TEST(KnownNamesTest, SuggestsNamesThatStartTheSame) {
  // Both megatron stacks start with what was typed: both, in table order.
  EXPECT_EQ(NearNames("megatron", kStacks),
            (std::vector<std::string>{"megatron-2021", "megatron-core"}));
  // The shorter name (nearer) first.
  EXPECT_EQ(NearNames("h100", GpuPresetNames()),
            (std::vector<std::string>{"h100-sxm", "h100-sxm-96g-500w"}));
  // A longer name that starts with a known one.
  EXPECT_EQ(
      NearNames("megatron-lm", {"torchtitan", "megatron", "deepspeed", "nemo"}),
      (std::vector<std::string>{"megatron"}));
}

TEST(KnownNamesTest, SuggestsNamesWithinAFewEdits) {
  EXPECT_EQ(NearNames("torchtittan", kStacks),
            (std::vector<std::string>{"torchtitan"}));
  // A transposition is one edit.
  EXPECT_EQ(NearNames("lamla3-8b", ModelPresetNames()),
            (std::vector<std::string>{"llama3-8b"}));
  EXPECT_EQ(NearNames("LLAMA3-7B", ModelPresetNames()),
            (std::vector<std::string>{"llama2-7b", "llama3-8b", "llama3-70b"}));
  // Nothing near: no guess.
  EXPECT_TRUE(NearNames("jax", kStacks).empty());
  EXPECT_TRUE(NearNames("llama9", ModelPresetNames()).empty());
  EXPECT_TRUE(NearNames("b300", GpuPresetNames()).empty());
  EXPECT_TRUE(NearNames("", kStacks).empty());
}

TEST(KnownNamesTest, MessageNamesTheGuessAndTheKnownNames) {
  EXPECT_EQ(
      UnknownNameMessage("stack", "megatron", {"megatron-core", "tessera"}),
      "unknown stack 'megatron' (did you mean megatron-core? known: "
      "megatron-core, tessera)");
  EXPECT_EQ(UnknownNameMessage("stack", "jax", {"megatron-core", "tessera"}),
            "unknown stack 'jax' (known: megatron-core, tessera)");
  EXPECT_EQ(OrList({"a", "b", "c"}), "a, b or c");
  EXPECT_EQ(OrList({"a"}), "a");
  EXPECT_EQ(OrList({}), "");
}

}  // namespace
}  // namespace tessera
