-- 0002_agent_address: the host address other agents of a gang reach an
-- agent at (rendezvous), as the agent registers it.
ALTER TABLE agents ADD COLUMN address TEXT NOT NULL DEFAULT '';
