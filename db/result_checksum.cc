#include "db/result_checksum.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace tessera::db {
namespace {

enum class Kind { kText, kInt, kReal };

// What a result is: the trial's identity, state and every result column.
constexpr struct {
  const char* name;
  Kind kind;
} kColumns[] = {
    {"id", Kind::kInt},
    {"study_id", Kind::kInt},
    {"layout_json", Kind::kText},
    {"status", Kind::kText},
    {"reason", Kind::kText},
    {"reported_by", Kind::kText},
    {"result_json", Kind::kText},
    {"backend", Kind::kText},
    {"device", Kind::kText},
    {"ranks", Kind::kInt},
    {"measured_steps", Kind::kInt},
    {"step_time_s", Kind::kReal},
    {"step_time_p10_s", Kind::kReal},
    {"step_time_p90_s", Kind::kReal},
    {"tokens_per_s", Kind::kReal},
    {"tokens_per_s_per_gpu", Kind::kReal},
    {"tflops_per_gpu", Kind::kReal},
    {"mfu", Kind::kReal},
    {"peak_memory_bytes", Kind::kInt},
    {"compute_s", Kind::kReal},
    {"comm_s", Kind::kReal},
    {"exposed_comm_s", Kind::kReal},
    {"watts_per_gpu", Kind::kReal},
    {"tokens_per_joule", Kind::kReal},
};
constexpr int kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

// "SELECT <columns>, result_checksum FROM trials".
std::string SelectResults() {
  std::string sql = "SELECT ";
  for (const auto& c : kColumns) absl::StrAppend(&sql, c.name, ", ");
  absl::StrAppend(&sql, "result_checksum FROM trials");
  return sql;
}

void Mix(uint64_t& h, absl::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;  // FNV-1a 64-bit prime
  }
}

// The checksum of the row `row` is on (columns in kColumns' order).
std::string Checksum(const Statement& row) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis
  for (int i = 0; i < kColumnCount; ++i) {
    if (row.ColumnIsNull(i)) {
      Mix(h, "N");
    } else if (kColumns[i].kind == Kind::kText) {
      const std::string text = row.ColumnText(i);
      Mix(h, absl::StrCat("T", text.size(), ":"));
      Mix(h, text);
    } else if (kColumns[i].kind == Kind::kInt) {
      Mix(h, absl::StrCat("I", row.ColumnInt(i)));
    } else {
      Mix(h, absl::StrFormat("R%.17g", row.ColumnDouble(i)));
    }
    Mix(h, "|");
  }
  return absl::StrFormat("fnv1a64:%016x", h);
}

}  // namespace

absl::Status SealResult(Database& db, int64_t trial_id) {
  std::optional<std::string> sum;
  {
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare(absl::StrCat(SelectResults(),
                                " WHERE id = ? AND result_json IS NOT NULL")));
    select.BindInt(1, trial_id);
    TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (row) sum = Checksum(select);
  }
  TESSERA_ASSIGN_OR_RETURN(
      Statement update,
      db.Prepare("UPDATE trials SET result_checksum = ? WHERE id = ?"));
  if (sum.has_value()) {
    update.BindText(1, *sum);
  } else {
    update.BindNull(1);
  }
  update.BindInt(2, trial_id);
  return update.Run();
}

absl::Status CheckResultChecksums(Database& db, absl::string_view path,
                                  bool seal_unsealed) {
  std::vector<int64_t> unsealed;
  {
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare(absl::StrCat(SelectResults(),
                                " WHERE result_json IS NOT NULL ORDER BY id")));
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) break;
      const std::optional<std::string> stored =
          select.ColumnOptionalText(kColumnCount);
      if (!stored.has_value()) {
        unsealed.push_back(select.ColumnInt(0));
        continue;
      }
      if (*stored != Checksum(select)) {
        return absl::DataLossError(absl::StrCat(
            "store.path: ", path, ": the stored result of trial ",
            select.ColumnInt(0),
            " does not match its checksum (changed outside the planner); "
            "nothing was served from it. Restore a backup (tessera-planner "
            "--backup)"));
      }
    }
  }
  if (!seal_unsealed || unsealed.empty()) return absl::OkStatus();
  return RunInTransaction(db, TransactionMode::kImmediate,
                          [&](Database& tx) -> absl::Status {
                            for (int64_t id : unsealed) {
                              TESSERA_RETURN_IF_ERROR(SealResult(tx, id));
                            }
                            return absl::OkStatus();
                          });
}

}  // namespace tessera::db
