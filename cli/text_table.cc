#include "cli/text_table.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::cli {
namespace {

// Whether `c` continues a UTF-8 sequence (10xxxxxx).
bool IsContinuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

size_t DisplayWidth(absl::string_view text) {
  return static_cast<size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return !IsContinuation(c); }));
}

std::string Truncate(absl::string_view text, size_t max_width) {
  std::string flat(text);
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  std::replace(flat.begin(), flat.end(), '\r', ' ');
  if (DisplayWidth(flat) <= max_width) return flat;
  if (max_width == 0) return "";
  // Keep max_width - 1 characters, then the ellipsis.
  size_t kept = 0;
  size_t end = 0;
  while (end < flat.size()) {
    if (!IsContinuation(flat[end])) {
      if (kept == max_width - 1) break;
      ++kept;
    }
    ++end;
  }
  return absl::StrCat(flat.substr(0, end), "…");
}

TableColumn TableColumn::Drop(int rank) const {
  TableColumn c = *this;
  c.drop_rank = rank;
  return c;
}

TableColumn TableColumn::Cut(size_t width) const {
  TableColumn c = *this;
  c.min_width = width;
  return c;
}

TableColumn TableColumn::Wrap(size_t width) const {
  TableColumn c = *this;
  c.min_width = width;
  c.wrap = true;
  return c;
}

std::vector<std::string> WrapText(absl::string_view text, size_t width) {
  // The pieces: each ends after a comma or a space.
  std::vector<std::string> pieces;
  std::string piece;
  for (char ch : text) {
    piece += ch;
    if (ch == ',' || ch == ' ') {
      pieces.push_back(std::move(piece));
      piece.clear();
    }
  }
  if (!piece.empty()) pieces.push_back(std::move(piece));
  std::vector<std::string> lines;
  std::string line;
  for (std::string& p : pieces) {
    if (!line.empty() && DisplayWidth(line) + DisplayWidth(p) > width) {
      // A trailing space is not worth keeping at a break.
      if (line.back() == ' ') line.pop_back();
      lines.push_back(std::move(line));
      line.clear();
    }
    line += p;
  }
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

TableColumn TableColumn::Short(std::string title_) const {
  TableColumn c = *this;
  c.short_title = std::move(title_);
  return c;
}

TextTable::TextTable(std::vector<TableColumn> columns)
    : columns_(std::move(columns)) {}

std::string PrintableCell(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += '?';  // a C1 control (U+0080..U+009F), e.g. U+009B (CSI)
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::string& cell : cells) cell = PrintableCell(cell);
  rows_.push_back(std::move(cells));
}

TextTable::Fitting TextTable::Fit(size_t max_width) const {
  const size_t n = columns_.size();
  // Each column's natural width over `titles` and the cells.
  std::vector<std::string> titles;
  for (const TableColumn& c : columns_) titles.push_back(c.title);
  auto natural = [&](size_t c) {
    size_t w = DisplayWidth(titles[c]);
    for (const std::vector<std::string>& row : rows_) {
      w = std::max(w, DisplayWidth(row[c]));
    }
    return w;
  };
  // How narrow a column may go: a cut one to its min_width, a wrapped one
  // also no narrower than its longest unbreakable piece.
  std::vector<size_t> floors(n, 0);
  for (size_t c = 0; c < n; ++c) {
    floors[c] = columns_[c].min_width;
    if (!columns_[c].wrap) continue;
    for (const std::vector<std::string>& row : rows_) {
      for (const std::string& line : WrapText(row[c], 1)) {
        floors[c] = std::max(floors[c], DisplayWidth(line));
      }
    }
  }
  std::vector<bool> shown(n, true);
  std::vector<size_t> widths(n);
  for (size_t c = 0; c < n; ++c) widths[c] = natural(c);
  auto total = [&] {
    size_t sum = 0, count = 0;
    for (size_t c = 0; c < n; ++c) {
      if (!shown[c]) continue;
      sum += widths[c];
      ++count;
    }
    return sum + (count > 0 ? 2 * (count - 1) : 0);
  };
  if (max_width > 0 && total() > max_width) {
    for (size_t c = 0; c < n; ++c) {
      if (!columns_[c].short_title.empty()) {
        titles[c] = columns_[c].short_title;
      }
      widths[c] = natural(c);
    }
  }
  while (max_width > 0 && total() > max_width) {
    // What cutting can save: each cuttable column down to its minimum.
    size_t excess = total() - max_width, can_cut = 0;
    for (size_t c = 0; c < n; ++c) {
      const size_t floor = floors[c];
      if (shown[c] && floor > 0 && widths[c] > floor) {
        can_cut += widths[c] - floor;
      }
    }
    // The next column to drop: the lowest drop_rank, the rightmost first.
    size_t drop = n;
    for (size_t c = 0; c < n; ++c) {
      const int rank = columns_[c].drop_rank;
      if (shown[c] && rank > 0 &&
          (drop == n || rank <= columns_[drop].drop_rank)) {
        drop = c;
      }
    }
    if (can_cut >= excess || drop == n) {
      // Cut the widest cuttable column by one, until it fits.
      while (excess > 0) {
        size_t widest = n;
        for (size_t c = 0; c < n; ++c) {
          if (shown[c] && floors[c] > 0 && widths[c] > floors[c] &&
              (widest == n || widths[c] > widths[widest])) {
            widest = c;
          }
        }
        if (widest == n) break;
        --widths[widest];
        --excess;
      }
      break;
    }
    shown[drop] = false;
    for (size_t c = 0; c < n; ++c) widths[c] = natural(c);
  }
  return Fitting{std::move(shown), std::move(widths), std::move(titles)};
}

std::vector<bool> TextTable::ShownColumns(size_t max_width) const {
  return Fit(max_width).shown;
}

void TextTable::Print(std::ostream& out, size_t max_width) const {
  const size_t n = columns_.size();
  const Fitting fit = Fit(max_width);
  const std::vector<bool>& shown = fit.shown;
  const std::vector<size_t>& widths = fit.widths;
  auto print_row = [&](const std::vector<std::string>& cells) {
    // Each shown cell as its lines: one, or a wrapped cell's several.
    std::vector<std::vector<std::string>> lines(n);
    size_t height = 1;
    for (size_t c = 0; c < n; ++c) {
      if (!shown[c]) continue;
      if (columns_[c].wrap && DisplayWidth(cells[c]) > widths[c]) {
        lines[c] = WrapText(cells[c], widths[c]);
      } else {
        lines[c] = {Truncate(cells[c], widths[c])};
      }
      height = std::max(height, lines[c].size());
    }
    for (size_t i = 0; i < height; ++i) {
      std::string line;
      bool first = true;
      for (size_t c = 0; c < n; ++c) {
        if (!shown[c]) continue;
        const std::string cell = i < lines[c].size() ? lines[c][i] : "";
        const size_t used = DisplayWidth(cell);
        const std::string pad(widths[c] > used ? widths[c] - used : 0, ' ');
        if (!first) line += "  ";
        first = false;
        if (columns_[c].align == kRight) {
          absl::StrAppend(&line, pad, cell);
        } else {
          absl::StrAppend(&line, cell, pad);
        }
      }
      line.erase(line.find_last_not_of(' ') + 1);
      out << line << "\n";
    }
  };
  print_row(fit.titles);
  for (const std::vector<std::string>& row : rows_) print_row(row);
}

std::string Readable(double value) {
  if (value == 0) return "0";
  if (std::abs(value) >= 100) return absl::StrFormat("%.0f", value);
  return absl::StrFormat("%.3g", value);
}

std::string ReadableBytesIn(double bytes, double column_max_bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double scale = 1;
  while (std::abs(column_max_bytes) >= 1024 * scale && unit < 4) {
    scale *= 1024;
    ++unit;
  }
  return absl::StrCat(Readable(bytes / scale), " ", kUnits[unit]);
}

std::string ReadableEnergyMwh(double mwh) {
  const double a = std::abs(mwh);
  if (a >= 1 || a == 0) return absl::StrCat(Readable(mwh), " MWh");
  if (a >= 1e-3) return absl::StrCat(Readable(mwh * 1e3), " kWh");
  return absl::StrCat(Readable(mwh * 1e6), " Wh");
}

std::string CountOf(int64_t count, absl::string_view singular,
                    absl::string_view plural) {
  return absl::StrCat(count, " ", count == 1 ? singular : plural);
}

std::string ReadableBytes(double bytes) {
  return ReadableBytesIn(bytes, bytes);
}

}  // namespace tessera::cli
