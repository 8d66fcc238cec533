// Validates Kubernetes manifests offline:
//   node validate_k8s.mjs NODE_MODULES_DIR FILE.yaml...
// (or, imported: validateManifests(modulesDir, [{name, text}]) -> problems).
// Each object is checked against its kind's schema from the Kubernetes
// OpenAPI document (the npm package kubernetes-models 5.1.0, generated from
// Kubernetes 1.36's: types, required fields, enums, formats), an unknown
// apiVersion/kind being an error; for fields the schema does not know (as
// kubectl's strict field validation rejects them: the schema's JS
// validators allow them, so the field lists come from the package's type
// declarations, generated from the same document); then against the API server's validation
// rules that the schema does not carry (k8s.io/kubernetes pkg/apis/*/validation:
// names, a selector that matches its template, containers with images,
// mounts of declared volumes, probes with one handler on declared ports,
// whole-number extended resources, a Recreate strategy without rollingUpdate),
// the references between the objects (a Service's selector and target port,
// a claim that is declared), and Tessera's own rules (one planner replica,
// Recreate; agents holding nvidia.com/gpu on GPU nodes).
// Prints one line per problem ("file: Kind/name: path: what") and exits 1
// when there is any, 2 on bad usage or an unreadable file.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

let YAML = null;
let modulesDir = null;
let problems = [];
function problem(where, what) {
  problems.push(`${where}: ${what}`);
}

// The kubernetes-models module of an apiVersion ("v1", "apps/v1"), or null.
const modelModules = new Map();
async function modelsFor(apiVersion) {
  if (modelModules.has(apiVersion)) return modelModules.get(apiVersion);
  let mod = null;
  if (/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion)) {
    const file = path.join(modulesDir, "kubernetes-models", apiVersion,
                           "index.js");
    if (fs.existsSync(file)) mod = await import(pathToFileURL(file).href);
  }
  modelModules.set(apiVersion, mod);
  return mod;
}

// Group versions the schemas still describe that Kubernetes 1.36 no longer
// serves (the API deprecation guide), with the release that removed them.
const removedApiVersions = {
  "extensions/v1beta1": "1.16 (1.22 for Ingress)",
  "apps/v1beta1": "1.16",
  "apps/v1beta2": "1.16",
  "networking.k8s.io/v1beta1": "1.22",
  "rbac.authorization.k8s.io/v1beta1": "1.22",
  "batch/v1beta1": "1.25",
  "policy/v1beta1": "1.25",
  "autoscaling/v2beta1": "1.25",
  "autoscaling/v2beta2": "1.26",
  "storage.k8s.io/v1beta1": "1.22 (1.27 for CSIStorageCapacity)",
};

// The fields of an interface in a kubernetes-models .d.ts file: name ->
// the .d.ts of the field's object type, or null where the value is no
// object of a declared type (a string, a map, a quantity). null when the file
// declares no interface (a type alias such as IntOrString).
const fieldCache = new Map();
function declaredFields(dts) {
  if (fieldCache.has(dts)) return fieldCache.get(dts);
  let fields = null;
  const text = fs.existsSync(dts) ? fs.readFileSync(dts, "utf8") : "";
  const start = text.search(/^export interface I\w+ (extends \w+ )?\{$/m);
  if (start >= 0) {
    const imports = new Map();
    for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
      const from = m[2].startsWith(".")
          ? path.resolve(path.dirname(dts), m[2])
          : path.join(modulesDir, m[2]);
      imports.set(m[1], from.replace(/\.js$/, "") + ".d.ts");
    }
    fields = new Map();
    const body = text.slice(start, text.indexOf("\n}", start));
    for (const m of body.matchAll(/^ {4}"([^"]+)"\??: (Array<)?(\w+)?/gm)) {
      fields.set(m[1], m[3] && imports.has(m[3]) ? imports.get(m[3]) : null);
    }
  }
  fieldCache.set(dts, fields);
  return fields;
}

// Reports the fields of `value` that its declared type does not have.
function checkFields(where, value, dts) {
  const fields = declaredFields(dts);
  if (fields === null || value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkFields(`${where}[${i}]`, v, dts));
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    if (!fields.has(key)) {
      problem(where, `unknown field "${key}" (${path.basename(dts, ".d.ts")} has ${[...fields.keys()].join(", ")})`);
    } else if (fields.get(key)) {
      checkFields(where.endsWith(": ") ? `${where}${key}` : `${where}.${key}`, v, fields.get(key));
    }
  }
}

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain =
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dns1035Label = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const ianaSvcName = /^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function checkName(where, name, pattern, max, what) {
  if (typeof name !== "string" || name.length === 0) {
    problem(where, `${what} is required`);
  } else if (name.length > max || !pattern.test(name)) {
    problem(where, `${what} '${name}' is not a valid name (${pattern}, at most ${max} characters)`);
  }
}

// Whether every label of `selector` (a LabelSelector) is in `labels`.
function selects(selector, labels) {
  const wanted = selector?.matchLabels ?? {};
  if (Object.keys(wanted).length === 0 && !selector?.matchExpressions?.length) {
    return false;
  }
  for (const [k, v] of Object.entries(wanted)) {
    if (labels?.[k] !== v) return false;
  }
  for (const e of selector?.matchExpressions ?? []) {
    const has = labels && Object.hasOwn(labels, e.key);
    if (e.operator === "In" && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === "NotIn" && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
  }
  return true;
}

function checkProbe(where, probe, ports) {
  if (!probe) return;
  const handlers = ["exec", "httpGet", "tcpSocket", "grpc"].filter((h) => probe[h]);
  if (handlers.length !== 1) {
    problem(where, `must have exactly one handler (exec, httpGet, tcpSocket, grpc), has ${handlers.length}`);
  }
  const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
  if (typeof port === "string" && !ports.has(port)) {
    problem(where, `port '${port}' is not a named port of the container`);
  }
  const number = probe.grpc?.port ?? (typeof port === "number" ? port : undefined);
  if (number !== undefined && !(number >= 1 && number <= 65535)) {
    problem(where, `port ${number} is not in 1..65535`);
  }
  if (probe.exec && !(probe.exec.command?.length > 0)) {
    problem(where, "exec.command is required");
  }
}

// The API server's rules for a pod template's spec (ValidatePodSpec).
function checkPodSpec(where, spec) {
  const volumes = new Set();
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    checkName(`${where}.volumes[${i}]`, v.name, dns1123Label, 63, "name");
    if (volumes.has(v.name)) problem(`${where}.volumes[${i}]`, `duplicate volume '${v.name}'`);
    volumes.add(v.name);
    const sources = Object.keys(v).filter((k) => k !== "name");
    if (sources.length !== 1) {
      problem(`${where}.volumes[${i}]`, `must have exactly one volume source, has ${sources.length}`);
    }
    const mode = v.secret?.defaultMode ?? v.configMap?.defaultMode;
    if (mode !== undefined && !(mode >= 0 && mode <= 0o777)) {
      problem(`${where}.volumes[${i}]`, `defaultMode ${mode} is not in 0..0777 (decimal 0..511)`);
    }
  }
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  if (!(spec.containers?.length > 0)) problem(where, "containers: at least one container is required");
  const names = new Set();
  containers.forEach((c, i) => {
    const at = `${where}.containers[${c.name ?? i}]`;
    checkName(at, c.name, dns1123Label, 63, "name");
    if (names.has(c.name)) problem(at, `duplicate container name '${c.name}'`);
    names.add(c.name);
    if (typeof c.image !== "string" || c.image.trim() === "") {
      problem(at, "image is required");
    }
    const ports = new Set();
    for (const p of c.ports ?? []) {
      if (p.name !== undefined) {
        checkName(`${at}.ports`, p.name, ianaSvcName, 15, "port name");
        ports.add(p.name);
      }
      if (!(p.containerPort >= 1 && p.containerPort <= 65535)) {
        problem(`${at}.ports`, `containerPort ${p.containerPort} is not in 1..65535`);
      }
    }
    for (const m of c.volumeMounts ?? []) {
      if (!volumes.has(m.name)) problem(`${at}.volumeMounts`, `volume '${m.name}' is not declared in volumes`);
      if (!m.mountPath?.startsWith("/")) problem(`${at}.volumeMounts`, `mountPath '${m.mountPath}' is not absolute`);
    }
    for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
      checkProbe(`${at}.${probe}`, c[probe], ports);
    }
    const { limits = {}, requests = {} } = c.resources ?? {};
    for (const [name, value] of Object.entries({ ...requests, ...limits })) {
      if (name.includes("/") && !name.startsWith("kubernetes.io/")) {
        // Extended resources: whole numbers, requests equal to limits.
        if (!/^[0-9]+$/.test(String(value))) {
          problem(`${at}.resources`, `${name}: '${value}' is not a whole number`);
        }
        if (requests[name] !== undefined && String(requests[name]) !== String(limits[name])) {
          problem(`${at}.resources`, `${name}: the request must equal the limit`);
        }
      }
    }
  });
  for (const [i, t] of (spec.tolerations ?? []).entries()) {
    if (t.operator === "Exists" && t.value !== undefined) {
      problem(`${where}.tolerations[${i}]`, "value must be empty when operator is Exists");
    }
  }
}

function podLabels(obj) {
  return obj.spec?.template?.metadata?.labels ?? {};
}

function containerPortNames(obj) {
  const names = new Set();
  for (const c of obj.spec?.template?.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name) names.add(p.name);
  }
  return names;
}

// The problems of `manifests` ([{name, text}], one set of objects that may
// refer to each other), each "name: Kind/object: path: what"; [] when valid.
// `modules` is the node_modules folder holding kubernetes-models and yaml.
export async function validateManifests(modules, manifests) {
  modulesDir = modules;
  YAML = createRequire(path.join(modules, "x.js"))("yaml");
  problems = [];
  const objects = [];
  for (const { name, text } of manifests) {
    checkFile(name, text, objects);
  }
  for (const o of objects) await checkObject(o);
  checkReferences(objects);
  return problems;
}

function checkFile(file, text, objects) {
  for (const doc of YAML.parseAllDocuments(text)) {
    if (doc.errors.length) {
      problem(file, `YAML: ${doc.errors.map((e) => e.message).join("; ")}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    const where = `${path.basename(file)}: ${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    objects.push({ obj, where });
  }
}

async function checkObject({ obj, where }) {
  if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
    problem(where, "apiVersion and kind are required");
    return;
  }
  if (Object.hasOwn(removedApiVersions, obj.apiVersion)) {
    problem(where, `apiVersion ${obj.apiVersion} was removed in Kubernetes ${removedApiVersions[obj.apiVersion]}`);
    return;
  }
  const mod = await modelsFor(obj.apiVersion);
  const Model = mod?.[obj.kind];
  if (typeof Model !== "function" || Model.apiVersion !== obj.apiVersion) {
    problem(where, `no kind ${obj.kind} in apiVersion ${obj.apiVersion} (Kubernetes 1.36)`);
    return;
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    problem(where, `schema: ${e.message}`);
  }
  checkFields(`${where}: `, obj,
              path.join(modulesDir, "kubernetes-models", obj.apiVersion, `${obj.kind}.d.ts`));

  const namespaced = obj.kind !== "Namespace";
  checkName(`${where}: metadata`, obj.metadata?.name,
            obj.kind === "Service" || obj.kind === "Namespace" ? dns1035Label : dns1123Subdomain,
            obj.kind === "Service" || obj.kind === "Namespace" ? 63 : 253, "name");
  if (namespaced && obj.metadata?.namespace !== undefined) {
    checkName(`${where}: metadata`, obj.metadata.namespace, dns1123Label, 63, "namespace");
  }
  if (["Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"].includes(obj.kind)) {
    const sel = obj.spec?.selector;
    if (!sel || !selects(sel, podLabels(obj))) {
      problem(`${where}: spec.selector`, "is required and must match spec.template.metadata.labels");
    }
    if (obj.spec?.template?.spec) checkPodSpec(`${where}: spec.template.spec`, obj.spec.template.spec);
    if (obj.spec?.strategy?.type === "Recreate" && obj.spec.strategy.rollingUpdate) {
      problem(`${where}: spec.strategy`, "rollingUpdate may not be set when type is Recreate");
    }
  }
}

// References between the objects, and Tessera's own rules.
function checkReferences(objects) {
  const byKind = (kind) => objects.filter((o) => o.obj.kind === kind);
  const workloads = [...byKind("Deployment"), ...byKind("DaemonSet")];
  for (const { obj, where } of byKind("Service")) {
    const targets = workloads.filter((w) =>
        w.obj.metadata?.namespace === obj.metadata?.namespace &&
        Object.keys(obj.spec?.selector ?? {}).length > 0 &&
        selects({ matchLabels: obj.spec.selector }, podLabels(w.obj)));
    if (targets.length === 0) {
      problem(`${where}: spec.selector`, "selects no pod template in these manifests");
    }
    for (const p of obj.spec?.ports ?? []) {
      if (typeof p.targetPort === "string" &&
          !targets.some((t) => containerPortNames(t.obj).has(p.targetPort))) {
        problem(`${where}: spec.ports`, `targetPort '${p.targetPort}' is no named port of the selected pods`);
      }
    }
  }
  const claims = new Set(byKind("PersistentVolumeClaim").map((o) => `${o.obj.metadata?.namespace}/${o.obj.metadata?.name}`));
  const namespaces = new Set(byKind("Namespace").map((o) => o.obj.metadata?.name));
  for (const { obj, where } of objects) {
    const ns = obj.metadata?.namespace;
    if (obj.kind !== "Namespace" && namespaces.size > 0 && !namespaces.has(ns)) {
      problem(`${where}: metadata.namespace`, `'${ns}' is not a Namespace of these manifests`);
    }
    for (const v of obj.spec?.template?.spec?.volumes ?? []) {
      const claim = v.persistentVolumeClaim?.claimName;
      if (claim && !claims.has(`${ns}/${claim}`)) {
        problem(`${where}: volumes`, `claim '${claim}' is not a PersistentVolumeClaim of these manifests`);
      }
    }
  }
  const planners = byKind("Deployment").filter((o) => o.obj.metadata?.name === "tessera-planner");
  if (planners.length !== 1) problem("tessera", "no Deployment tessera-planner");
  for (const { obj, where } of planners) {
    if (obj.spec?.replicas !== 1) problem(`${where}: spec.replicas`, "must be 1 (SQLite has one writer)");
    if (obj.spec?.strategy?.type !== "Recreate") problem(`${where}: spec.strategy.type`, "must be Recreate (SQLite has one writer)");
    const vols = obj.spec?.template?.spec?.volumes ?? [];
    if (!vols.some((v) => v.persistentVolumeClaim)) problem(`${where}: volumes`, "the history needs a PersistentVolumeClaim");
  }
  const agents = byKind("DaemonSet").filter((o) => o.obj.metadata?.name === "tessera-agent");
  if (agents.length !== 1) problem("tessera", "no DaemonSet tessera-agent");
  for (const { obj, where } of agents) {
    const spec = obj.spec?.template?.spec ?? {};
    if (!spec.containers?.some((c) => /^[1-9][0-9]*$/.test(String(c.resources?.limits?.["nvidia.com/gpu"] ?? "")))) {
      problem(`${where}: containers`, "no container limits nvidia.com/gpu (the NVIDIA device plugin's resource)");
    }
    if (!(spec.tolerations ?? []).some((t) => t.key === "nvidia.com/gpu")) {
      problem(`${where}: tolerations`, "does not tolerate the nvidia.com/gpu taint");
    }
    const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    const onGpuNodes = Object.keys(spec.nodeSelector ?? {}).some((k) => k.startsWith("nvidia.com/gpu")) ||
        terms.length > 0 && terms.every((t) => (t.matchExpressions ?? []).some((e) => e.key.startsWith("nvidia.com/gpu")));
    if (!onGpuNodes) problem(`${where}: affinity`, "is not limited to nodes with an nvidia.com/gpu label");
  }
}

// Run as a program: validate the files given as one set.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const [modules, ...files] = process.argv.slice(2);
  if (!modules || files.length === 0) {
    console.error("usage: node validate_k8s.mjs NODE_MODULES_DIR FILE.yaml...");
    process.exit(2);
  }
  const manifests = [];
  for (const name of files) {
    try {
      manifests.push({ name, text: fs.readFileSync(name, "utf8") });
    } catch (e) {
      console.error(`validate_k8s: cannot read ${name}: ${e.message}`);
      process.exit(2);
    }
  }
  const found = await validateManifests(modules, manifests);
  for (const p of found) console.log(p);
  console.log(`${files.length} files, ${found.length} problems`);
  process.exit(found.length ? 1 : 0);
}
