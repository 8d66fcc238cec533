#include "bench/service/fleet/simulated_fleet.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agents/call_pacing.h"
#include "bench/service/fleet/synthetic_result.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace tessera::bench {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The planner's definite no (agents/planner_client.h's IsDefiniteRefusal).
bool DefiniteRefusal(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::OUT_OF_RANGE:
      return true;
    default:
      return false;
  }
}

// How long a gang member waits for node rank 0's rendezvous data in all.
constexpr absl::Duration kMeetingLimit = absl::Seconds(60);
constexpr absl::Duration kFetchWait = absl::Seconds(5);

absl::Status AsStatus(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

absl::Duration Took(int64_t start_ns) {
  return absl::Nanoseconds(SteadyNs() - start_ns);
}

}  // namespace

SimulatedFleet::SimulatedFleet(std::string address, FleetOptions options)
    : address_(std::move(address)),
      options_(std::move(options)),
      holding_leases_(options_.hold_leases),
      rng_(options_.seed) {}

SimulatedFleet::~SimulatedFleet() { Stop(); }

void SimulatedFleet::Start() {
  const int64_t per_channel = std::max<int64_t>(options_.agents_per_channel, 1);
  agents_.resize(static_cast<size_t>(options_.agents));
  for (int64_t i = 0; i < options_.agents; ++i) {
    if (i % per_channel == 0) {
      // Its own connection, as a separate host has (channels with equal
      // arguments otherwise share one), reconnecting as tessera-agent's.
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                  static_cast<int>(
                      absl::ToInt64Milliseconds(options_.connect_timeout)));
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
      channels_.push_back(grpc::CreateCustomChannel(
          address_, grpc::InsecureChannelCredentials(), args));
      stubs_.push_back(v1::AgentService::NewStub(channels_.back()));
    }
    Agent& a = agents_[static_cast<size_t>(i)];
    a.id = absl::StrFormat("sim-%05d", options_.first_agent + i);
    a.stub = stubs_.back().get();
    a.heartbeat_interval = options_.heartbeat_interval;
    a.poll_interval = options_.lease_poll_interval;
    const double spread = std::uniform_real_distribution<>(0, 1)(rng_);
    Schedule(i, Timer::kRegister, options_.start_spread * spread);
  }
  scheduler_ = std::thread([this] { Loop(); });
}

void SimulatedFleet::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (scheduler_.joinable()) scheduler_.join();
}

void SimulatedFleet::ReleaseLeases() {
  Post([this] { holding_leases_ = false; });
}

int64_t SimulatedFleet::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

int64_t SimulatedFleet::last_registration_ns() const {
  absl::MutexLock lock(&mu_);
  return last_registration_ns_;
}

FleetTally SimulatedFleet::TakeTally() { return std::move(tally_); }

void SimulatedFleet::Post(std::function<void()> done) {
  absl::MutexLock lock(&mu_);
  posted_.push_back(std::move(done));
}

void SimulatedFleet::Schedule(int64_t agent, Timer timer,
                              absl::Duration after) {
  const Agent& a = agents_[static_cast<size_t>(agent)];
  const uint32_t generation = timer == Timer::kHeartbeat
                                  ? a.heartbeat_generation
                                  : a.main_generation;
  timers_.push(Due{.at_ns = SteadyNs() + absl::ToInt64Nanoseconds(after),
                   .agent = agent,
                   .timer = timer,
                   .generation = generation});
}

void SimulatedFleet::Loop() {
  std::vector<std::function<void()>> posted;
  while (true) {
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      const int64_t next_ns =
          timers_.empty() ? SteadyNs() + 100'000'000 : timers_.top().at_ns;
      const absl::Duration wait =
          absl::Nanoseconds(std::max<int64_t>(next_ns - SteadyNs(), 0));
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !posted_.empty() || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
      posted.swap(posted_);
      stopping = stopping_;
    }
    for (std::function<void()>& done : posted) done();
    posted.clear();
    if (stopping) {
      // Calls in flight get their answer (a report's acknowledgement is what
      // the exactly-once check counts), up to a deadline; rendezvous fetches
      // waiting for a gang are cancelled at once: nothing counts on them,
      // and awaiting them (up to 15 s) would let the planner expire the
      // running trials' leases, unrenewed since the heartbeats stopped,
      // before the check reads the store.
      if (stopped_ns_ == 0) {
        stopped_ns_ = SteadyNs();
        for (const auto& [c, awaited] : in_flight_) {
          if (!awaited) c->TryCancel();
        }
      }
      const bool late =
          SteadyNs() - stopped_ns_ >
          absl::ToInt64Nanoseconds(options_.rpc_deadline + absl::Seconds(1));
      if (late && !cancelled_in_flight_) {
        cancelled_in_flight_ = true;
        for (const auto& [c, awaited] : in_flight_) c->TryCancel();
      }
      if (in_flight_.empty()) return;
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](std::vector<std::function<void()>>* p) {
                                 return !p->empty();
                               },
                               &posted_),
                           absl::Milliseconds(50));
      continue;
    }
    const int64_t now = SteadyNs();
    while (!timers_.empty() && timers_.top().at_ns <= now) {
      const Due due = timers_.top();
      timers_.pop();
      Fire(due);
    }
  }
}

void SimulatedFleet::Record(const std::string& rpc, int64_t start_ns,
                            const grpc::Status& status) {
  tally_.calls[rpc].push_back(
      CallSample{.start_ns = start_ns,
                 .ms = static_cast<float>(1e-6 * static_cast<double>(
                                                     SteadyNs() - start_ns)),
                 .ok = status.ok()});
  if (!status.ok() && tally_.first_error.empty() &&
      status.error_code() != grpc::StatusCode::CANCELLED) {
    tally_.first_error = absl::StrCat(rpc, ": ", status.error_code(), ": ",
                                      status.error_message());
  }
}

template <typename Request, typename Response, typename Method>
void SimulatedFleet::Call(
    const std::string& rpc, Agent& agent, Request request, Method method,
    absl::Duration deadline,
    std::function<void(const grpc::Status&, Response&)> done) {
  struct InFlight {
    grpc::ClientContext context;
    Request request;
    Response response;
    int64_t start_ns = 0;
  };
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;  // no new calls once stopping
  }
  auto* call = new InFlight;
  call->request = std::move(request);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             absl::ToChronoNanoseconds(deadline));
  call->start_ns = SteadyNs();
  in_flight_.emplace(&call->context, rpc != "Rendezvous");
  method(agent.stub->async(), &call->context, &call->request, &call->response,
         [this, call, rpc, done = std::move(done)](grpc::Status status) {
           Post([this, call, rpc, done, status] {
             in_flight_.erase(&call->context);
             Record(rpc, call->start_ns, status);
             if (status.error_code() != grpc::StatusCode::CANCELLED ||
                 stopped_ns_ == 0) {
               last_took_ = Took(call->start_ns);
               done(status, call->response);
             }
             delete call;
           });
         });
}

absl::Duration SimulatedFleet::PaceNext(absl::Duration interval,
                                        const absl::Status& status,
                                        int64_t& slow_calls,
                                        double max_stretch) {
  // tessera-agent's own rule (agents/call_pacing.h).
  return agents::PacedWait(
      agents::CallPacingOptions{.max_stretch = max_stretch}, interval,
      last_took_, status, slow_calls, rng_);
}

absl::Duration SimulatedFleet::Backoff(int failures) {
  // Equal jitter (agents/backoff.h): uniform in the upper half of the
  // nominal delay, which doubles from initial to max.
  absl::Duration nominal = options_.backoff_initial;
  for (int k = 1; k < failures && nominal < options_.backoff_max; ++k) {
    nominal *= 2;
  }
  nominal = std::min(nominal, options_.backoff_max);
  const double u = std::uniform_real_distribution<>(0.5, 1.0)(rng_);
  return std::max(options_.backoff_initial, nominal * u);
}

void SimulatedFleet::Fire(const Due& due) {
  Agent& a = agents_[static_cast<size_t>(due.agent)];
  switch (due.timer) {
    case Timer::kRegister:
      if (!a.registered && !a.registering) Register(due.agent);
      return;
    case Timer::kHeartbeat:
      if (due.generation != a.heartbeat_generation) return;  // superseded
      if (a.registered && !a.heartbeat_busy) Heartbeat(due.agent);
      return;
    case Timer::kMain:
      if (due.generation != a.main_generation) return;  // superseded
      switch (a.main) {
        case Main::kIdle:
          if (holding_leases_) {
            Schedule(due.agent, Timer::kMain, a.poll_interval);
          } else if (a.registered) {
            Lease(due.agent);
          }
          return;
        case Main::kRunning:
          if (a.trial->node_rank() == 0) {
            Report(due.agent);
          } else {
            // The other members' processes end with the trial; node rank 0
            // reports it.
            BecomeIdle(due.agent, absl::ZeroDuration());
          }
          return;
        case Main::kReporting:
          Report(due.agent);  // a retry
          return;
        default:
          return;
      }
  }
}

void SimulatedFleet::Register(int64_t i) {
  Agent& a = agents_[static_cast<size_t>(i)];
  a.registering = true;
  v1::RegisterRequest request;
  v1::AgentInfo* info = request.mutable_agent();
  info->set_agent_id(a.id);
  info->set_hostname(a.id);
  info->set_backend("cpu");
  info->set_gpu_name("simulated CPU");
  info->set_gpu_count(8);
  info->set_memory_bytes(int64_t{8} << 30);
  info->set_interconnect("shared-memory");
  info->set_address("127.0.0.1");
  Call<v1::RegisterRequest, v1::RegisterResponse>(
      "Register", a, std::move(request),
      [](auto* s, auto* c, auto* q, auto* r, auto f) {
        s->Register(c, q, r, std::move(f));
      },
      options_.rpc_deadline,
      [this, i](const grpc::Status& status, v1::RegisterResponse& r) {
        Agent& me = agents_[static_cast<size_t>(i)];
        me.registering = false;
        if (!status.ok()) {
          Schedule(i, Timer::kRegister, Backoff(++me.register_failures));
          return;
        }
        me.register_failures = 0;
        me.registered = true;
        ++tally_.registrations;
        if (!options_.override_intervals) {
          if (r.heartbeat_interval_ms() > 0) {
            me.heartbeat_interval = absl::Milliseconds(r.heartbeat_interval_ms());
          }
          if (r.lease_poll_interval_ms() > 0) {
            me.poll_interval = absl::Milliseconds(r.lease_poll_interval_ms());
          }
        }
        tally_.heartbeat_interval_ms = r.heartbeat_interval_ms();
        tally_.lease_poll_interval_ms = r.lease_poll_interval_ms();
        if (!me.ever_registered) {
          me.ever_registered = true;
          absl::MutexLock lock(&mu_);
          ++registered_;
          last_registration_ns_ = SteadyNs();
        }
        // Heartbeats at a random phase of the interval (agents that start
        // together do not beat together for long: their calls' latencies
        // differ).
        if (!me.heartbeat_busy) {
          ++me.heartbeat_generation;
          Schedule(i, Timer::kHeartbeat,
                   me.heartbeat_interval *
                       std::uniform_real_distribution<>(0, 1)(rng_));
        }
        if (me.main == Main::kStarting || me.main == Main::kIdle) {
          BecomeIdle(i, absl::ZeroDuration());
        }
      });
}

void SimulatedFleet::NeedRegistration(int64_t i) {
  Agent& a = agents_[static_cast<size_t>(i)];
  if (!a.registered) return;
  a.registered = false;
  if (!a.registering) Register(i);
}

void SimulatedFleet::Heartbeat(int64_t i) {
  Agent& a = agents_[static_cast<size_t>(i)];
  a.heartbeat_busy = true;
  v1::HeartbeatRequest request;
  request.set_agent_id(a.id);
  if (a.trial.has_value() &&
      (a.main == Main::kMeeting || a.main == Main::kRunning ||
       a.main == Main::kReporting)) {
    request.add_running_trials(a.trial->trial_id());
  }
  Call<v1::HeartbeatRequest, v1::HeartbeatResponse>(
      "Heartbeat", a, std::move(request),
      [](auto* s, auto* c, auto* q, auto* r, auto f) {
        s->Heartbeat(c, q, r, std::move(f));
      },
      options_.rpc_deadline,
      [this, i](const grpc::Status& status, v1::HeartbeatResponse& r) {
        Agent& me = agents_[static_cast<size_t>(i)];
        me.heartbeat_busy = false;
        const absl::Duration wait = PaceNext(
            me.heartbeat_interval, AsStatus(status), me.slow_heartbeats,
            kHeartbeatStretch);
        if (!status.ok()) {
          if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
              agents::PlannerSlowOrAway(AsStatus(status))) {
            // As tessera-agent: a busy planner gets the next heartbeat
            // later, not a registration.
            Schedule(i, Timer::kHeartbeat, wait);
            return;
          }
          // Otherwise registering again (the heartbeats resume once
          // registered).
          NeedRegistration(i);
          return;
        }
        if (!options_.override_intervals) {
          if (r.heartbeat_interval_ms() > 0) {
            me.heartbeat_interval = absl::Milliseconds(r.heartbeat_interval_ms());
          }
          if (r.lease_poll_interval_ms() > 0) {
            me.poll_interval = absl::Milliseconds(r.lease_poll_interval_ms());
          }
        }
        if (r.heartbeat_interval_ms() > 0) {
          tally_.heartbeat_interval_ms = r.heartbeat_interval_ms();
          tally_.lease_poll_interval_ms = r.lease_poll_interval_ms();
        }
        for (int64_t id : r.cancel_trials()) {
          if (!me.trial.has_value() || me.trial->trial_id() != id) continue;
          if (me.main == Main::kRunning || me.main == Main::kMeeting) {
            if (me.trial->node_rank() == 0) ++tally_.running_trials_cancelled;
            BecomeIdle(i, absl::ZeroDuration());
          }
        }
        Schedule(i, Timer::kHeartbeat, wait);
      });
}

void SimulatedFleet::BecomeIdle(int64_t i, absl::Duration poll_after) {
  Agent& a = agents_[static_cast<size_t>(i)];
  a.main = Main::kIdle;
  a.trial.reset();
  ++a.main_generation;
  Schedule(i, Timer::kMain, poll_after);
}

void SimulatedFleet::Lease(int64_t i) {
  Agent& a = agents_[static_cast<size_t>(i)];
  a.main = Main::kLeasing;
  v1::LeaseTrialRequest request;
  request.set_agent_id(a.id);
  Call<v1::LeaseTrialRequest, v1::LeaseTrialResponse>(
      "LeaseTrial", a, std::move(request),
      [](auto* s, auto* c, auto* q, auto* r, auto f) {
        s->LeaseTrial(c, q, r, std::move(f));
      },
      options_.rpc_deadline,
      [this, i](const grpc::Status& status, v1::LeaseTrialResponse& r) {
        Agent& me = agents_[static_cast<size_t>(i)];
        if (!status.ok()) {
          if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
              status.error_code() == grpc::StatusCode::NOT_FOUND) {
            NeedRegistration(i);
            BecomeIdle(i, me.poll_interval);
          } else {
            BecomeIdle(i, Backoff(++me.main_failures));
          }
          return;
        }
        me.main_failures = 0;
        if (!r.has_assignment()) ++tally_.leases_empty;
        if (!r.has_assignment() || r.assignment().collective_probe_id() > 0) {
          BecomeIdle(i, PaceNext(me.poll_interval, absl::OkStatus(),
                                 me.slow_polls, kPollStretch));
          return;
        }
        ++tally_.leases_granted;
        me.trial = r.assignment();
        ++me.main_generation;
        if (me.trial->gang_size() > 1) {
          me.main = Main::kMeeting;
          Meet(i, absl::ZeroDuration());
        } else {
          StartRunning(i);
        }
      });
}

void SimulatedFleet::Meet(int64_t i, absl::Duration waited) {
  Agent& a = agents_[static_cast<size_t>(i)];
  v1::RendezvousRequest request;
  request.set_agent_id(a.id);
  request.set_trial_id(a.trial->trial_id());
  const bool publish = a.trial->node_rank() == 0;
  if (publish) {
    request.set_data(absl::StrCat("sim-rendezvous-", a.trial->trial_id()));
  } else {
    request.set_wait_ms(absl::ToInt64Milliseconds(kFetchWait));
  }
  const uint32_t generation = a.main_generation;
  Call<v1::RendezvousRequest, v1::RendezvousResponse>(
      "Rendezvous", a, std::move(request),
      [](auto* s, auto* c, auto* q, auto* r, auto f) {
        s->Rendezvous(c, q, r, std::move(f));
      },
      options_.rpc_deadline + kFetchWait,
      [this, i, waited, generation](const grpc::Status& status,
                                    v1::RendezvousResponse& r) {
        Agent& me = agents_[static_cast<size_t>(i)];
        if (me.main_generation != generation || me.main != Main::kMeeting) {
          return;  // cancelled meanwhile
        }
        if (status.ok() && !r.data().empty()) {
          StartRunning(i);
        } else if (DefiniteRefusal(status) || waited >= kMeetingLimit) {
          BecomeIdle(i, absl::ZeroDuration());  // the gang is gone
        } else {
          Meet(i, waited + kFetchWait);
        }
      });
}

void SimulatedFleet::StartRunning(int64_t i) {
  Agent& a = agents_[static_cast<size_t>(i)];
  a.main = Main::kRunning;
  ++a.main_generation;
  Schedule(i, Timer::kMain, TrialDuration(a.trial->trial_id()));
}

absl::Duration SimulatedFleet::TrialDuration(int64_t trial_id) const {
  if (options_.trial_spread <= 0) return options_.trial;
  // One draw per (seed, trial): the same for every member of a gang.
  std::mt19937_64 draw(options_.seed * 0x9E3779B97F4A7C15ULL +
                       static_cast<uint64_t>(trial_id));
  const double u = std::uniform_real_distribution<>(-1, 1)(draw);
  return options_.trial * (1 + options_.trial_spread * u);
}

void SimulatedFleet::Report(int64_t i) {
  Agent& a = agents_[static_cast<size_t>(i)];
  a.main = Main::kReporting;
  const int64_t trial_id = a.trial->trial_id();
  v1::ReportTrialRequest request;
  request.set_agent_id(a.id);
  request.set_trial_id(trial_id);
  request.set_result_json(SyntheticResultJson(*a.trial));
  const uint32_t generation = a.main_generation;
  Call<v1::ReportTrialRequest, v1::ReportTrialResponse>(
      "ReportTrial", a, std::move(request),
      [](auto* s, auto* c, auto* q, auto* r, auto f) {
        s->ReportTrial(c, q, r, std::move(f));
      },
      options_.rpc_deadline,
      [this, i, trial_id, generation](const grpc::Status& status,
                                      v1::ReportTrialResponse&) {
        Agent& me = agents_[static_cast<size_t>(i)];
        if (status.ok()) {
          if (!tally_.acked_trials.insert(trial_id).second) {
            ++tally_.duplicate_acks;
          }
          tally_.ack_ns.push_back(SteadyNs());
        } else if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
          // A retry of a report the planner stored though the first call
          // failed (its deadline passed): done, as tessera-agent counts it.
          tally_.acked_trials.insert(trial_id);
          tally_.ack_ns.push_back(SteadyNs());
        } else if (DefiniteRefusal(status)) {
          ++tally_.reports_refused;
        } else {
          // Kept and reported again (the planner away, slow or failing).
          if (me.main_generation == generation) {
            Schedule(i, Timer::kMain, Backoff(++me.main_failures));
          }
          return;
        }
        me.main_failures = 0;
        BecomeIdle(i, absl::ZeroDuration());
      });
}

}  // namespace tessera::bench
