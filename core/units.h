// Units the code counts in: bytes per GiB (memory is in bytes everywhere;
// GiB only where a person reads or writes it).
//
//   const double gib = bytes / kGiB;
#pragma once

namespace tessera {

// Bytes in a gibibyte, 2^30.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace tessera
