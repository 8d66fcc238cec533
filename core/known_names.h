// Finding a name among the known ones the way a person typed it: case folded
// ("llama3-8B" is llama3-8b), and when nothing matches, the near names to
// suggest ("h100" -> h100-sxm, "megatron" -> megatron-core or megatron-2021,
// "torchtittan" -> torchtitan).
//
//   std::optional<std::string> name = FoldedMatch("Llama3-8B", presets);
//   if (!name) {
//     return absl::NotFoundError(absl::StrCat(
//         "model: ", UnknownNameMessage("preset", "lama3-8b", presets)));
//   }
//   // "unknown preset 'lama3-8b' (did you mean llama3-8b? known: ...)"
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera {

// The known name equal to `given` ignoring ASCII case; nullopt when none is.
std::optional<std::string> FoldedMatch(absl::string_view given,
                                       const std::vector<std::string>& known);

// The known names `given` was probably meant as, nearest first: those that
// start with it or that it starts with (case folded; "megatron" ->
// megatron-core, megatron-2021) and the nearest of those within a small
// edit distance (Damerau-Levenshtein, case folded: at most 1 for names up
// to 4 characters, 2 up to 8, else 3). Empty when none is near.
std::vector<std::string> NearNames(absl::string_view given,
                                   const std::vector<std::string>& known);

// "unknown <kind> 'given' (did you mean A or B? known: A, B, C)", without
// the question when no name is near.
std::string UnknownNameMessage(absl::string_view kind, absl::string_view given,
                               const std::vector<std::string>& known);

// "A", "A or B", "A, B or C".
std::string OrList(const std::vector<std::string>& names);

}  // namespace tessera
