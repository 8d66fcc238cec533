// Writes a broken copy of Tessera's manifests, for k8s_manifests_test.sh to
// check that validate_k8s.mjs rejects it:
//   node mutate_k8s.mjs NODE_MODULES_DIR MUTATION IN.yaml OUT.yaml
// MUTATION names one change (see `mutations` below).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modulesDir, mutation, input, output] = process.argv.slice(2);
const YAML = createRequire(path.join(modulesDir, "x.js"))("yaml");
const docs = YAML.parseAllDocuments(fs.readFileSync(input, "utf8")).map((d) => d.toJS());
const find = (kind) => docs.find((d) => d?.kind === kind);
const podSpec = (kind) => find(kind).spec.template.spec;

const mutations = {
  "deployment-without-selector": () => { delete find("Deployment").spec.selector; },
  "selector-not-matching-template": () => {
    find("Deployment").spec.selector.matchLabels = { "app.kubernetes.io/name": "other" };
  },
  "container-without-image": () => { delete podSpec("DaemonSet").containers[0].image; },
  "misspelt-apiversion": () => { find("Deployment").apiVersion = "app/v1"; },
  "removed-apiversion": () => { find("DaemonSet").apiVersion = "extensions/v1beta1"; },
  "kind-not-in-apiversion": () => { find("Service").apiVersion = "apps/v1"; },
  "port-as-string": () => { podSpec("Deployment").containers[0].ports[0].containerPort = "50051"; },
  "unknown-strategy": () => { find("Deployment").spec.strategy.type = "BlueGreen"; },
  "rolling-planner": () => { find("Deployment").spec.strategy = { type: "RollingUpdate" }; },
  "two-planners": () => { find("Deployment").spec.replicas = 2; },
  "probe-on-undeclared-port": () => {
    podSpec("Deployment").containers[0].livenessProbe.tcpSocket.port = "http";
  },
  "mount-of-undeclared-volume": () => { podSpec("Deployment").volumes.pop(); },
  "claim-not-declared": () => { docs.splice(docs.indexOf(find("PersistentVolumeClaim")), 1); },
  "service-selects-nothing": () => { find("Service").spec.selector = { app: "nothing" }; },
  "agent-without-gpu": () => { delete podSpec("DaemonSet").containers[0].resources.limits; },
  "agent-without-toleration": () => { delete podSpec("DaemonSet").tolerations; },
  "fractional-gpu": () => { podSpec("DaemonSet").containers[0].resources.limits["nvidia.com/gpu"] = "0.5"; },
};
if (!mutations[mutation]) {
  console.error(`mutate_k8s: unknown mutation '${mutation}' (${Object.keys(mutations).join(", ")})`);
  process.exit(2);
}
mutations[mutation]();
fs.writeFileSync(output, docs.map((d) => YAML.stringify(d)).join("---\n"));
