#include "cli/output_format.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/text_table.h"

namespace tessera::cli {
namespace {

constexpr OutputFormat kFormats[] = {OutputFormat::kTable, OutputFormat::kWide,
                                     OutputFormat::kJson, OutputFormat::kCsv};

std::optional<OutputFormat> ParseOutputFormat(absl::string_view text) {
  for (OutputFormat f : kFormats) {
    if (text == OutputFormatName(f)) return f;
  }
  return std::nullopt;
}

}  // namespace

absl::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kWide:
      return "wide";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kCsv:
      return "csv";
  }
  return "table";
}

void OutputFlags::Register(FlagSet* flags, bool csv_switch) {
  flags->AddString("output", "table|wide|json|csv",
                   "table fits 100 columns (the default), wide shows every "
                   "column, json and csv keep every number",
                   &output_);
  flags->AddShortName('o', "output");
  flags->AddSwitch("json", "the same as -o json", &json_);
  if (csv_switch) flags->AddSwitch("csv", "the same as -o csv", &csv_);
  flags->AddRequirement([this](const auto&) {
    std::vector<std::string> errors;
    std::optional<OutputFormat> asked;
    if (output_.has_value()) {
      asked = ParseOutputFormat(*output_);
      if (!asked.has_value()) {
        errors.push_back(absl::StrCat("--output: '", *output_,
                                      "' is not a format (table, wide, json, "
                                      "csv)"));
      }
    }
    if (json_ && csv_) {
      errors.push_back("--csv: give --json or --csv, not both");
    } else if (asked.has_value() && (json_ || csv_)) {
      const OutputFormat alias =
          json_ ? OutputFormat::kJson : OutputFormat::kCsv;
      if (*asked != alias) {
        errors.push_back(absl::StrCat("--", OutputFormatName(alias),
                                      ": conflicts with --output ", *output_));
      }
    }
    return errors;
  });
}

OutputFormat OutputFlags::format() const {
  if (json_) return OutputFormat::kJson;
  if (csv_) return OutputFormat::kCsv;
  if (output_.has_value()) {
    return ParseOutputFormat(*output_).value_or(OutputFormat::kTable);
  }
  return OutputFormat::kTable;
}

size_t OutputFlags::table_width() const {
  return format() == OutputFormat::kWide ? 0 : kTableWidth;
}

std::string CsvField(absl::string_view text) {
  if (text.find_first_of(",\"\r\n") == absl::string_view::npos) {
    return std::string(text);
  }
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::vector<std::string> quoted;
  quoted.reserve(fields.size());
  for (const std::string& f : fields) quoted.push_back(CsvField(f));
  return absl::StrCat(absl::StrJoin(quoted, ","), "\n");
}

std::string CsvNumber(std::optional<double> value) {
  if (!value.has_value()) return "";
  char buffer[64];
  const std::to_chars_result r =
      std::to_chars(buffer, buffer + sizeof(buffer), *value);
  return std::string(buffer, r.ptr);
}

}  // namespace tessera::cli
