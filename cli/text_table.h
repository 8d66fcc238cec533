// Tables as the service commands print them: aligned columns for people
// (widths counted in characters, so "—" and other UTF-8 text line up), or
// CSV for spreadsheets and scripts (RFC 4180's quoting: a field with a
// comma, a quote or a line break is quoted, its quotes doubled; lines end in
// "\n" as Unix tools expect, not RFC 4180's CRLF).
//
//   TextTable table({{"id", kRight}, {"state", kLeft}});
//   table.AddRow({"12", "ok"});
//   table.Print(std::cout);          // "id  state\n12  ok\n"
//   std::cout << CsvLine({"a,b", "say \"hi\""});  // "\"a,b\",\"say
//                                                  // \"\"hi\"\"\"\n"
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::cli {

enum Align { kLeft, kRight };

struct TableColumn {
  std::string title;
  Align align = kLeft;
};

class TextTable {
 public:
  explicit TextTable(std::vector<TableColumn> columns);

  // A row of one cell per column (missing cells are empty, extra ones
  // dropped).
  void AddRow(std::vector<std::string> cells);

  size_t rows() const { return rows_.size(); }

  // The header and the rows, columns two spaces apart, each as wide as its
  // widest cell; no trailing spaces.
  void Print(std::ostream& out) const;

 private:
  std::vector<TableColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Characters (UTF-8 code points) in `text`.
size_t DisplayWidth(absl::string_view text);

// `text` cut to at most `max_width` characters, the last one "…" when cut;
// line breaks become spaces.
std::string Truncate(absl::string_view text, size_t max_width);

// A number for people: three significant digits ("0.41", "12.3",
// "0.000123"), whole from 100 up ("12345", not "1.23e+04"); "0" for zero.
std::string Readable(double value);

// A byte count for people, in the largest binary unit that keeps it at 1 or
// more: "512 B", "3.5 MiB", "78.1 GiB" (Readable's digits).
std::string ReadableBytes(double bytes);

// One CSV field, quoted when it holds a comma, a quote or a line break.
std::string CsvField(absl::string_view text);

// The fields as one CSV line, ending in "\n".
std::string CsvLine(const std::vector<std::string>& fields);

}  // namespace tessera::cli
