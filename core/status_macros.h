// Early-return helpers for absl::Status / absl::StatusOr, which Debian's Abseil
// (20220623) does not ship.
//
//   TESSERA_RETURN_IF_ERROR(store.Open(path));
//   TESSERA_ASSIGN_OR_RETURN(Layout layout, ParseLayout(text));
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TESSERA_STATUS_CONCAT_INNER(a, b) a##b
#define TESSERA_STATUS_CONCAT(a, b) TESSERA_STATUS_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define TESSERA_RETURN_IF_ERROR(expr) \
  TESSERA_RETURN_IF_ERROR_IMPL(       \
      TESSERA_STATUS_CONCAT(tessera_status_, __COUNTER__), expr)
// A unique name per use, so that nested uses (in a lambda inside another's
// expression) do not shadow each other.
#define TESSERA_RETURN_IF_ERROR_IMPL(name, expr) \
  do {                                           \
    const ::absl::Status name = (expr);          \
    if (!name.ok()) return name;                 \
  } while (false)

// Evaluates `rexpr` (a StatusOr); returns its status when not OK, else moves
// its value into `lhs` (which may be a declaration).
#define TESSERA_ASSIGN_OR_RETURN(lhs, rexpr) \
  TESSERA_ASSIGN_OR_RETURN_IMPL(             \
      TESSERA_STATUS_CONCAT(tessera_or_, __COUNTER__), lhs, rexpr)
#define TESSERA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
