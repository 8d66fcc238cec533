#!/usr/bin/env bash
# Unpacks the Debian packages the executor builds against into carry/ (git
# ignores it), for GPU machines that have a compiler, CMake and the CUDA
# toolkit but no apt: Abseil, nlohmann-json, OpenBLAS (with its Fortran
# runtime), GoogleTest and Google Benchmark. Run it here (a Debian machine
# with apt); the GPU session carries the folder (see deploy/gpu/README.md) and
# configures with -DCMAKE_PREFIX_PATH=$PWD/carry/usr.
#
#   deploy/gpu/carry.sh            # -> carry/usr/{include,lib/x86_64-linux-gnu}
#   deploy/gpu/carry.sh --check    # also verify a build against carry/ alone
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$repo/carry"
check=0
[[ "${1:-}" == "--check" ]] && check=1

packages=(
  libabsl-dev libabsl20220623      # Abseil (status, strings, time, ...)
  nlohmann-json3-dev               # JSON of trial results
  libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread
  libgfortran5 libquadmath0        # OpenBLAS's runtime dependencies
  libgtest-dev libgmock-dev        # the tests (GTest's CMake config names gmock)
  libbenchmark-dev libbenchmark1debian  # bench/
)

debs="$(mktemp -d)"
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download "${packages[@]}")
rm -rf "$dest"
mkdir -p "$dest"
for deb in "$debs"/*.deb; do dpkg -x "$deb" "$dest"; done

# What the packages' maintainer scripts would do: OpenBLAS is reached
# through alternatives, links in the architecture's library folder.
lib="$dest/usr/lib/x86_64-linux-gnu"
for name in libopenblas.so libopenblas.so.0; do
  ln -sfn "openblas-pthread/$name" "$lib/$name"
done
# Not needed, and the carried tree must stay small (it travels with the
# working tree, 64 MiB in all): documentation, sources, OpenBLAS's static
# archive and LAPACK (the CPU backend calls CBLAS only).
rm -rf "$dest/usr/share/doc" "$dest/usr/share/man" "$dest/usr/src"
rm -f "$lib"/openblas-pthread/*.a "$lib"/openblas-pthread/liblapack*

# Ignored by git (as .gitignore's /carry/), also for checkouts without it.
if [[ -d "$repo/.git" ]]; then
  mkdir -p "$repo/.git/info"
  exclude="$repo/.git/info/exclude"
  grep -qx '/carry/' "$exclude" 2>/dev/null || echo '/carry/' >>"$exclude"
fi
echo "carry: $(du -sh "$dest" | cut -f1) in $dest"

if [[ $check -eq 1 ]]; then
  exec "$repo/deploy/gpu/check_carry.sh"
fi
