// The NCCL unique-id rendezvous file, on the CPU: the format round-trips, a
// file of another world or a damaged one is refused with a reason, rank 0's
// atomic publish is seen by a waiting rank, and a rank that waits for nothing
// times out naming the file.
#include "executor/cuda/nccl_id_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

std::vector<uint8_t> RandomId(uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> id(kNcclIdBytes);
  for (uint8_t& b : id) b = static_cast<uint8_t>(gen());
  return id;
}

class NcclIdFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_nccl_id_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "trial.nccl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string path_;
};

TEST(NcclIdFormatTest, RoundTrips) {
  const std::vector<uint8_t> id = RandomId(7);
  const std::string text = FormatNcclIdFile(id, 8);
  EXPECT_EQ(text.rfind("tessera-nccl-id v1 world_size=8\n", 0), 0u) << text;
  absl::StatusOr<std::vector<uint8_t>> back = ParseNcclIdFile(text, 8);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, id);
}

TEST(NcclIdFormatTest, AnotherWorldSizeIsRefused) {
  const std::string text = FormatNcclIdFile(RandomId(1), 8);
  absl::StatusOr<std::vector<uint8_t>> back = ParseNcclIdFile(text, 4);
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(back.status().message());
  EXPECT_NE(m.find("8"), std::string::npos) << m;
  EXPECT_NE(m.find("4"), std::string::npos) << m;
}

TEST(NcclIdFormatTest, DamagedFilesAreRefused) {
  const std::string good = FormatNcclIdFile(RandomId(2), 2);
  std::string bad_hex = good;
  bad_hex[bad_hex.find('\n') + 5] = 'z';
  for (const std::string& text :
       {std::string("host:1234\n"), good.substr(0, good.size() - 10), bad_hex,
        std::string("tessera-nccl-id v1 world_size=two\nab\n"),
        good + "trailing\n"}) {
    EXPECT_EQ(ParseNcclIdFile(text, 2).status().code(),
              absl::StatusCode::kInvalidArgument)
        << text;
  }
}

TEST_F(NcclIdFileTest, PublishThenAwait) {
  const std::vector<uint8_t> id = RandomId(3);
  ASSERT_TRUE(PublishNcclId(path_, id, 2).ok());
  absl::StatusOr<std::vector<uint8_t>> got =
      AwaitNcclId(path_, 2, absl::Seconds(1));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, id);
  // The temporary file of the atomic write is gone.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "trial.nccl");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(NcclIdFileTest, AWaitingRankSeesALatePublish) {
  const std::vector<uint8_t> id = RandomId(4);
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(PublishNcclId(path_, id, 3).ok());
  });
  absl::StatusOr<std::vector<uint8_t>> got =
      AwaitNcclId(path_, 3, absl::Seconds(10), absl::Milliseconds(5));
  rank0.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, id);
}

TEST_F(NcclIdFileTest, NothingPublishedTimesOut) {
  absl::StatusOr<std::vector<uint8_t>> got =
      AwaitNcclId(path_, 2, absl::Milliseconds(50), absl::Milliseconds(5));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(got.status().message()).find(path_), std::string::npos)
      << got.status();
}

TEST_F(NcclIdFileTest, WrongIdSizeIsRefused) {
  const std::vector<uint8_t> short_id(16, 1);
  EXPECT_EQ(PublishNcclId(path_, short_id, 2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(NcclIdFileTest, UnwritableFolderIsUnavailable) {
  EXPECT_EQ(
      PublishNcclId((dir_ / "no" / "such" / "dir").string(), RandomId(5), 2)
          .code(),
      absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera::executor
