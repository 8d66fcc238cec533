#include "core/layout_json.h"

#include "absl/strings/str_cat.h"

namespace tessera {

nlohmann::json LayoutToJson(const Layout& l) {
  return nlohmann::json{{"tp", l.tp},
                        {"sp", l.sp},
                        {"pp", l.pp},
                        {"vpp", l.vpp},
                        {"cp", l.cp},
                        {"dp", l.dp},
                        {"zero", l.zero},
                        {"shard_group", l.shard_group},
                        {"micro_batch", l.micro_batch},
                        {"grad_accum", l.grad_accum},
                        {"recompute", std::string(RecomputeName(l.recompute))}};
}

absl::StatusOr<Layout> LayoutFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return absl::InvalidArgumentError("layout: expected a JSON object");
  }
  Layout l;
  for (const auto& [key, value] : json.items()) {
    if (key == "sp") {
      if (!value.is_boolean()) {
        return absl::InvalidArgumentError("layout.sp: expected true or false");
      }
      l.sp = value.get<bool>();
      continue;
    }
    if (key == "recompute") {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            "layout.recompute: expected a string");
      }
      absl::StatusOr<Recompute> r = ParseRecompute(value.get<std::string>());
      if (!r.ok()) return r.status();
      l.recompute = *r;
      continue;
    }
    int64_t* field = nullptr;
    if (key == "tp") field = &l.tp;
    if (key == "pp") field = &l.pp;
    if (key == "vpp") field = &l.vpp;
    if (key == "cp") field = &l.cp;
    if (key == "dp") field = &l.dp;
    if (key == "zero") field = &l.zero;
    if (key == "shard_group") field = &l.shard_group;
    if (key == "micro_batch") field = &l.micro_batch;
    if (key == "grad_accum") field = &l.grad_accum;
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout: unknown field '", key, "'"));
    }
    // dp, shard_group and grad_accum may be 0 (derive); degrees are >= 1.
    const bool derived =
        key == "dp" || key == "shard_group" || key == "grad_accum";
    const int64_t min_value = (derived || key == "zero") ? 0 : 1;
    const int64_t max_value = key == "zero" ? 3 : (int64_t{1} << 20);
    if (!value.is_number_integer() || value.get<int64_t>() < min_value ||
        value.get<int64_t>() > max_value) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout.", key, ": expected an integer in [", min_value,
                       ", ", max_value, "], got ", value.dump()));
    }
    *field = value.get<int64_t>();
  }
  return l;
}

}  // namespace tessera
