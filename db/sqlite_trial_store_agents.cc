// SqliteTrialStore: agents (registration, heartbeats, staleness), their
// probes, and calibrations of the cost model.
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "db/internal/rows.h"
#include "db/sqlite_trial_store.h"
#include "db/validation.h"
#include "nlohmann/json.hpp"

namespace tessera::db {

using internal::FromMicros;
using internal::LoadAgent;
using internal::LoadStudy;
using internal::ToMicros;

namespace {

// A free id "<base>-<n>" for an agent that did not choose one.
absl::StatusOr<std::string> AssignAgentId(Database& db,
                                          absl::string_view hostname) {
  const std::string base = AgentIdBase(hostname);
  TESSERA_ASSIGN_OR_RETURN(Statement exists,
                           db.Prepare("SELECT 1 FROM agents WHERE id = ?"));
  for (int64_t n = 1;; ++n) {
    std::string id = absl::StrCat(base, "-", n);
    exists.BindText(1, id);
    TESSERA_ASSIGN_OR_RETURN(const bool taken, exists.Step());
    if (!taken) return id;
    exists.Reset();
  }
}

// Collects the rows of `select` read by `read`.
template <typename T, typename ReadFn>
absl::Status ReadAll(Statement& select, ReadFn read, std::vector<T>& out) {
  out.clear();
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) return absl::OkStatus();
    TESSERA_ASSIGN_OR_RETURN(T value, read(select));
    out.push_back(std::move(value));
  }
}

absl::StatusOr<Probe> ReadProbeOr(const Statement& row) {
  return internal::ReadProbe(row);
}

}  // namespace

absl::StatusOr<Agent> SqliteTrialStore::UpsertAgent(
    const AgentRegistration& a) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentRegistration(a));
  Agent stored;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    std::string id = a.id;
    if (id.empty()) {
      TESSERA_ASSIGN_OR_RETURN(id, AssignAgentId(db, a.hostname));
    }
    const int64_t now_us = ToMicros(Now());
    TESSERA_ASSIGN_OR_RETURN(
        Statement upsert,
        db.Prepare(
            "INSERT INTO agents (id, hostname, backend, gpu_name, gpu_count, "
            "memory_bytes, driver, interconnect, cpu_ranks, address, state, "
            "registered_at_us, last_heartbeat_at_us) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, "
            "backend = excluded.backend, gpu_name = excluded.gpu_name, "
            "gpu_count = excluded.gpu_count, "
            "memory_bytes = excluded.memory_bytes, driver = excluded.driver, "
            "interconnect = excluded.interconnect, "
            "cpu_ranks = excluded.cpu_ranks, address = excluded.address, "
            "state = 'active', "
            "last_heartbeat_at_us = excluded.last_heartbeat_at_us"));
    upsert.BindText(1, id)
        .BindText(2, a.hostname)
        .BindText(3, a.backend)
        .BindText(4, a.gpu_name)
        .BindInt(5, a.gpu_count)
        .BindInt(6, a.memory_bytes)
        .BindText(7, a.driver)
        .BindText(8, a.interconnect)
        .BindInt(9, a.cpu_ranks)
        .BindText(10, a.address)
        .BindInt(11, now_us)
        .BindInt(12, now_us);
    TESSERA_RETURN_IF_ERROR(upsert.Run());
    TESSERA_ASSIGN_OR_RETURN(stored, LoadAgent(db, id));
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return stored;
}

absl::Status SqliteTrialStore::Heartbeat(absl::string_view agent_id,
                                         absl::Time now) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  return Write(
      [&](Database& db) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(const Agent agent, LoadAgent(db, agent_id));
        if (agent.state != AgentState::kActive) {
          return absl::FailedPreconditionError(absl::StrCat(
              "agent ", agent_id, ": is gone; it must register again"));
        }
        TESSERA_ASSIGN_OR_RETURN(
            Statement update,
            db.Prepare(
                "UPDATE agents SET last_heartbeat_at_us = ? WHERE id = ?"));
        update.BindInt(1, ToMicros(now)).BindText(2, agent_id);
        return update.Run();
      },
      Synchronous::kNormal);  // see "Durability" in sqlite_trial_store.h
}

absl::StatusOr<Agent> SqliteTrialStore::GetAgent(absl::string_view agent_id) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  Agent agent;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(agent, LoadAgent(db, agent_id));
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return agent;
}

absl::StatusOr<std::vector<Agent>> SqliteTrialStore::ListAgents(
    std::optional<AgentState> state) {
  std::vector<Agent> agents;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare(absl::StrCat("SELECT ", internal::kAgentColumns,
                                " FROM agents WHERE ?1 IS NULL OR state = ?1 "
                                "ORDER BY id")));
    if (state.has_value()) select.BindText(1, AgentStateName(*state));
    return ReadAll(select, internal::ReadAgent, agents);
  });
  if (!done.ok()) return done;
  return agents;
}

absl::Status SqliteTrialStore::SaveLiveness(
    const std::vector<AgentSeen>& agents,
    const std::vector<LeaseExtension>& leases) {
  for (size_t i = 0; i < agents.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ValidateAgentId(
        agents[i].agent_id, absl::StrCat("liveness.agents[", i, "].agent_id")));
  }
  for (size_t i = 0; i < leases.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ValidateAgentId(
        leases[i].agent_id, absl::StrCat("liveness.leases[", i, "].agent_id")));
  }
  if (agents.empty() && leases.empty()) return absl::OkStatus();
  return Write(
      [&](Database& db) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(
            Statement seen,
            db.Prepare("UPDATE agents SET last_heartbeat_at_us = "
                       "MAX(last_heartbeat_at_us, ?) WHERE id = ? AND "
                       "state = 'active'"));
        for (const AgentSeen& a : agents) {
          seen.BindInt(1, ToMicros(a.at)).BindText(2, a.agent_id);
          TESSERA_RETURN_IF_ERROR(seen.Run());
          seen.Reset();
        }
        TESSERA_ASSIGN_OR_RETURN(
            Statement extend,
            db.Prepare("UPDATE trials SET lease_expires_at_us = "
                       "MAX(lease_expires_at_us, ?) WHERE id = ? AND "
                       "status = 'leased' AND EXISTS (SELECT 1 FROM "
                       "trial_leases l WHERE l.trial_id = trials.id AND "
                       "l.agent_id = ?)"));
        for (const LeaseExtension& l : leases) {
          extend.BindInt(1, ToMicros(l.expires_at))
              .BindInt(2, l.trial_id)
              .BindText(3, l.agent_id);
          TESSERA_RETURN_IF_ERROR(extend.Run());
          extend.Reset();
        }
        return absl::OkStatus();
      },
      Synchronous::kNormal);  // see "Durability" in sqlite_trial_store.h
}

absl::Status SqliteTrialStore::MarkAgentGone(absl::string_view agent_id) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  return Write([&](Database& db) -> absl::Status {
    TESSERA_RETURN_IF_ERROR(LoadAgent(db, agent_id).status());
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE agents SET state = 'gone' WHERE id = ?"));
    update.BindText(1, agent_id);
    return update.Run();
  });
}

absl::StatusOr<std::vector<Agent>> SqliteTrialStore::ListStaleAgents(
    absl::Time now, absl::Duration older_than) {
  std::vector<Agent> agents;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare(absl::StrCat("SELECT ", internal::kAgentColumns,
                                " FROM agents WHERE state = 'active' AND "
                                "last_heartbeat_at_us < ? "
                                "ORDER BY last_heartbeat_at_us, id")));
    select.BindInt(1, ToMicros(now - older_than));
    return ReadAll(select, internal::ReadAgent, agents);
  });
  if (!done.ok()) return done;
  return agents;
}

absl::StatusOr<std::vector<int64_t>> SqliteTrialStore::AddProbes(
    absl::string_view agent_id, const std::vector<Probe>& probes) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  for (size_t i = 0; i < probes.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(
        ValidateProbe(probes[i], absl::StrCat("probes[", i, "]")));
  }
  std::vector<int64_t> ids;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    ids.clear();
    TESSERA_RETURN_IF_ERROR(LoadAgent(db, agent_id).status());
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare(
            "INSERT INTO probes (agent_id, kind, group_size, bytes, "
            "value, unit, measured_at_us) VALUES (?, ?, ?, ?, ?, ?, ?)"));
    for (const Probe& p : probes) {
      insert.BindText(1, agent_id)
          .BindText(2, p.kind)
          .BindInt(3, p.group_size)
          .BindInt(4, p.bytes)
          .BindDouble(5, p.value)
          .BindText(6, p.unit)
          .BindInt(7, ToMicros(p.measured_at));
      TESSERA_RETURN_IF_ERROR(insert.Run());
      ids.push_back(db.LastInsertRowId());
      insert.Reset();
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return ids;
}

absl::StatusOr<std::vector<Probe>> SqliteTrialStore::ListProbes(
    const ProbeFilter& filter) {
  std::vector<Probe> probes;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    // Conditions only for what is asked, so that an index serves them.
    std::string sql = absl::StrCat("SELECT ", internal::kProbeColumns,
                                   " FROM probes WHERE 1");
    if (!filter.agent_id.empty()) absl::StrAppend(&sql, " AND agent_id = ?1");
    if (!filter.kind.empty()) absl::StrAppend(&sql, " AND kind = ?2");
    absl::StrAppend(&sql, " ORDER BY measured_at_us, id");
    TESSERA_ASSIGN_OR_RETURN(Statement select, db.Prepare(sql));
    if (!filter.agent_id.empty()) select.BindText(1, filter.agent_id);
    if (!filter.kind.empty()) select.BindText(2, filter.kind);
    return ReadAll(select, ReadProbeOr, probes);
  });
  if (!done.ok()) return done;
  return probes;
}

absl::StatusOr<Calibration> SqliteTrialStore::SaveCalibration(
    const Calibration& c) {
  TESSERA_RETURN_IF_ERROR(ValidateCalibration(c));
  nlohmann::json coefficients = nlohmann::json::object();
  for (const auto& [name, value] : c.coefficients) coefficients[name] = value;
  Calibration saved = c;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    // A study's scope must name a study that exists.
    if (absl::StartsWith(c.scope, "study:")) {
      int64_t study_id = 0;
      if (!absl::SimpleAtoi(c.scope.substr(6), &study_id)) {
        return absl::InvalidArgumentError(
            absl::StrCat("calibration.scope: '", c.scope, "' has no study id"));
      }
      TESSERA_RETURN_IF_ERROR(LoadStudy(db, study_id).status());
    }
    saved.created_at = Now();
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare(
            "INSERT INTO calibrations (scope, coefficients_json, "
            "samples, fit_error, created_at_us) VALUES (?, ?, ?, ?, ?)"));
    insert.BindText(1, c.scope)
        .BindText(2,
                  coefficients.dump(-1, ' ', false,
                                    nlohmann::json::error_handler_t::replace))
        .BindInt(3, c.samples)
        .BindDouble(4, c.fit_error)
        .BindInt(5, ToMicros(saved.created_at));
    TESSERA_RETURN_IF_ERROR(insert.Run());
    saved.id = db.LastInsertRowId();
    TESSERA_ASSIGN_OR_RETURN(
        Statement member,
        db.Prepare("INSERT INTO calibration_trials (calibration_id, trial_id, "
                   "excluded) VALUES (?, ?, ?)"));
    for (const auto& [ids, excluded] :
         {std::pair(&c.trial_ids, 0), std::pair(&c.excluded_trial_ids, 1)}) {
      for (int64_t trial_id : *ids) {
        TESSERA_RETURN_IF_ERROR(internal::LoadTrial(db, trial_id).status());
        member.Reset();
        member.BindInt(1, saved.id).BindInt(2, trial_id).BindInt(3, excluded);
        TESSERA_RETURN_IF_ERROR(member.Run());
      }
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return saved;
}

absl::StatusOr<std::vector<std::string>> SqliteTrialStore::ScopesCalibratedWith(
    int64_t trial_id) {
  std::vector<std::string> scopes;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    scopes.clear();
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare("SELECT c.scope FROM calibrations c WHERE c.id = "
                   "(SELECT max(id) FROM calibrations WHERE scope = c.scope) "
                   "AND EXISTS (SELECT 1 FROM calibration_trials m WHERE "
                   "m.calibration_id = c.id AND m.trial_id = ?) "
                   "ORDER BY c.scope"));
    select.BindInt(1, trial_id);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) break;
      scopes.push_back(select.ColumnText(0));
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return scopes;
}

absl::StatusOr<Calibration> SqliteTrialStore::LatestCalibration(
    absl::string_view scope) {
  Calibration calibration;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare(absl::StrCat("SELECT ", internal::kCalibrationColumns,
                                " FROM calibrations WHERE scope = ? "
                                "ORDER BY id DESC LIMIT 1")));
    select.BindText(1, scope);
    TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) {
      return absl::NotFoundError(
          absl::StrCat("calibration for ", scope, ": none saved"));
    }
    TESSERA_ASSIGN_OR_RETURN(calibration, internal::ReadCalibration(select));
    TESSERA_ASSIGN_OR_RETURN(
        Statement members,
        db.Prepare("SELECT trial_id, excluded FROM calibration_trials WHERE "
                   "calibration_id = ? ORDER BY trial_id"));
    members.BindInt(1, calibration.id);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool member, members.Step());
      if (!member) break;
      (members.ColumnInt(1) != 0 ? calibration.excluded_trial_ids
                                 : calibration.trial_ids)
          .push_back(members.ColumnInt(0));
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return calibration;
}

absl::StatusOr<ImportedCalibration> SqliteTrialStore::SaveImportedCalibration(
    const ImportedCalibration& imported) {
  TESSERA_RETURN_IF_ERROR(ValidateImportedCalibration(imported));
  ImportedCalibration saved = imported;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    saved.imported_at = Now();
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare("INSERT INTO imported_calibrations (gpu, file_json, "
                   "source, imported_at_us) VALUES (?, ?, ?, ?)"));
    insert.BindText(1, imported.gpu)
        .BindText(2, imported.file_json)
        .BindText(3, imported.source)
        .BindInt(4, ToMicros(saved.imported_at));
    TESSERA_RETURN_IF_ERROR(insert.Run());
    saved.id = db.LastInsertRowId();
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return saved;
}

absl::StatusOr<ImportedCalibration> SqliteTrialStore::LatestImportedCalibration(
    absl::string_view gpu) {
  ImportedCalibration imported;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare("SELECT id, gpu, file_json, source, imported_at_us FROM "
                   "imported_calibrations WHERE gpu = ? ORDER BY id DESC "
                   "LIMIT 1"));
    select.BindText(1, gpu);
    TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) {
      return absl::NotFoundError(
          absl::StrCat("imported calibration for gpu ", gpu, ": none"));
    }
    imported.id = select.ColumnInt(0);
    imported.gpu = select.ColumnText(1);
    imported.file_json = select.ColumnText(2);
    imported.source = select.ColumnText(3);
    imported.imported_at = FromMicros(select.ColumnInt(4));
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return imported;
}

absl::StatusOr<std::vector<int64_t>> SqliteTrialStore::AddCollectiveSamples(
    const std::vector<CollectiveSample>& samples) {
  for (size_t i = 0; i < samples.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ValidateCollectiveSample(
        samples[i], absl::StrCat("collective_samples[", i, "]")));
  }
  std::vector<int64_t> ids;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    ids.clear();
    const int64_t now_us = ToMicros(Now());
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare("INSERT INTO collective_samples (cluster, collective, "
                   "nodes, gpus_per_node, bytes, busbw_gbs, agent_ids, "
                   "measured_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    for (const CollectiveSample& s : samples) {
      insert.BindText(1, s.cluster)
          .BindText(2, s.collective)
          .BindInt(3, s.nodes)
          .BindInt(4, s.gpus_per_node)
          .BindInt(5, s.bytes)
          .BindDouble(6, s.busbw_gbs)
          .BindText(7, s.agent_ids)
          .BindInt(8, now_us);
      TESSERA_RETURN_IF_ERROR(insert.Run());
      ids.push_back(db.LastInsertRowId());
      insert.Reset();
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return ids;
}

absl::StatusOr<std::vector<CollectiveSample>>
SqliteTrialStore::ListCollectiveSamples(absl::string_view cluster) {
  std::vector<CollectiveSample> out;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    out.clear();
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare("SELECT id, cluster, collective, nodes, gpus_per_node, "
                   "bytes, busbw_gbs, agent_ids, measured_at_us FROM "
                   "collective_samples WHERE cluster = ? ORDER BY id"));
    select.BindText(1, cluster);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) break;
      out.push_back(internal::ReadCollectiveSample(select));
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return out;
}

}  // namespace tessera::db
