// How a listing command prints (-o, --output): `table` for people (the
// default; fits kTableWidth columns by cutting and dropping the least
// important ones), `wide` (every column, nothing cut), `json` (numbers in
// full; null where nothing was measured) or `csv` (RFC 4180: one header
// row whose names carry the units, numbers in full with no units, empty
// where nothing was measured). The commands' old `--json` (and `--csv`)
// switches stay as aliases.
//
//   OutputFlags output;
//   output.Register(&flags);           // -o, --output, --json
//   ... flags.Parse(args) ...          // reports a bad or clashing format
//   switch (output.format()) { case OutputFormat::kCsv: ... }
//
//   std::cout << CsvLine({"a,b", "say \"hi\""});  // "\"a,b\",\"say
//                                                  // \"\"hi\"\"\"\n"
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/flags.h"

namespace tessera::cli {

enum class OutputFormat { kTable, kWide, kJson, kCsv };

// "table", "wide", "json", "csv".
absl::string_view OutputFormatName(OutputFormat format);

class OutputFlags {
 public:
  // Adds `-o, --output table|wide|json|csv` and the alias switches: --json
  // always, --csv when `csv_switch` (the commands that had it). A format
  // not in the list, or an alias that says otherwise than --output, is a
  // parse error naming the flag.
  void Register(FlagSet* flags, bool csv_switch = false);

  // The format asked for (table when none); valid after a clean Parse.
  OutputFormat format() const;

  // Whether the format is for people (table or wide).
  bool is_text() const {
    return format() == OutputFormat::kTable || format() == OutputFormat::kWide;
  }

  // The width a table must fit: kTableWidth for table, 0 (none) for wide.
  size_t table_width() const;

 private:
  std::optional<std::string> output_;
  bool json_ = false;
  bool csv_ = false;
};

// One CSV field, quoted when it holds a comma, a quote or a line break
// (its quotes doubled).
std::string CsvField(absl::string_view text);

// The fields as one CSV line, ending in "\n" (as Unix tools expect, not
// RFC 4180's CRLF).
std::string CsvLine(const std::vector<std::string>& fields);

// The shortest text that reads back as `value` ("0.1", "51234.5",
// "1e+12"); "" when there is none.
std::string CsvNumber(std::optional<double> value);

}  // namespace tessera::cli
