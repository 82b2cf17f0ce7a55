#!/usr/bin/env bash
# Builds the real Pulumi engine the engine tests (tests/engine) run: the Pulumi CLI (module ./pulumi:
# github.com/pulumi/pulumi/pkg/v3/cmd/pulumi) and the Kubernetes provider pulumi-resource-kubernetes
# (module ./kubernetes: github.com/pulumi/pulumi-kubernetes/provider/v4), from the Go module proxy by
# module name only, at the versions the go.mod/go.sum files pin. No language host is built: the tests
# run their Python programs through the Automation API's inline program, which the SDK hosts itself.
#
# The binaries go to a cache outside the repository, keyed by a hash of those files and this script:
#   ${GPU_PLATFORM_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/engine}/<hash>/bin
# tests/engine/conftest.py finds them by the same rule. A complete cache entry is reused as is; Go's
# own module and build caches make a rebuild after a version change incremental.
# Prints the bin directory on its last line. Needs Go 1.26 (1.26.6 or later: pkg/v3's own go line;
# go on PATH or /usr/local/go/bin/go). About 15-25 min and ~4 GB of memory on 2 cores the first time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

go_bin="$(command -v go || true)"
if [ -z "${go_bin}" ] && [ -x /usr/local/go/bin/go ]; then go_bin=/usr/local/go/bin/go; fi
if [ -z "${go_bin}" ]; then
  echo "tests/engine/build.sh: needs Go 1.26 (go on PATH) to build the Pulumi CLI and the Kubernetes provider" >&2
  exit 2
fi

# The key: the same bytes tests/engine/conftest.py hashes (sha256 over each file's name and content,
# in this order, this script included), first 16 hex digits.
key="$(cd "${here}" && for f in pulumi/go.mod pulumi/go.sum kubernetes/go.mod kubernetes/go.sum build.sh; do
         printf '%s\n' "${f}"; cat "${f}"; done | sha256sum | cut -c1-16)"
root="${GPU_PLATFORM_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/engine}"
dest="${root}/${key}/bin"
binaries=(pulumi pulumi-resource-kubernetes)

complete=1
for b in "${binaries[@]}"; do [ -x "${dest}/${b}" ] || complete=0; done
if [ "${complete}" = 1 ]; then
  echo "${dest}"
  exit 0
fi

mkdir -p "${root}/${key}"
tmp="$(mktemp -d "${root}/${key}/build.tmp.XXXXXX")"
trap 'chmod -R u+w "${tmp}" 2>/dev/null; rm -rf "${tmp}"' EXIT
mkdir "${tmp}/bin"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath -buildvcs=false"
ldflags="-s -w"
echo "building the Pulumi engine into ${dest} (one time; 15-25 min on 2 cores)" >&2

# The Kubernetes provider. Its main package embeds schema-embed.json and terraform-mapping-embed.json,
# which its `go generate` (generate.go) writes from the module's schema.json with the release version:
# the module cache is read-only, so this runs in a copy of the module in the build folder (removed
# after), never in the cache and never committed. The copy is then built from ./kubernetes's
# requirements (a copy of its go.mod replacing the provider by the generated copy): the same module
# graph, so its go.sum pins every other module.
provider_module=github.com/pulumi/pulumi-kubernetes/provider/v4
provider_version="$(cd "${here}/kubernetes" && "${go_bin}" list -m -f '{{.Version}}' github.com/pulumi/pulumi-kubernetes/sdk/v4)"
provider_version="${provider_version#v}"  # the release whose commit the pseudo-version names (sdk/v4 at that release)
(cd "${here}/kubernetes" && "${go_bin}" mod download "${provider_module}")
provider_dir="$(cd "${here}/kubernetes" && "${go_bin}" list -m -f '{{.Dir}}' "${provider_module}")"
cp -R "${provider_dir}/." "${tmp}/provider"
chmod -R u+w "${tmp}/provider"
mkdir "${tmp}/pinned" "${tmp}/module"
cp "${here}/kubernetes/go.mod" "${here}/kubernetes/go.sum" "${tmp}/pinned/"
cp "${here}/kubernetes/go.mod" "${here}/kubernetes/go.sum" "${tmp}/module/"
(cd "${tmp}/module" && "${go_bin}" mod edit -replace="${provider_module}=${tmp}/provider")
# generate.go runs as `go run` from go:generate; -modfile (in GOFLAGS, so the nested go run sees it too)
# resolves its imports from ./kubernetes's pins instead of the copy's go.mod (whose replace of sdk/v4
# points at a ../sdk that is not in the module).
(cd "${tmp}/provider/cmd/pulumi-resource-kubernetes" \
  && GOFLAGS="${GOFLAGS} -modfile=${tmp}/pinned/go.mod" VERSION="${provider_version}" "${go_bin}" generate ./main.go)
(cd "${tmp}/module" && "${go_bin}" build \
  -ldflags="${ldflags} -X ${provider_module}/pkg/version.Version=${provider_version}" \
  -o "${tmp}/bin/pulumi-resource-kubernetes" "${provider_module}/cmd/pulumi-resource-kubernetes")

# The CLI, stamped with its module's version as Pulumi's own release build does (`pulumi version`).
cli_version="$(cd "${here}/pulumi" && "${go_bin}" list -m -f '{{.Version}}' github.com/pulumi/pulumi/pkg/v3)"
(cd "${here}/pulumi" && "${go_bin}" build \
  -ldflags="${ldflags} -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=${cli_version}" \
  -o "${tmp}/bin/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)

# Whole or not at all: the finished directory replaces any partial one in one rename.
rm -rf "${dest}"
mv "${tmp}/bin" "${dest}"
echo "${dest}"
