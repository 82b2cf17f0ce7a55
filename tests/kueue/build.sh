#!/usr/bin/env bash
# Builds Kueue's controller manager (sigs.k8s.io/kueue/cmd/kueue, the binary of Kueue's image) for
# tests/apply/test_kueue_dws_admission.py, from the Go module proxy by module name only, at the version
# ./go.mod and ./go.sum pin (the pinned chart's, v0.19.2). It also downloads the module, whose
# config/components/crd holds nothing the test needs: the ProvisioningRequest CRD is read from the
# module cache (k8s.io/autoscaler/cluster-autoscaler/apis, Kueue's own pin) by the test.
#
# The binary goes to a cache outside the repository, keyed by a hash of go.mod, go.sum and this script:
#   ${GPU_PLATFORM_KUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/kueue}/<hash>/bin/kueue
# tests/apply/test_kueue_dws_admission.py finds it by the same rule.
# Prints the bin directory on its last line. Needs Go 1.26 (go on PATH or /usr/local/go/bin/go).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

go_bin="$(command -v go || true)"
if [ -z "${go_bin}" ] && [ -x /usr/local/go/bin/go ]; then go_bin=/usr/local/go/bin/go; fi
if [ -z "${go_bin}" ]; then
  echo "tests/kueue/build.sh: needs Go 1.26 (go on PATH) to build Kueue's controller manager" >&2
  exit 2
fi

# The key: the same bytes the test hashes (sha256 over each file's name and content, in this order,
# this script included), first 16 hex digits.
key="$(cd "${here}" && for f in go.mod go.sum build.sh; do printf '%s\n' "${f}"; cat "${f}"; done | sha256sum | cut -c1-16)"
root="${GPU_PLATFORM_KUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/kueue}"
dest="${root}/${key}/bin"
if [ -x "${dest}/kueue" ]; then
  echo "${dest}"
  exit 0
fi

mkdir -p "${root}/${key}"
tmp="$(mktemp -d "${root}/${key}/build.tmp.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
mkdir "${tmp}/bin"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath -buildvcs=false"
version="$(cd "${here}" && "${go_bin}" list -m -f '{{.Version}}' sigs.k8s.io/kueue)"
echo "building Kueue ${version}'s manager into ${dest} (one time)" >&2
(cd "${here}" && "${go_bin}" build \
  -ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=${version}" \
  -o "${tmp}/bin/kueue" sigs.k8s.io/kueue/cmd/kueue)

# Whole or not at all: the finished directory replaces any partial one in one rename.
rm -rf "${dest}"
mv "${tmp}/bin" "${dest}"
echo "${dest}"
