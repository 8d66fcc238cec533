#include "core/version.h"

#include "absl/strings/str_cat.h"
#include "tessera_version_generated.h"

namespace tessera {

absl::string_view Version() { return TESSERA_VERSION; }

absl::string_view GitCommit() { return TESSERA_GIT_COMMIT; }

std::string VersionLine(absl::string_view program) {
  std::string line = absl::StrCat(program, " ", Version());
  if (!GitCommit().empty()) absl::StrAppend(&line, " (git ", GitCommit(), ")");
  return line;
}

}  // namespace tessera
