"""What to build for each component: module path, main packages, and version stamping.

Pure data and pure functions; `gobuild` does the I/O. Kubernetes needs a replace line per staging
module (its go.mod pins them at the fake v0.0.0) and version ldflags, because Kueue exits at
start-up when the apiserver's /version is not valid semver.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import UserError


@dataclass(frozen=True)
class Recipe:
    component: str
    module: str
    binaries: dict[str, str]  # binary name -> main package
    version_vars: tuple[str, ...] = field(default=())  # -X <var>=<version>


RECIPES: dict[str, Recipe] = {
    "etcd": Recipe("etcd", "go.etcd.io/etcd/server/v3", {"etcd": "go.etcd.io/etcd/server/v3"}),
    "kubernetes": Recipe(
        "kubernetes",
        "k8s.io/kubernetes",
        {
            "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
            "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
            "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
            "kubectl": "k8s.io/kubernetes/cmd/kubectl",
        },
    ),
    "kwok": Recipe("kwok", "sigs.k8s.io/kwok", {"kwok": "sigs.k8s.io/kwok/cmd/kwok"}),
    "lws": Recipe(
        "lws",
        "sigs.k8s.io/lws",
        {"lws": "sigs.k8s.io/lws/cmd"},
        ("sigs.k8s.io/lws/pkg/version.GitVersion",),
    ),
    "kueue": Recipe(
        "kueue",
        "sigs.k8s.io/kueue",
        {"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
        ("sigs.k8s.io/kueue/pkg/version.GitVersion",),
    ),
}

# What only the kind provider needs: the node's own Kubernetes binaries (and the e2e test image
# agnhost, from the same module set as the control plane), kind itself, CoreDNS and crictl.
# Built on demand (`lwsc build --kind`, or the first `lwsc --profile kind up`), never for the
# local cluster. Versions: kubernetes-node follows versions.kubernetes; the others are kind.* keys.
KIND_RECIPES: dict[str, Recipe] = {
    "kubernetes-node": Recipe(
        "kubernetes-node",
        "k8s.io/kubernetes",
        {
            "kubelet": "k8s.io/kubernetes/cmd/kubelet",
            "kubeadm": "k8s.io/kubernetes/cmd/kubeadm",
            "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
            "agnhost": "k8s.io/kubernetes/test/images/agnhost",
        },
    ),
    "kind": Recipe("kind", "sigs.k8s.io/kind", {"kind": "sigs.k8s.io/kind"}),
    "coredns": Recipe("coredns", "github.com/coredns/coredns", {"coredns": "github.com/coredns/coredns"}),
    "crictl": Recipe("crictl", "sigs.k8s.io/cri-tools", {"crictl": "sigs.k8s.io/cri-tools/cmd/crictl"}),
}
ALL_RECIPES = {**RECIPES, **KIND_RECIPES}

BINARY_COMPONENT = {b: r.component for r in RECIPES.values() for b in r.binaries}

_K8S_VERSION = re.compile(r"^v1\.(\d+)\.(\d+)$")
_STAGING_REPLACE = re.compile(r"^\s*(k8s\.io/[A-Za-z0-9._-]+)\s+=>\s+\./staging/", re.M)


def kubernetes_staging_replaces(k8s_go_mod: str, version: str) -> dict[str, str]:
    """Map every staging module in k8s.io/kubernetes's go.mod to its published v0.X.Y twin."""
    m = _K8S_VERSION.match(version)
    if not m:
        raise ValueError(f"kubernetes version {version!r} is not a release like v1.36.3")
    staging_version = f"v0.{m.group(1)}.{m.group(2)}"
    return {mod: staging_version for mod in sorted(set(_STAGING_REPLACE.findall(k8s_go_mod)))}


def ldflags(recipe: Recipe, version: str) -> str:
    """Linker flags: strip symbols, and stamp the version where the component reads it."""
    flags = ["-s", "-w"]
    for var in recipe.version_vars:
        flags.append(f"-X {var}={version}")
    if recipe.module == "k8s.io/kubernetes":
        m = _K8S_VERSION.match(version)
        if not m:
            raise ValueError(f"kubernetes version {version!r} is not a release like v1.36.3")
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [
                f"-X {pkg}.gitVersion={version}",
                f"-X {pkg}.gitMajor=1",
                f"-X {pkg}.gitMinor={m.group(1)}",
                f"-X {pkg}.gitTreeState=clean",
                f"-X {pkg}.gitCommit=0000000000000000000000000000000000000000",
                f"-X {pkg}.buildDate=1970-01-01T00:00:00Z",
            ]
    return " ".join(flags)


# Components a coverage build (profile key build.coverage) instruments: the controllers under test.
COVERAGE_COMPONENTS = ("lws", "kueue")


def cover_flags(recipe: Recipe) -> list[str]:
    """`go build` flags of a coverage-instrumented build: every package of the component's own
    module counted (atomic counters: the controllers are concurrent), none of its dependencies.
    The binary writes its counters to $GOCOVERDIR when it exits normally (main returns or
    os.Exit, which a controller does on SIGTERM), not when it is killed."""
    if recipe.component not in COVERAGE_COMPONENTS:
        raise ValueError(f"{recipe.component} is not built with coverage (only {', '.join(COVERAGE_COMPONENTS)})")
    return ["-cover", "-covermode=atomic", f"-coverpkg={recipe.module}/..."]


def check_replace(recipe: Recipe, replaces: Mapping[str, str]) -> None:
    """A component's go_replace may not replace its own module: that is what sources.<c> does."""
    if recipe.module in replaces:
        raise UserError(
            f"build.go_replace.{recipe.component} replaces {recipe.module} itself; use sources.{recipe.component}"
        )


def wrapper_go_mod(recipe: Recipe, version: str, replaces: Mapping[str, str], source: str | None) -> str:
    """go.mod of the throw-away module that builds `recipe` (replace lines in deps are ignored,
    so wrapping is what lets `go build` accept etcd and kubernetes). `replaces`: module -> a
    version, or an absolute directory."""
    lines = [f"module local/lwsc-build/{recipe.component}", "", "go 1.26.0", ""]
    lines.append(f"require {recipe.module} {'v0.0.0' if source else version}")
    lines.append("")
    check_replace(recipe, replaces)
    for mod, target in replaces.items():
        lines.append(f"replace {mod} => {target}" if target.startswith("/") else f"replace {mod} => {mod} {target}")
    if source:
        lines.append(f"replace {recipe.module} => {source}")
    return "\n".join(lines) + "\n"


def tools_go(recipe: Recipe) -> str:
    imports = "\n".join(f'\t_ "{pkg}"' for pkg in recipe.binaries.values())
    return f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
