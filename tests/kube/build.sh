#!/usr/bin/env bash
# Builds the real control plane the apply tests and `gpu-platform preview --apply local` start:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler (module ./k8s, Kubernetes 1.34)
# and kwok (module ./kwok), from the Go module proxy at the versions the go.mod/go.sum files pin.
#
# The binaries go to a cache outside the repository, keyed by a hash of those files and this script:
#   ${GPU_PLATFORM_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/kube}/<hash>/bin
# with kwok's default stages beside them (kwok-stages.yaml); infra/apply/local.py finds them by the
# same rule. A complete cache entry is reused as is; Go's own module and build caches make a
# rebuild after a version change incremental.
# Prints the bin directory on its last line. Needs Go 1.26 (go on PATH or /usr/local/go/bin/go).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

go_bin="$(command -v go || true)"
if [ -z "${go_bin}" ] && [ -x /usr/local/go/bin/go ]; then go_bin=/usr/local/go/bin/go; fi
if [ -z "${go_bin}" ]; then
  echo "tests/kube/build.sh: needs Go 1.26 (go on PATH) to build the control plane" >&2
  exit 2
fi

# The key: the same bytes infra/apply/local.py hashes (sha256 over each file's name and content,
# in this order, this script included), first 16 hex digits.
key="$(cd "${here}" && for f in k8s/go.mod k8s/go.sum kwok/go.mod kwok/go.sum build.sh; do
         printf '%s\n' "${f}"; cat "${f}"; done | sha256sum | cut -c1-16)"
root="${GPU_PLATFORM_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/kube}"
dest="${root}/${key}/bin"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
stages="kwok-stages.yaml"

complete=1
for b in "${binaries[@]}"; do [ -x "${dest}/${b}" ] || complete=0; done
[ -s "${dest}/${stages}" ] || complete=0
if [ "${complete}" = 1 ]; then
  echo "${dest}"
  exit 0
fi

mkdir -p "${root}/${key}"
tmp="$(mktemp -d "${root}/${key}/bin.tmp.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
ldflags="-s -w"
# The version the Kubernetes binaries report (/version, kubectl version), stamped as Kubernetes' own
# build does (hack/lib/version.sh): the k8s.io/kubernetes version go.mod pins.
k8s_version="$(cd "${here}/k8s" && "${go_bin}" list -m -f '{{.Version}}' k8s.io/kubernetes)"
k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="${ldflags} -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1
  -X k8s.io/component-base/version.gitMinor=${k8s_minor} -X k8s.io/component-base/version.gitTreeState=clean"
k8s_ldflags="$(echo ${k8s_ldflags})"
echo "building the control plane into ${dest} (one time; several minutes on 2 cores)" >&2
(cd "${here}/k8s" \
  && "${go_bin}" build -ldflags="${ldflags}" -o "${tmp}/etcd" go.etcd.io/etcd/server/v3 \
  && "${go_bin}" build -ldflags="${k8s_ldflags}" -o "${tmp}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver \
  && "${go_bin}" build -ldflags="${k8s_ldflags}" -o "${tmp}/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager \
  && "${go_bin}" build -ldflags="${k8s_ldflags}" -o "${tmp}/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler)
(cd "${here}/kwok" && "${go_bin}" build -ldflags="${ldflags}" -o "${tmp}/kwok" sigs.k8s.io/kwok/cmd/kwok)

# The kwok binary runs no stage unless its --config names some; kwokctl passes its defaults, the
# YAML files of the same module (node initialize, heartbeat with lease; pod ready, complete,
# delete). They are copied from the module here, at the pinned version, never committed.
kwok_dir="$(cd "${here}/kwok" && "${go_bin}" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
         pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  printf -- '---\n'; cat "${kwok_dir}/kustomize/stage/${f}"
done > "${tmp}/${stages}"

# Whole or not at all: the finished directory replaces any partial one in one rename.
rm -rf "${dest}"
mv "${tmp}" "${dest}"
trap - EXIT
echo "${dest}"
