// A damaged write-ahead log, found before SQLite replays it (issue 15,
// "Integrity"). SQLite, opening a database after a crash, replays the WAL's
// frames up to the first one whose checksum fails and silently drops the
// rest; a flipped bit in the middle of the log so rolls back transactions
// that were committed (the review lost two finished trials that way).
// A torn tail is normal (the transaction being written when the process
// died was never committed); a COMMITTED frame after the first bad one is
// not: that is what this check refuses.
//
// The format (sqlite.org/fileformat2.html#walformat): a 32-byte header
// (magic 0x377f0682/3 choosing little- or big-endian checksums, page size,
// two salts, a checksum of its first 24 bytes), then frames of a 24-byte
// header (page number, database size in pages for a commit frame else 0,
// the two salts, a cumulative checksum over the frame header's first 8
// bytes and the page) and a page. A frame belongs to the current log when
// its salts equal the header's; stale frames of an earlier log (different
// salts) may follow and are not damage.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace tessera::db {

// OK when `db_path`-wal is absent, empty, or replays every committed
// transaction it holds. DATA_LOSS naming the file and the frame otherwise:
// "store.path: <db>-wal is damaged: frame 3 of 7 fails its checksum and
// 2 committed transaction(s) after it would be dropped ...". The header
// itself damaged (bad magic or checksum) while frames follow: DATA_LOSS.
absl::Status CheckWriteAheadLog(const std::string& db_path);

}  // namespace tessera::db
