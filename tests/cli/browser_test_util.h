// What the browser tests of the study pages share (`tessera report`'s page,
// tessera-planner's dashboard): reading Chromium's DOM for the numbers the
// plots carry, and an agent that speaks the real AgentService protocol with
// results the test chooses.
//
//   ScriptedAgent a(planner_address, "agent-a");
//   a.Register();
//   std::optional<v1::TrialAssignment> t = a.Lease();
//   a.ReportOk(*t, 1000.0, 400.0, 10.4, -1);
#pragma once

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/trial_result.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::cli {

constexpr char kChromium[] = "/usr/bin/chromium";

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text from the first `start` to the `end` after it ("" when absent).
// Headless Chromium on `url` (within `timeout_s`, with `flags` more: a
// virtual-time budget, offline host rules): the DOM the page built, and in
// *console the lines it logged to the console. Its files go to `dir`, named
// after `name`. --no-sandbox: the tests may run as root.
inline std::string DumpDomInChromium(const std::string& url,
                                     const std::filesystem::path& dir,
                                     const std::string& name, int timeout_s,
                                     const std::string& flags,
                                     std::string* console) {
  const std::filesystem::path dom = dir / (name + ".html");
  const std::filesystem::path log = dir / (name + ".log");
  const std::string command = absl::StrCat(
      "timeout ", timeout_s, " ", kChromium,
      " --headless --no-sandbox --disable-gpu --no-first-run ", flags,
      " --user-data-dir=", (dir / ("profile-" + name)).string(),
      " --enable-logging=stderr --v=0 --dump-dom '", url, "' >",
      dom.string(), " 2>", log.string());
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command << "\n" << ReadFile(log);
  std::string lines;
  std::istringstream in(ReadFile(log));
  for (std::string line; std::getline(in, line);) {
    if (line.find(":CONSOLE") != std::string::npos) lines += line + "\n";
  }
  *console = lines;
  return ReadFile(dom);
}

inline std::string Between(const std::string& text, const std::string& start,
                           const std::string& end) {
  const size_t from = text.find(start);
  if (from == std::string::npos) return "";
  const size_t to = text.find(end, from);
  return to == std::string::npos ? "" : text.substr(from, to - from);
}

inline int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

// The number in attribute `name` of the first element of `html` that has
// every one of `with` (whole attributes, e.g. `data-step="3"`); NaN when no
// element has them or the attribute is absent or empty.
inline double Attribute(const std::string& html,
                        const std::vector<std::string>& with,
                        const std::string& name) {
  static const std::regex element("<[a-z]+ [^>]*>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), element);
       it != std::sregex_iterator(); ++it) {
    const std::string tag = it->str();
    bool all = true;
    for (const std::string& w : with)
      all = all && tag.find(" " + w) != tag.npos;
    if (!all) continue;
    const std::string key = " " + name + "=\"";
    const size_t at = tag.find(key);
    if (at == std::string::npos) return NAN;
    const size_t from = at + key.size();
    const std::string value = tag.substr(from, tag.find('"', from) - from);
    double v = 0;
    return absl::SimpleAtod(value, &v) ? v : NAN;
  }
  return NAN;
}

// An agent that speaks the real AgentService protocol, driven by the test
// instead of running tessera-trial.
class ScriptedAgent {
 public:
  ScriptedAgent(const std::string& address, std::string id)
      : id_(std::move(id)),
        stub_(v1::AgentService::NewStub(grpc::CreateChannel(
            address, grpc::InsecureChannelCredentials()))) {}

  grpc::Status Register() {
    grpc::ClientContext context;
    v1::RegisterRequest request;
    v1::AgentInfo* info = request.mutable_agent();
    info->set_agent_id(id_);
    info->set_hostname(id_);
    info->set_backend("cpu");
    info->set_gpu_name("scripted cpu");
    info->set_gpu_count(8);
    info->set_memory_bytes(int64_t{64} << 30);
    info->set_interconnect("shared-memory");
    info->set_address("127.0.0.1");
    v1::RegisterResponse response;
    return stub_->Register(&context, request, &response);
  }

  // The next trial, polling for up to 10 s.
  std::optional<v1::TrialAssignment> Lease() {
    for (int i = 0; i < 100; ++i) {
      grpc::ClientContext context;
      v1::LeaseTrialRequest request;
      request.set_agent_id(id_);
      v1::LeaseTrialResponse response;
      if (!stub_->LeaseTrial(&context, request, &response).ok()) break;
      if (response.has_assignment()) return response.assignment();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return std::nullopt;
  }

  // Reports an ok run at `tokens_per_s`: step i's loss falls from `loss0`
  // with a wobble, and is not finite at `nan_step` (when >= 0); its step
  // time wobbles around the median.
  grpc::Status ReportOk(const v1::TrialAssignment& a, double tokens_per_s,
                        std::optional<double> watts, double loss0,
                        int nan_step) {
    TrialResult r;
    r.status = TrialStatus::kOk;
    r.layout = *LayoutFromProto(a.layout());
    r.backend = "cpu";
    r.model = "tiny";
    r.device = "scripted cpu";
    r.ranks = a.world_size();
    r.global_batch = a.global_batch();
    r.seq_len = a.seq_len();
    r.warmup_steps = a.warmup_steps();
    r.steps = a.steps();
    const double step_s =
        static_cast<double>(a.global_batch() * a.seq_len()) / tokens_per_s;
    r.step_time_s = {step_s, 0.97 * step_s, 1.03 * step_s};
    r.tokens_per_s = tokens_per_s;
    r.tokens_per_s_per_gpu = tokens_per_s / r.ranks;
    r.tflops_per_gpu = 1.5;
    r.mfu = 0.25;
    r.peak_tflops = 6;
    r.peak_tflops_source = "scripted";
    r.peak_memory_bytes.assign(r.ranks, int64_t{1} << 30);
    r.compute_s = 0.61 * step_s;
    r.comm_s = 0.4 * step_s;
    r.exposed_comm_s = 0.23 * step_s;
    if (watts.has_value()) {
      r.watts_per_gpu = *watts;
      r.tokens_per_joule = tokens_per_s / (*watts * r.ranks);
    }
    for (int64_t i = 0; i < a.warmup_steps() + a.steps(); ++i) {
      r.loss.push_back(i == nan_step ? NAN
                                     : loss0 * std::exp(-0.03 * i) +
                                           0.013 * static_cast<double>(i % 4));
      r.step_times_s.push_back(step_s * (i < a.warmup_steps() ? 1.6 : 1.0) *
                               (1 + 0.011 * static_cast<double>(i % 5)));
    }
    grpc::ClientContext context;
    v1::ReportTrialRequest request;
    request.set_agent_id(id_);
    request.set_trial_id(a.trial_id());
    request.set_result_json(TrialResultToJson(r).dump());
    v1::ReportTrialResponse response;
    return stub_->ReportTrial(&context, request, &response);
  }

 private:
  std::string id_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
};

}  // namespace tessera::cli
