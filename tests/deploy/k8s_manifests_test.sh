#!/usr/bin/env bash
# deploy/k8s validated offline against the Kubernetes 1.34 schemas and the
# API server's rules (validate_k8s.mjs, with the npm package
# kubernetes-models pinned in k8s-validator/package-lock.json), and each of
# a set of broken copies (mutate_k8s.mjs) rejected with the expected message.
#   k8s_manifests_test.sh SOURCE_DIR WORK_DIR
# Exit 77 (ctest: skipped) without node and npm.
set -euo pipefail
src=$1
work=$2
here=$src/tests/deploy

if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "SKIP: node and npm are needed (deploy/install-deps.sh --tests installs them)"
  exit 77
fi

# The validator's packages, installed from the lock file once per lock.
validator=$work/k8s-validator
mkdir -p "$validator"
if ! cmp -s "$here/k8s-validator/package-lock.json" "$validator/package-lock.json" ||
   [ ! -d "$validator/node_modules/kubernetes-models" ]; then
  cp "$here/k8s-validator/package.json" "$here/k8s-validator/package-lock.json" "$validator/"
  (cd "$validator" && npm ci --no-audit --no-fund --loglevel=error) || {
    echo "FAIL: npm ci of kubernetes-models and yaml (tests/deploy/k8s-validator) failed"
    exit 1
  }
fi
modules=$validator/node_modules

echo "== deploy/k8s as shipped"
node "$here/validate_k8s.mjs" "$modules" "$src"/deploy/k8s/*.yaml

all=$work/all.yaml
: > "$all"
for f in "$src"/deploy/k8s/*.yaml; do cat "$f"; echo "---"; done >> "$all"
node "$here/validate_k8s.mjs" "$modules" "$all" > /dev/null

# mutation|a fragment the validator must print for it
cases=(
  "deployment-without-selector|must have required property selector"
  "selector-not-matching-template|must match spec.template.metadata.labels"
  "container-without-image|image is required"
  "misspelt-apiversion|no kind Deployment in apiVersion app/v1"
  "removed-apiversion|apiVersion extensions/v1beta1 was removed"
  "kind-not-in-apiversion|no kind Service in apiVersion apps/v1"
  "port-as-string|containerPort must be integer"
  "unknown-strategy|must be equal to one of the allowed values"
  "rolling-planner|must be Recreate"
  "two-planners|must be 1 (SQLite has one writer)"
  "probe-on-undeclared-port|port 'http' is not a named port"
  "mount-of-undeclared-volume|volume 'tmp' is not declared"
  "claim-not-declared|is not a PersistentVolumeClaim of these manifests"
  "service-selects-nothing|selects no pod template"
  "agent-without-gpu|no container limits nvidia.com/gpu"
  "agent-without-toleration|does not tolerate the nvidia.com/gpu taint"
  "fractional-gpu|'0.5' is not a whole number"
)
failed=0
for c in "${cases[@]}"; do
  mutation=${c%%|*}
  expected=${c#*|}
  broken=$work/$mutation.yaml
  node "$here/mutate_k8s.mjs" "$modules" "$mutation" "$all" "$broken"
  status=0
  out=$(node "$here/validate_k8s.mjs" "$modules" "$broken") || status=$?
  if [ "$status" -ne 1 ] || ! grep -qF -- "$expected" <<< "$out"; then
    echo "FAIL: $mutation: exit $status (want 1), want a line with '$expected'; got:"
    echo "$out"
    failed=$((failed + 1))
  else
    echo "rejected $mutation: $(grep -F -- "$expected" <<< "$out" | head -n 1)"
  fi
done
echo "${#cases[@]} broken copies, $failed accepted or rejected for another reason"
[ "$failed" -eq 0 ]
