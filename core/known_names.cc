#include "core/known_names.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {
namespace {

// Optimal string alignment distance (Damerau-Levenshtein where no substring
// is edited twice): insertions, deletions, substitutions and transpositions
// of two neighbours each cost 1 (Boytsov 2011, "Indexing methods for
// approximate dictionary searching", section 2.2).
size_t EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// The largest distance at which a name of `length` characters is near.
size_t NearDistance(size_t length) {
  if (length <= 4) return 1;
  if (length <= 8) return 2;
  return 3;
}

}  // namespace

std::optional<std::string> FoldedMatch(absl::string_view given,
                                       const std::vector<std::string>& known) {
  for (const std::string& name : known) {
    if (absl::EqualsIgnoreCase(given, name)) return name;
  }
  return std::nullopt;
}

std::vector<std::string> NearNames(absl::string_view given,
                                   const std::vector<std::string>& known) {
  const std::string folded = absl::AsciiStrToLower(given);
  if (folded.empty()) return {};
  // (kind: 0 prefix, 1 edit; distance; position in `known`).
  std::vector<std::tuple<int, size_t, size_t>> near;
  for (size_t i = 0; i < known.size(); ++i) {
    const std::string name = absl::AsciiStrToLower(known[i]);
    const size_t distance = EditDistance(folded, name);
    if (absl::StartsWith(name, folded) || absl::StartsWith(folded, name)) {
      near.emplace_back(0, distance, i);
    } else if (distance <= NearDistance(std::max(folded.size(), 1ul))) {
      near.emplace_back(1, distance, i);
    }
  }
  // Of the names within a few edits, only the nearest.
  size_t nearest = std::string::npos;
  for (const auto& entry : near) {
    if (std::get<0>(entry) == 1)
      nearest = std::min(nearest, std::get<1>(entry));
  }
  near.erase(std::remove_if(near.begin(), near.end(),
                            [&](const auto& entry) {
                              return std::get<0>(entry) == 1 &&
                                     std::get<1>(entry) > nearest;
                            }),
             near.end());
  std::sort(near.begin(), near.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(std::get<1>(a), std::get<0>(a), std::get<2>(a)) <
           std::make_tuple(std::get<1>(b), std::get<0>(b), std::get<2>(b));
  });
  std::vector<std::string> names;
  for (const auto& entry : near) names.push_back(known[std::get<2>(entry)]);
  return names;
}

std::string OrList(const std::vector<std::string>& names) {
  if (names.size() <= 1) return names.empty() ? "" : names.front();
  return absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "),
                      " or ", names.back());
}

std::string UnknownNameMessage(absl::string_view kind, absl::string_view given,
                               const std::vector<std::string>& known) {
  const std::vector<std::string> near = NearNames(given, known);
  return absl::StrCat(
      "unknown ", kind, " '", given, "' (",
      near.empty() ? "" : absl::StrCat("did you mean ", OrList(near), "? "),
      "known: ", absl::StrJoin(known, ", "), ")");
}

}  // namespace tessera
