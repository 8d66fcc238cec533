#include "cli/text_table.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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

TextTable::TextTable(std::vector<TableColumn> columns)
    : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::Print(std::ostream& out) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = DisplayWidth(columns_[c].title);
    for (const std::vector<std::string>& row : rows_) {
      widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    }
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string pad(widths[c] - DisplayWidth(cells[c]), ' ');
      if (c > 0) line += "  ";
      if (columns_[c].align == kRight) {
        absl::StrAppend(&line, pad, cells[c]);
      } else {
        absl::StrAppend(&line, cells[c], pad);
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  };
  std::vector<std::string> header;
  for (const TableColumn& column : columns_) header.push_back(column.title);
  print_row(header);
  for (const std::vector<std::string>& row : rows_) print_row(row);
}

std::string Readable(double value) {
  if (value == 0) return "0";
  if (std::abs(value) >= 100) return absl::StrFormat("%.0f", value);
  return absl::StrFormat("%.3g", value);
}

std::string ReadableBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::abs(bytes) >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return absl::StrCat(Readable(bytes), " ", kUnits[unit]);
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

}  // namespace tessera::cli
