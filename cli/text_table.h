// Tables as the commands print them for people: aligned columns (widths
// counted in characters, so "—" and other UTF-8 text line up) that fit a
// width by abbreviating titles, wrapping what must be read whole (layouts,
// onto continuation lines at commas), cutting other long text and dropping
// the least important columns, or every column in full (-o wide). CSV is
// cli/output_format.h's.
//
//   TextTable table({{"id", kRight}, {"state"},
//                    TableColumn("reason").Drop(1).Cut(12)});
//   table.AddRow({"12", "ok", ""});
//   table.Print(std::cout);          // "id  state  reason\n12  ok\n"
//   table.Print(std::cout, kTableWidth);  // at most 100 characters a line
#pragma once

#include <cstddef>
#include <cstdint>
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
  // Like Cut, but a cell wider than the column is broken after its commas
  // (or spaces) onto continuation lines, never cut: the column is no
  // narrower than `width` nor than the longest unbreakable piece.
  TableColumn Wrap(size_t width) const;
  TableColumn Short(std::string title) const;

  std::string title;
  Align align = kLeft;
  // 0: always shown; else dropped when the table does not fit, 1 first.
  int drop_rank = 0;
  // > 0: cells (and the title) may be cut to this many characters ("…")
  // before any column is dropped (wrapped instead when `wrap`).
  size_t min_width = 0;
  bool wrap = false;
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
  // cuttable and wrapping columns narrowed (the widest first, down to their
  // minimum), then columns dropped by drop_rank, until every line fits (or
  // only columns that are always shown remain, at their minimum). A wrapped
  // cell continues on the next lines, the row's other cells blank there.
  void Print(std::ostream& out, size_t max_width = 0) const;

  // Which columns Print(out, max_width) shows.
  std::vector<bool> ShownColumns(size_t max_width) const;

 private:
  // What Print shows of each column: whether, how wide, under which title.
  struct Fitting {
    std::vector<bool> shown;
    std::vector<size_t> widths;
    std::vector<std::string> titles;
  };
  Fitting Fit(size_t max_width) const;

  std::vector<TableColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` safe to print on a terminal: line breaks and tabs as spaces, other
// control characters (C0, DEL, C1: what starts an escape sequence) as "?".
// TextTable::AddRow applies it to every cell, so that a study name or a
// crashed trial's reason cannot move the cursor or recolour the terminal.
std::string PrintableCell(absl::string_view text);

// `text` in lines of at most `width` characters, broken after a comma or a
// space; a piece longer than `width` with no break in it is one line of
// its own, whole.
std::vector<std::string> WrapText(absl::string_view text, size_t width);

// Characters (UTF-8 code points) in `text`.
size_t DisplayWidth(absl::string_view text);

// `text` cut to at most `max_width` characters, the last one "…" when cut;
// line breaks become spaces.
std::string Truncate(absl::string_view text, size_t max_width);

// A number for people: three significant digits ("0.41", "12.3",
// "0.000123"), whole from 100 up ("12345", not "1.23e+04"); "0" for zero.
std::string Readable(double value);

// An energy for people in MWh, kWh or Wh, whichever keeps it at 1 or more
// (Readable's digits): "12.3 MWh", "459 kWh", "0.5 Wh".
std::string ReadableEnergyMwh(double mwh);

// "1 node", "2 nodes": `count` and the noun, plural unless 1.
std::string CountOf(int64_t count, absl::string_view singular,
                    absl::string_view plural);

// A byte count for people, in the largest binary unit that keeps it at 1 or
// more: "512 B", "3.5 MiB", "78.1 GiB" (Readable's digits).
std::string ReadableBytes(double bytes);

// `bytes` in the unit ReadableBytes picks for `column_max_bytes` (a table's
// largest value), so that one column has one unit: ReadableBytesIn(512 *
// 1024, 3.0 * (1 << 30)) is "0.000488 GiB".
std::string ReadableBytesIn(double bytes, double column_max_bytes);

}  // namespace tessera::cli
