#include "executor/comm/internal/tcp_rendezvous.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/comm/internal/tcp_wire.h"

namespace tessera::executor::tcp_internal {
namespace {

constexpr uint32_t kMaxFrameBytes = 1 << 20;
constexpr auto kRetryPause = std::chrono::milliseconds(10);

// Little-endian fields of a handshake frame.
class ByteWriter {
 public:
  ByteWriter& U32(uint32_t v) { return Raw(&v, sizeof(v)); }
  ByteWriter& I32(int32_t v) { return Raw(&v, sizeof(v)); }
  ByteWriter& U64(uint64_t v) { return Raw(&v, sizeof(v)); }
  ByteWriter& Str(absl::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  ByteWriter& Raw(const void* p, size_t n) {
    out_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string out_;
};

// Reads what ByteWriter wrote; ok() turns false on a short frame.
class ByteReader {
 public:
  explicit ByteReader(absl::string_view in) : in_(in) {}
  uint32_t U32() { return Fixed<uint32_t>(); }
  int32_t I32() { return Fixed<int32_t>(); }
  uint64_t U64() { return Fixed<uint64_t>(); }
  std::string Str() {
    const uint32_t n = U32();
    if (!ok_ || n > in_.size()) {
      ok_ = false;
      return "";
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  bool ok() const { return ok_; }

 private:
  template <typename T>
  T Fixed() {
    T v{};
    if (in_.size() < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return v;
  }
  absl::string_view in_;
  bool ok_ = true;
};

absl::Status WriteFrame(int fd, const std::string& body,
                        const Deadline& deadline) {
  const uint32_t size = static_cast<uint32_t>(body.size());
  const ByteRange ranges[] = {{&size, sizeof(size)}, {body.data(), size}};
  return WriteAll(fd, ranges, deadline);
}

absl::StatusOr<std::string> ReadFrame(int fd, const Deadline& deadline) {
  uint32_t size = 0;
  TESSERA_RETURN_IF_ERROR(ReadAllBefore(fd, &size, sizeof(size), deadline));
  if (size > kMaxFrameBytes) {
    return absl::DataLossError(absl::StrCat("handshake frame of ", size,
                                            " bytes (not a Tessera peer?)"));
  }
  std::string body(size, '\0');
  TESSERA_RETURN_IF_ERROR(ReadAllBefore(fd, body.data(), size, deadline));
  return body;
}

// What rank r > 0 tells rank 0.
struct Hello {
  int32_t rank = 0;
  int32_t world_size = 0;
  HostPort address;  // where rank r listens
};

std::string EncodeHello(const Hello& h) {
  ByteWriter w;
  w.U32(kWireMagic).U32(kWireVersion).I32(h.rank).I32(h.world_size);
  w.Str(h.address.host).I32(h.address.port);
  return w.bytes();
}

// NOT_FOUND when the frame is not a Tessera hello at all (a stray client).
absl::StatusOr<Hello> DecodeHello(absl::string_view frame) {
  ByteReader r(frame);
  if (r.U32() != kWireMagic) return absl::NotFoundError("not a hello");
  const uint32_t version = r.U32();
  Hello h;
  h.rank = r.I32();
  h.world_size = r.I32();
  h.address.host = r.Str();
  h.address.port = r.I32();
  if (!r.ok()) return absl::NotFoundError("short hello");
  if (version != kWireVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", h.rank, " speaks wire version ", version,
                     ", rank 0 speaks ", kWireVersion));
  }
  return h;
}

// Rank 0's answer: the nonce and every rank's address, or an error.
std::string EncodeTable(uint64_t nonce, const std::vector<HostPort>& table) {
  ByteWriter w;
  w.U32(kWireMagic).U32(1).U64(nonce).U32(static_cast<uint32_t>(table.size()));
  for (const HostPort& a : table) w.Str(a.host).I32(a.port);
  return w.bytes();
}

std::string EncodeTableError(const absl::Status& error) {
  ByteWriter w;
  w.U32(kWireMagic).U32(0).U32(static_cast<uint32_t>(error.code()));
  w.Str(error.message());
  return w.bytes();
}

absl::Status DecodeTable(absl::string_view frame, int world_size,
                         uint64_t* nonce, std::vector<HostPort>* table) {
  ByteReader r(frame);
  const uint32_t magic = r.U32();
  const uint32_t ok = r.U32();
  if (!r.ok() || magic != kWireMagic) {
    return absl::DataLossError("rank 0 sent a malformed address table");
  }
  if (ok == 0) {
    const auto code = static_cast<absl::StatusCode>(r.U32());
    const std::string message = r.Str();
    return absl::Status(code, absl::StrCat("rank 0: ", message));
  }
  *nonce = r.U64();
  const uint32_t n = r.U32();
  if (!r.ok() || n != static_cast<uint32_t>(world_size)) {
    return absl::DataLossError("rank 0 sent a malformed address table");
  }
  table->resize(n);
  for (HostPort& a : *table) {
    a.host = r.Str();
    a.port = r.I32();
  }
  if (!r.ok()) return absl::DataLossError("rank 0 sent a short address table");
  return absl::OkStatus();
}

// What rank r tells a lower rank i > 0 it connects to.
std::string EncodeMeshHello(uint64_t nonce, int rank) {
  ByteWriter w;
  w.U32(kWireMagic).U32(kWireVersion).U64(nonce).I32(rank);
  return w.bytes();
}

std::string ReadWholeFile(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = in.good();
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Connects to rank 0 at the address in the rendezvous file, waiting for the
// file and retrying refused connections until the deadline.
absl::StatusOr<Socket> ConnectToRankZero(int rank, const MeshOptions& options) {
  std::string last = "the file did not appear";
  for (;;) {
    bool exists = false;
    const std::string content = ReadWholeFile(options.rendezvous_file, &exists);
    if (exists && !content.empty() && content.back() == '\n') {
      absl::StatusOr<HostPort> address = ParseHostPort(content);
      if (!address.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("rendezvous file ", options.rendezvous_file, ": ",
                         address.status().message()));
      }
      absl::StatusOr<Socket> s = Connect(*address, options.deadline);
      if (s.ok()) return s;
      last = std::string(s.status().message());
    }
    if (Expired(options.deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: rank ", rank,
                       " could not reach rank 0 "
                       "through the rendezvous file ",
                       options.rendezvous_file, " in time: ", last));
    }
    std::this_thread::sleep_for(kRetryPause);
  }
}

// Rank 0: accepts every other rank's hello, answers with the table.
absl::StatusOr<std::vector<Socket>> FormMeshAtRankZero(
    int world_size, const MeshOptions& options, const Socket& listener,
    HostPort self) {
  std::vector<Socket> peers(world_size);
  std::vector<HostPort> table(world_size);
  table[0] = std::move(self);
  // Fails the rendezvous, telling every rank that already said hello and
  // the one on `latest`, if any.
  auto fail = [&](absl::Status error, const Socket* latest = nullptr) {
    const std::string frame = EncodeTableError(error);
    for (Socket& s : peers) {
      if (s.valid()) {
        (void)WriteFrame(s.fd(), frame, DeadlineAfter(absl::Seconds(1)));
      }
    }
    if (latest != nullptr) {
      (void)WriteFrame(latest->fd(), frame, DeadlineAfter(absl::Seconds(1)));
    }
    return error;
  };
  int joined = 1;
  while (joined < world_size) {
    absl::StatusOr<Socket> s = Accept(listener, options.deadline);
    if (!s.ok()) {
      std::vector<int> missing;
      for (int r = 1; r < world_size; ++r) {
        if (!peers[r].valid()) missing.push_back(r);
      }
      return fail(absl::Status(
          s.status().code(),
          absl::StrCat("rendezvous: rank 0 (", FormatHostPort(table[0]),
                       ") was not reached by rank(s) ",
                       absl::StrJoin(missing, ", "), ": ",
                       s.status().message())));
    }
    absl::StatusOr<std::string> frame = ReadFrame(s->fd(), options.deadline);
    if (!frame.ok()) continue;  // a stray client: ignore it
    absl::StatusOr<Hello> hello = DecodeHello(*frame);
    if (hello.status().code() == absl::StatusCode::kNotFound) continue;
    if (!hello.ok()) {
      return fail(absl::InvalidArgumentError(
                      absl::StrCat("rendezvous: ", hello.status().message())),
                  &*s);
    }
    if (hello->world_size != world_size) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
                      "rendezvous: rank ", hello->rank, " has world_size ",
                      hello->world_size, " but rank 0 has ", world_size)),
                  &*s);
    }
    if (hello->rank < 1 || hello->rank >= world_size) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
                      "rendezvous: a process claims rank ", hello->rank,
                      " (world_size ", world_size, ")")),
                  &*s);
    }
    if (peers[hello->rank].valid()) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
                      "rendezvous: two processes claim rank ", hello->rank,
                      " (", FormatHostPort(table[hello->rank]), " and ",
                      FormatHostPort(hello->address), ")")),
                  &*s);
    }
    peers[hello->rank] = *std::move(s);
    table[hello->rank] = hello->address;
    ++joined;
  }
  std::random_device seed;
  const uint64_t nonce = (static_cast<uint64_t>(seed()) << 32) ^ seed() ^
                         static_cast<uint64_t>(::getpid());
  const std::string answer = EncodeTable(nonce, table);
  for (int r = 1; r < world_size; ++r) {
    absl::Status s = WriteFrame(peers[r].fd(), answer, options.deadline);
    if (!s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("rendezvous: sending the address table to rank ", r,
                       ": ", s.message()));
    }
  }
  // Everyone has connected: the file has served its purpose, and a later
  // world must not find this one's address.
  ::unlink(options.rendezvous_file.c_str());
  return peers;
}

// Rank r > 0: hello to rank 0, then the mesh among ranks 1..n-1.
absl::StatusOr<std::vector<Socket>> FormMeshAtRank(int rank, int world_size,
                                                   const MeshOptions& options,
                                                   const Socket& listener,
                                                   HostPort self) {
  std::vector<Socket> peers(world_size);
  TESSERA_ASSIGN_OR_RETURN(peers[0], ConnectToRankZero(rank, options));
  auto broken = [&](absl::string_view step, const absl::Status& s) {
    return absl::Status(
        s.code() == absl::StatusCode::kDeadlineExceeded
            ? s.code()
            : absl::StatusCode::kUnavailable,
        absl::StrCat("rendezvous: rank ", rank, " ", step, ": ", s.message()));
  };
  absl::Status s = WriteFrame(peers[0].fd(),
                              EncodeHello({rank, world_size, std::move(self)}),
                              options.deadline);
  if (!s.ok()) return broken("saying hello to rank 0", s);
  absl::StatusOr<std::string> frame =
      ReadFrame(peers[0].fd(), options.deadline);
  if (!frame.ok()) {
    return broken("waiting for rank 0's address table", frame.status());
  }
  uint64_t nonce = 0;
  std::vector<HostPort> table;
  TESSERA_RETURN_IF_ERROR(DecodeTable(*frame, world_size, &nonce, &table));

  // Higher connects to lower...
  for (int i = 1; i < rank; ++i) {
    absl::StatusOr<Socket> c = Connect(table[i], options.deadline);
    while (!c.ok() && c.status().code() == absl::StatusCode::kUnavailable &&
           !Expired(options.deadline)) {
      std::this_thread::sleep_for(kRetryPause);
      c = Connect(table[i], options.deadline);
    }
    if (!c.ok())
      return broken(absl::StrCat("connecting to rank ", i), c.status());
    s = WriteFrame(c->fd(), EncodeMeshHello(nonce, rank), options.deadline);
    if (!s.ok()) return broken(absl::StrCat("greeting rank ", i), s);
    peers[i] = *std::move(c);
  }
  // ...and accepts every higher rank.
  int accepted = 0;
  while (accepted < world_size - 1 - rank) {
    absl::StatusOr<Socket> c = Accept(listener, options.deadline);
    if (!c.ok()) {
      std::vector<int> missing;
      for (int r = rank + 1; r < world_size; ++r) {
        if (!peers[r].valid()) missing.push_back(r);
      }
      return broken(absl::StrCat("waiting for rank(s) ",
                                 absl::StrJoin(missing, ", "), " to connect"),
                    c.status());
    }
    absl::StatusOr<std::string> hello = ReadFrame(c->fd(), options.deadline);
    if (!hello.ok()) continue;
    ByteReader r(*hello);
    const uint32_t magic = r.U32();
    const uint32_t version = r.U32();
    const uint64_t their_nonce = r.U64();
    const int32_t peer = r.I32();
    if (!r.ok() || magic != kWireMagic || version != kWireVersion ||
        their_nonce != nonce) {
      continue;  // not of this world
    }
    if (peer <= rank || peer >= world_size || peers[peer].valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous: rank ", rank, " was greeted by rank ", peer,
                       " twice or out of order"));
    }
    peers[peer] = *std::move(c);
    ++accepted;
  }
  return peers;
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content) {
  const std::string temp =
      absl::StrCat(path, ".tmp.", ::getpid(), ".",
                   std::hash<std::thread::id>()(std::this_thread::get_id()));
  auto failure = [&](absl::string_view what) {
    const int err = errno;
    ::unlink(temp.c_str());
    return absl::UnavailableError(absl::StrCat("rendezvous file ", path, ": ",
                                               what, ": ", std::strerror(err)));
  };
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return failure("create");
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return failure("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return failure("close");
  if (::rename(temp.c_str(), path.c_str()) != 0) return failure("rename");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Socket>> FormMesh(int rank, int world_size,
                                             const MeshOptions& options) {
  if (world_size == 1) return std::vector<Socket>(1);
  TESSERA_ASSIGN_OR_RETURN(
      Socket listener, Listen(options.bind_host, rank == 0 ? options.port : 0));
  TESSERA_ASSIGN_OR_RETURN(int port, LocalPort(listener));
  HostPort self{options.advertise_host, port};
  if (rank == 0) {
    TESSERA_RETURN_IF_ERROR(WriteFileAtomically(
        options.rendezvous_file, absl::StrCat(FormatHostPort(self), "\n")));
    return FormMeshAtRankZero(world_size, options, listener, std::move(self));
  }
  return FormMeshAtRank(rank, world_size, options, listener, std::move(self));
}

}  // namespace tessera::executor::tcp_internal
