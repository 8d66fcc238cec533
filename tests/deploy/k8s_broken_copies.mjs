// Broken copies of Tessera's manifests, each of which validate_k8s.mjs must
// reject with the expected problem (so that a validator that checks
// nothing, or the wrong thing, fails the test):
//   node k8s_broken_copies.mjs NODE_MODULES_DIR FILE.yaml...
// The files are read as one set; each case changes one thing in a copy.
// Prints one line per case and exits 1 when any copy is accepted or
// rejected for another reason.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { validateManifests } from "./validate_k8s.mjs";

const [modulesDir, ...files] = process.argv.slice(2);
if (!modulesDir || files.length === 0) {
  console.error("usage: node k8s_broken_copies.mjs NODE_MODULES_DIR FILE.yaml...");
  process.exit(2);
}
const YAML = createRequire(path.join(modulesDir, "x.js"))("yaml");
const original = files.flatMap((f) =>
    YAML.parseAllDocuments(fs.readFileSync(f, "utf8")).map((d) => d.toJS()).filter((d) => d));

// [name, change to the copy's objects, a fragment the validator must print]
const cases = [
  ["deployment-without-selector", (o) => { delete o.Deployment.spec.selector; },
   "must have required property selector"],
  ["selector-not-matching-template",
   (o) => { o.Deployment.spec.selector.matchLabels = { "app.kubernetes.io/name": "other" }; },
   "must match spec.template.metadata.labels"],
  ["container-without-image", (o) => { delete o.DaemonSet.spec.template.spec.containers[0].image; },
   "image is required"],
  ["misspelt-apiversion", (o) => { o.Deployment.apiVersion = "app/v1"; },
   "no kind Deployment in apiVersion app/v1"],
  ["removed-apiversion", (o) => { o.DaemonSet.apiVersion = "extensions/v1beta1"; },
   "apiVersion extensions/v1beta1 was removed"],
  ["kind-not-in-apiversion", (o) => { o.Service.apiVersion = "apps/v1"; },
   "no kind Service in apiVersion apps/v1"],
  ["misspelt-field",
   (o) => { const c = o.DaemonSet.spec.template.spec.containers[0];
            c.imagePullPolicyy = c.imagePullPolicy; delete c.imagePullPolicy; },
   'unknown field "imagePullPolicyy"'],
  ["field-at-the-wrong-level",
   (o) => { o.Deployment.spec.template.spec.replicas = 1; },
   'spec.template.spec: unknown field "replicas"'],
  ["port-as-string",
   (o) => { o.Deployment.spec.template.spec.containers[0].ports[0].containerPort = "50051"; },
   "containerPort must be integer"],
  ["unknown-strategy", (o) => { o.Deployment.spec.strategy.type = "BlueGreen"; },
   "must be equal to one of the allowed values"],
  ["rolling-planner", (o) => { o.Deployment.spec.strategy = { type: "RollingUpdate" }; },
   "must be Recreate"],
  ["two-planners", (o) => { o.Deployment.spec.replicas = 2; },
   "must be 1 (SQLite has one writer)"],
  ["probe-on-undeclared-port",
   (o) => { o.Deployment.spec.template.spec.containers[0].livenessProbe.tcpSocket.port = "http"; },
   "port 'http' is not a named port"],
  ["mount-of-undeclared-volume", (o) => { o.Deployment.spec.template.spec.volumes.pop(); },
   "volume 'tmp' is not declared"],
  ["claim-not-declared", (o) => { o.PersistentVolumeClaim.kind = "ConfigMap"; delete o.PersistentVolumeClaim.spec; },
   "is not a PersistentVolumeClaim of these manifests"],
  ["service-selects-nothing", (o) => { o.Service.spec.selector = { app: "nothing" }; },
   "selects no pod template"],
  ["agent-without-gpu", (o) => { delete o.DaemonSet.spec.template.spec.containers[0].resources.limits; },
   "no container limits nvidia.com/gpu"],
  ["agent-without-toleration", (o) => { delete o.DaemonSet.spec.template.spec.tolerations; },
   "does not tolerate the nvidia.com/gpu taint"],
  ["fractional-gpu",
   (o) => { o.DaemonSet.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"] = "0.5"; },
   "'0.5' is not a whole number"],
];

let failed = 0;
for (const [name, change, expected] of cases) {
  const docs = structuredClone(original);
  const byKind = Object.fromEntries(docs.map((d) => [d.kind, d]));
  change(byKind);
  const text = docs.map((d) => YAML.stringify(d)).join("---\n");
  const problems = await validateManifests(modulesDir, [{ name: `${name}.yaml`, text }]);
  const hit = problems.find((p) => p.includes(expected));
  if (hit) {
    console.log(`rejected ${name}: ${hit}`);
  } else {
    failed++;
    console.log(`FAIL: ${name}: want a problem with '${expected}', got ${problems.length}:`);
    for (const p of problems) console.log(`  ${p}`);
  }
}
console.log(`${cases.length} broken copies, ${failed} accepted or rejected for another reason`);
process.exit(failed ? 1 : 0);
