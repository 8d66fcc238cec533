#include "service/agent_liveness.h"

#include <algorithm>
#include <utility>

namespace tessera::service {

void AgentLiveness::Load(const std::vector<db::Agent>& active) {
  absl::MutexLock lock(&mu_);
  active_.clear();
  extensions_.clear();
  for (const db::Agent& a : active) {
    if (a.state != db::AgentState::kActive) continue;
    active_[a.info.id] = Entry{a, a.last_heartbeat_at, false};
  }
}

void AgentLiveness::Registered(const db::Agent& agent) {
  absl::MutexLock lock(&mu_);
  active_[agent.info.id] =
      Entry{agent, agent.last_heartbeat_at, false, agent.last_heartbeat_at};
}

void AgentLiveness::Adopt(const db::Agent& agent) {
  absl::MutexLock lock(&mu_);
  active_.try_emplace(agent.info.id,
                      Entry{agent, agent.last_heartbeat_at, false,
                            absl::InfinitePast()});
}

bool AgentLiveness::Beat(const std::string& agent_id, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(agent_id);
  if (it == active_.end()) return false;
  it->second.last_seen = std::max(it->second.last_seen, now);
  it->second.unsaved = true;
  return true;
}

void AgentLiveness::Extended(int64_t trial_id, const std::string& agent_id,
                             absl::Time expires_at) {
  absl::MutexLock lock(&mu_);
  db::LeaseExtension& e = extensions_[trial_id];
  if (e.agent_id.empty() || expires_at >= e.expires_at) {
    e = db::LeaseExtension{trial_id, agent_id, expires_at};
  }
}

void AgentLiveness::Gone(const std::string& agent_id) {
  absl::MutexLock lock(&mu_);
  active_.erase(agent_id);
}

std::optional<db::Agent> AgentLiveness::Active(
    const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(agent_id);
  if (it == active_.end()) return std::nullopt;
  return it->second.agent;
}

std::optional<absl::Time> AgentLiveness::LastSeen(
    const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(agent_id);
  if (it == active_.end()) return std::nullopt;
  return it->second.last_seen;
}

std::optional<absl::Time> AgentLiveness::RegisteredAt(
    const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(agent_id);
  if (it == active_.end()) return std::nullopt;
  return it->second.registered_at;
}

std::vector<std::string> AgentLiveness::Silent(absl::Time now,
                                               absl::Duration silence) const {
  std::vector<std::pair<absl::Time, std::string>> silent;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, e] : active_) {
      if (e.last_seen < now - silence) silent.emplace_back(e.last_seen, id);
    }
  }
  std::sort(silent.begin(), silent.end());
  std::vector<std::string> ids;
  for (auto& [at, id] : silent) ids.push_back(std::move(id));
  return ids;
}

void AgentLiveness::ForgiveAll(absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, e] : active_) {
    e.last_seen = std::max(e.last_seen, now);
  }
}

int64_t AgentLiveness::active_count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(active_.size());
}

UnsavedLiveness AgentLiveness::TakeUnsaved() {
  UnsavedLiveness out;
  absl::MutexLock lock(&mu_);
  for (auto& [id, e] : active_) {
    if (!e.unsaved) continue;
    out.agents.push_back(db::AgentSeen{id, e.last_seen});
    e.unsaved = false;
  }
  for (auto& [trial_id, e] : extensions_) out.leases.push_back(std::move(e));
  extensions_.clear();
  return out;
}

void AgentLiveness::PutBack(UnsavedLiveness unsaved) {
  absl::MutexLock lock(&mu_);
  for (const db::AgentSeen& seen : unsaved.agents) {
    auto it = active_.find(seen.agent_id);
    if (it != active_.end()) it->second.unsaved = true;
  }
  for (db::LeaseExtension& e : unsaved.leases) {
    auto [it, inserted] = extensions_.try_emplace(e.trial_id, e);
    if (!inserted && it->second.expires_at < e.expires_at) it->second = e;
  }
}

}  // namespace tessera::service
