#include "db/wal_check.h"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tessera::db {
namespace {

constexpr size_t kHeaderBytes = 32;
constexpr size_t kFrameHeaderBytes = 24;

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// SQLite's WAL checksum over `n` bytes (a multiple of 8), continuing from
// s[0], s[1]; words read big-endian or little-endian as the magic says.
void Checksum(const unsigned char* data, size_t n, bool big_endian,
              uint32_t s[2]) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const unsigned char* p = data + i;
    const uint32_t x0 = big_endian
                            ? BigEndian32(p)
                            : (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) |
                                  (uint32_t{p[1]} << 8) | uint32_t{p[0]};
    const uint32_t x1 = big_endian
                            ? BigEndian32(p + 4)
                            : (uint32_t{p[7]} << 24) | (uint32_t{p[6]} << 16) |
                                  (uint32_t{p[5]} << 8) | uint32_t{p[4]};
    s[0] += x0 + s[1];
    s[1] += x1 + s[0];
  }
}

absl::Status Damaged(const std::string& wal, const std::string& why) {
  return absl::DataLossError(absl::StrCat(
      "store.path: ", wal, " is damaged: ", why,
      "; nothing was served from it. Restore a backup (tessera-planner "
      "--backup), or move the -wal file aside to accept losing those "
      "transactions"));
}

}  // namespace

absl::Status CheckWriteAheadLog(const std::string& db_path) {
  const std::string wal = db_path + "-wal";
  std::ifstream in(wal, std::ios::binary);
  if (!in) return absl::OkStatus();  // no log: nothing to replay
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderBytes) return absl::OkStatus();
  const unsigned char* h = bytes.data();
  const uint32_t magic = BigEndian32(h);
  const uint32_t page_bytes = BigEndian32(h + 8);
  const bool frames_follow = bytes.size() > kHeaderBytes;
  if (magic != 0x377f0682 && magic != 0x377f0683) {
    return frames_follow ? Damaged(wal, "its header has no WAL magic number")
                         : absl::OkStatus();
  }
  if (page_bytes < 512 || page_bytes > 65536 ||
      (page_bytes & (page_bytes - 1)) != 0) {
    return Damaged(wal, absl::StrCat("its header names a page size of ",
                                     page_bytes, " bytes"));
  }
  const bool big_endian = (magic & 1) != 0;
  uint32_t s[2] = {0, 0};
  Checksum(h, 24, big_endian, s);
  if (s[0] != BigEndian32(h + 24) || s[1] != BigEndian32(h + 28)) {
    // SQLite then ignores the whole log: every frame in it is dropped.
    return frames_follow ? Damaged(wal, "its header fails its checksum")
                         : absl::OkStatus();
  }
  const uint32_t salt1 = BigEndian32(h + 16);
  const uint32_t salt2 = BigEndian32(h + 20);
  const size_t frame_bytes = kFrameHeaderBytes + page_bytes;
  const size_t frames = (bytes.size() - kHeaderBytes) / frame_bytes;

  // Replay as SQLite does, up to the first frame that breaks the chain.
  size_t first_bad = frames;  // none
  for (size_t i = 0; i < frames; ++i) {
    const unsigned char* f = h + kHeaderBytes + i * frame_bytes;
    if (BigEndian32(f + 8) != salt1 || BigEndian32(f + 12) != salt2) {
      first_bad = i;
      break;
    }
    Checksum(f, 8, big_endian, s);
    Checksum(f + kFrameHeaderBytes, page_bytes, big_endian, s);
    if (s[0] != BigEndian32(f + 16) || s[1] != BigEndian32(f + 20)) {
      first_bad = i;
      break;
    }
  }
  if (first_bad == frames) return absl::OkStatus();
  // After it: commit frames of this log (its salts) would be dropped.
  int64_t lost_commits = 0;
  for (size_t i = first_bad + 1; i < frames; ++i) {
    const unsigned char* f = h + kHeaderBytes + i * frame_bytes;
    if (BigEndian32(f + 8) == salt1 && BigEndian32(f + 12) == salt2 &&
        BigEndian32(f + 4) != 0) {
      ++lost_commits;
    }
  }
  if (lost_commits == 0) return absl::OkStatus();  // a torn tail, or stale
  return Damaged(wal, absl::StrCat("frame ", first_bad + 1, " of ", frames,
                                   " fails its checksum and ", lost_commits,
                                   " committed transaction(s) after it would "
                                   "be dropped"));
}

}  // namespace tessera::db
