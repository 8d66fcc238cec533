// The fuzz smoke driver: runs LLVMFuzzerTestOneInput over every file of a
// seed corpus, then over deterministic random mutations of them (byte flips,
// inserts, deletes, duplicated ranges, dictionary tokens, splices), so that CI
// exercises the fuzz target with any compiler.
//
//   spec_layout_fuzz_smoke tests/fuzz/corpus 3000
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/spec_layout_fuzz.h"

namespace {

// Tokens that reach the parsers' edge cases.
const char* const kDictionary[] = {
    "tp=",
    "sp=1",
    "pp=",
    "vpp=",
    "cp=",
    "dp=",
    "zero=3",
    "shard_group=",
    "micro_batch=",
    "grad_accum=",
    "recompute=full",
    ",",
    "=",
    "0",
    "-1",
    "1048576",
    "1048577",
    "9223372036854775807",
    "99999999999999999999",
    "1e308",
    "1e-308",
    "\"Infinity\"",
    "\"NaN\"",
    "null",
    "true",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    "\n",
    "\"preset\"",
    "\"layers\"",
    "\"nodes\"",
    "\"gpus_per_node\"",
    "\"global_batch\"",
    "\"seq_len\"",
    "\"heads\"",
    "\"kv_heads\"",
    "\"hidden\"",
    "\"memory_bytes\"",
    "\"llama3-405b\"",
    "\"tiny\"",
    "\"v100-sxm-32g\"",
    "16777216",
    "65536",
};

std::string Mutate(const std::vector<std::string>& corpus,
                   std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : rng() % n; };
  std::string s = corpus[pick(corpus.size())];
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    const size_t at = pick(s.size() + 1);
    switch (pick(6)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // insert a random byte
        s.insert(s.begin() + at, static_cast<char>(pick(256)));
        break;
      case 2:  // delete a range
        if (!s.empty()) s.erase(pick(s.size()), 1 + pick(8));
        break;
      case 3: {  // duplicate a range
        if (s.empty()) break;
        const size_t from = pick(s.size());
        s.insert(at, s.substr(from, 1 + pick(16)));
        break;
      }
      case 4:  // insert a dictionary token
        s.insert(at, kDictionary[pick(std::size(kDictionary))]);
        break;
      default: {  // splice with another input
        const std::string& other = corpus[pick(corpus.size())];
        s = s.substr(0, at) + other.substr(pick(other.size() + 1));
        break;
      }
    }
  }
  return s;
}

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()),
                         input.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n", argv[0]);
    return 2;
  }
  const long mutations = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 3000;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());  // deterministic order
  std::vector<std::string> corpus;
  for (const auto& path : paths) {
    std::ifstream file(path, std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(file),
                        std::istreambuf_iterator<char>());
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "no seed inputs in %s\n", argv[1]);
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& input : corpus) Run(input);
  std::mt19937_64 rng(20240611);
  for (long i = 0; i < mutations; ++i) Run(Mutate(corpus, rng));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf(
      "fuzz smoke: %zu seeds and %ld mutations in %.2f s, no "
      "invariant violated\n",
      corpus.size(), mutations, seconds);
  return 0;
}
