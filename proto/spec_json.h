// Reading a StudySpec from JSON, through protobuf's JSON mapping of
// proto/tessera/v1/specs.proto: field names as in the .proto or in
// lowerCamelCase, unknown fields are errors, the JSON must be strict (no
// trailing commas or text after the object). Every error is one line that
// names the source and the field:
//
//   absl::StatusOr<v1::StudySpec> spec = ReadStudySpecFile("study.json");
//   // error: "spec: study.json: unknown field 'cluster.nodez'"
//   // error: "spec: study.json: cluster.nodes: invalid value \"x\" (expected
//   //         an integer)"
//   // error: "spec: study.json: line 3, column 1: syntax error ..."
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tessera/v1/specs.pb.h"

namespace tessera {

// Parses `json` into a StudySpec. `source` names where the text came from
// ("study.json", "request") and prefixes every error as "spec: <source>: ".
// Errors are INVALID_ARGUMENT. Checks only the JSON and its mapping; the
// values are checked by WorkloadFromSpec (proto/convert.h).
absl::StatusOr<v1::StudySpec> StudySpecFromJson(absl::string_view json,
                                                absl::string_view source);

// The spec as JSON with the .proto's field names (what StudySpecFromJson
// reads back), fields at their defaults left out.
std::string StudySpecToJson(const v1::StudySpec& spec);

// Reads the file at `path` and parses it as StudySpecFromJson does, with
// `path` as the source. A file that is missing or unreadable is
// INVALID_ARGUMENT "spec: <path>: cannot read: <why>".
absl::StatusOr<v1::StudySpec> ReadStudySpecFile(absl::string_view path);

}  // namespace tessera
