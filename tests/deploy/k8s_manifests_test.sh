#!/usr/bin/env bash
# deploy/k8s validated offline against the Kubernetes 1.36 schemas and the
# API server's rules (validate_k8s.mjs, with the npm package
# kubernetes-models pinned in k8s-validator/package-lock.json), and each of
# a set of broken copies (k8s_broken_copies.mjs) rejected with the expected message.
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

echo "== broken copies"
node "$here/k8s_broken_copies.mjs" "$modules" "$src"/deploy/k8s/*.yaml
