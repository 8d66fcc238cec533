#include "proto/spec_json.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace {

// Generous bound on a spec file: a study is a few hundred bytes.
constexpr std::streamoff kMaxSpecBytes = 1 << 20;

absl::Status SpecError(absl::string_view source, absl::string_view message) {
  // One line: parsers may put the offending text on following lines.
  std::string line = absl::StrReplaceAll(message, {{"\r", " "}, {"\n", " "}});
  return absl::InvalidArgumentError(absl::StrCat("spec: ", source, ": ", line));
}

// Checks strict JSON syntax, with nlohmann's line and column in the error
// (protobuf's parser accepts trailing commas and reports no position).
absl::Status CheckSyntax(absl::string_view json, absl::string_view source) {
  try {
    nlohmann::json parsed = nlohmann::json::parse(json.begin(), json.end());
    if (!parsed.is_object()) {
      return SpecError(source, "expected a JSON object {...} at the top");
    }
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 3: ...",
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'".
    std::string what = e.what();
    const size_t at = what.find("] ");
    if (at != std::string::npos) what = what.substr(at + 2);
    return SpecError(source, absl::StrCat("malformed JSON: ", what));
  }
  return absl::OkStatus();
}

// What a protobuf type name means to someone writing JSON.
std::string ExpectedValue(absl::string_view type) {
  if (type == "TYPE_INT64" || type == "TYPE_INT32") return "an integer";
  if (type == "TYPE_DOUBLE" || type == "TYPE_FLOAT") return "a number";
  if (type == "TYPE_STRING") return "a string";
  if (type == "TYPE_BOOL") return "true or false";
  if (absl::StartsWith(type, "type.googleapis.com/")) return "an object {...}";
  return std::string(type);
}

// Rewrites protobuf 3.21's JSON mapping errors so that they name the field
// by its path:
//   "(cluster) nodez: Cannot find field."  -> "unknown field 'cluster.nodez'"
//   "(cluster.nodes): invalid value 3.5 for type TYPE_INT64"
//                          -> "cluster.nodes: invalid value 3.5 (expected an
//                              integer)"
// Anything else passes through unchanged.
std::string DescribeMappingError(absl::string_view message) {
  constexpr absl::string_view kUnknown = ": Cannot find field.";
  if (absl::EndsWith(message, kUnknown)) {
    absl::string_view rest =
        message.substr(0, message.size() - kUnknown.size());
    std::string path;
    if (absl::StartsWith(rest, "(")) {
      const size_t close = rest.find(") ");
      if (close != absl::string_view::npos) {
        path = absl::StrCat(rest.substr(1, close - 1), ".");
        rest = rest.substr(close + 2);
      }
    }
    return absl::StrCat("unknown field '", path, rest, "'");
  }
  constexpr absl::string_view kInvalid = "): invalid value ";
  constexpr absl::string_view kForType = " for type ";
  const size_t invalid = message.find(kInvalid);
  const size_t for_type = message.rfind(kForType);
  if (absl::StartsWith(message, "(") && invalid != absl::string_view::npos &&
      for_type != absl::string_view::npos && for_type > invalid) {
    const absl::string_view field = message.substr(1, invalid - 1);
    const size_t value_at = invalid + kInvalid.size();
    const absl::string_view value =
        message.substr(value_at, for_type - value_at);
    const absl::string_view type = message.substr(for_type + kForType.size());
    return absl::StrCat(field, ": invalid value ", value, " (expected ",
                        ExpectedValue(type), ")");
  }
  return std::string(message);
}

}  // namespace

absl::StatusOr<v1::StudySpec> StudySpecFromJson(absl::string_view json,
                                                absl::string_view source) {
  absl::Status syntax = CheckSyntax(json, source);
  if (!syntax.ok()) return syntax;
  v1::StudySpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &spec, options);
  if (!status.ok()) {
    return SpecError(
        source, DescribeMappingError(std::string(status.message().data(),
                                                 status.message().size())));
  }
  return spec;
}

std::string StudySpecToJson(const v1::StudySpec& spec) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string out;
  // Printing a message we built cannot fail but for invalid UTF-8 in a
  // string: then "{}" and the reader says what is missing.
  if (!google::protobuf::util::MessageToJsonString(spec, &out, options).ok()) {
    return "{}";
  }
  return out;
}

absl::StatusOr<v1::StudySpec> ReadStudySpecFile(absl::string_view path) {
  const std::string name(path);
  std::error_code error;
  if (std::filesystem::is_directory(name, error)) {
    return SpecError(path, "cannot read: is a directory");
  }
  std::ifstream file(name, std::ios::binary);
  if (!file) {
    return SpecError(path, absl::StrCat("cannot read: ", std::strerror(errno)));
  }
  std::ostringstream text;
  char buffer[4096];
  std::streamoff total = 0;
  while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
    total += file.gcount();
    if (total > kMaxSpecBytes) {
      return SpecError(path, absl::StrCat("cannot read: larger than ",
                                          kMaxSpecBytes, " bytes"));
    }
    text.write(buffer, file.gcount());
  }
  if (file.bad()) {
    return SpecError(path, absl::StrCat("cannot read: ", std::strerror(errno)));
  }
  return StudySpecFromJson(text.str(), path);
}

}  // namespace tessera
