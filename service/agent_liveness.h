// Which agents are alive, kept in memory (issue 32). A heartbeat updates
// its agent's last-seen time and the expiry of the leases it runs here,
// not in the store: at 2,000 agents a write per heartbeat made the store's
// one writer serialize liveness with leases and reports. The store gets
// what heartbeats taught in one unsynced write per reaper pass
// (TrialStore::SaveLiveness, before the reaper expires anything), and
// every change of state at once (a registration, an agent marked gone, a
// lease taken or ended). The reaper finds silent agents here.
//
// After a restart the planner loads the active agents from the store,
// whose last heartbeats TrialStore::ForgiveOutage has set to the restart:
// an agent that died before it, whatever its last heartbeat written, is
// marked gone an agent timeout after the restart, as one that died just
// after it; one marked gone before it stays gone.
//
//   AgentLiveness liveness;
//   liveness.Load(*store.ListAgents(db::AgentState::kActive));
//   if (!liveness.Beat("node-7", now)) { /* unknown or gone: ask the store */ }
//   UnsavedLiveness unsaved = liveness.TakeUnsaved();
//   if (!store.SaveLiveness(unsaved.agents, unsaved.leases).ok())
//     liveness.PutBack(std::move(unsaved));
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/trial_store.h"

namespace tessera::service {

// What heartbeats taught since the last write to the store.
struct UnsavedLiveness {
  std::vector<db::AgentSeen> agents;
  std::vector<db::LeaseExtension> leases;
};

// Thread-safe.
class AgentLiveness {
 public:
  // Replaces what is known with the `active` agents, as the store has them.
  void Load(const std::vector<db::Agent>& active);
  // An agent (re-)registered (the store wrote it): active, last seen at its
  // registration.
  void Registered(const db::Agent& agent);
  // An agent the store has active though it was not known here (no
  // registration seen: RegisteredAt is InfinitePast).
  void Adopt(const db::Agent& agent);
  // A heartbeat of `agent_id` at `now`; false when it is not an active agent
  // here (nothing is changed).
  bool Beat(const std::string& agent_id, absl::Time now);
  // The lease of `trial_id` held by `agent_id` now reaches `expires_at`.
  void Extended(int64_t trial_id, const std::string& agent_id,
                absl::Time expires_at);
  // The agent was marked gone in the store: no longer active here.
  void Gone(const std::string& agent_id);
  // An active agent as registered; nullopt when unknown or gone.
  std::optional<db::Agent> Active(const std::string& agent_id) const;
  // When an active agent was last heard.
  std::optional<absl::Time> LastSeen(const std::string& agent_id) const;
  // When an active agent last registered with this planner (Registered);
  // InfinitePast for one loaded from the store.
  std::optional<absl::Time> RegisteredAt(const std::string& agent_id) const;
  // Active agents not heard since before now - `silence`, longest silent
  // first.
  std::vector<std::string> Silent(absl::Time now,
                                  absl::Duration silence) const;
  // An outage was forgiven (the store's ForgiveOutage): every active
  // agent's silence restarts at `now`.
  void ForgiveAll(absl::Time now);
  int64_t active_count() const;

  // Takes what was learnt since the last take (cleared here).
  UnsavedLiveness TakeUnsaved();
  // After a failed write of `unsaved`: kept for the next, unless newer.
  void PutBack(UnsavedLiveness unsaved);

 private:
  struct Entry {
    db::Agent agent;
    absl::Time last_seen;
    bool unsaved = false;
    absl::Time registered_at = absl::InfinitePast();
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> active_ ABSL_GUARDED_BY(mu_);
  // Lease expiries heartbeats moved, not yet written, by trial id.
  std::map<int64_t, db::LeaseExtension> extensions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::service
