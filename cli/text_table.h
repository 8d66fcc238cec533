// Tables as the commands print them for people: aligned columns (widths
// counted in characters, so "—" and other UTF-8 text line up) that fit a
// width by abbreviating titles, cutting long text and dropping the least
// important columns, or every column in full (-o wide). CSV is
// cli/output_format.h's.
//
//   TextTable table({{"id", kRight}, {"state"},
//                    TableColumn("reason").Drop(1).Cut(12)});
//   table.AddRow({"12", "ok", ""});
//   table.Print(std::cout);          // "id  state  reason\n12  ok\n"
//   table.Print(std::cout, kTableWidth);  // at most 100 characters a line
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::cli {

enum Align { kLeft, kRight };

// The width `tessera` tables fit by default (-o table).
inline constexpr size_t kTableWidth = 100;

struct TableColumn {
  TableColumn(std::string title_, Align align_ = kLeft)
      : title(std::move(title_)), align(align_) {}

  // The column with drop_rank, min_width or short_title set.
  TableColumn Drop(int rank) const;
  TableColumn Cut(size_t width) const;
  TableColumn Short(std::string title) const;

  std::string title;
  Align align = kLeft;
  // 0: always shown; else dropped when the table does not fit, 1 first.
  int drop_rank = 0;
  // > 0: cells (and the title) may be cut to this many characters ("…")
  // before any column is dropped.
  size_t min_width = 0;
  // A shorter title for a table that does not fit ("": the title).
  std::string short_title;
};

class TextTable {
 public:
  explicit TextTable(std::vector<TableColumn> columns);

  // A row of one cell per column (missing cells are empty, extra ones
  // dropped).
  void AddRow(std::vector<std::string> cells);

  size_t rows() const { return rows_.size(); }

  // The header and the rows, columns two spaces apart, each as wide as its
  // widest cell; no trailing spaces; line breaks in cells as spaces. With
  // `max_width` > 0 and lines longer than that: short titles, then the
  // cuttable columns cut (the widest first, down to their min_width), then
  // columns dropped by drop_rank, until every line fits (or only columns
  // that are always shown remain, cut to their minimum).
  void Print(std::ostream& out, size_t max_width = 0) const;

 private:
  std::vector<TableColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` safe to print on a terminal: line breaks and tabs as spaces, other
// control characters (C0, DEL, C1: what starts an escape sequence) as "?".
// TextTable::AddRow applies it to every cell, so that a study name or a
// crashed trial's reason cannot move the cursor or recolour the terminal.
std::string PrintableCell(absl::string_view text);

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

// `bytes` in the unit ReadableBytes picks for `column_max_bytes` (a table's
// largest value), so that one column has one unit: ReadableBytesIn(512 *
// 1024, 3.0 * (1 << 30)) is "0.000488 GiB".
std::string ReadableBytesIn(double bytes, double column_max_bytes);

}  // namespace tessera::cli
