"""Profiles: the one typed description of what to bring up (versions, topology, ports).

A profile is a YAML file in `fixtures/profiles/` (or a path). `extends:` layers one profile on
another and `--set a.b=c` overrides single keys. Unknown keys are a `UserError`, not a silent
no-op: a typo like `topology.rack=4` must not run the default topology and report green.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import resources
from .errors import UserError
from .gitsource import replacement
from .gitsource import resolve as resolve_source

PROFILES_DIR = resources.fixtures() / "profiles"
COMPONENTS = ("etcd", "kubernetes", "kwok", "lws", "kueue")
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "lws",
    "kueue",
)
PROVIDERS = ("local", "kind", "existing")
RESOLVED_FILE = "profile.resolved.yaml"  # the run's profile as `lwsc` resolved it, beside the run's reports
LOADS_ENV = "LWSC_PROFILE_LOADS"  # a file each profile load appends one line to (`pid kind what`): counts loads
VERSION = re.compile(r"^v\d+\.\d+\.\d+([-+][0-9A-Za-z.@-]+)?$")  # v1.2.3, or v0.10.0+main@060ab4d


@dataclass(frozen=True)
class Topology:
    """Fake node layout: blocks x racks x nodes, each node with `gpus_per_node` GPUs."""

    blocks: int
    racks_per_block: int
    nodes_per_rack: int
    gpus_per_node: int
    cpu_per_node: str
    memory_per_node: str
    pods_per_node: int
    gpu_resource: str
    block_label: str
    rack_label: str
    hostname_label: str

    @property
    def racks(self) -> int:
        return self.blocks * self.racks_per_block

    @property
    def nodes(self) -> int:
        return self.racks * self.nodes_per_rack

    @property
    def gpus_per_rack(self) -> int:
        return self.nodes_per_rack * self.gpus_per_node


@dataclass(frozen=True)
class Profile:
    """A fully merged, validated profile: built by `load_profile` (from its sources and --set),
    read back from the file `write_resolved` wrote, or derived from one (`with_overrides`)."""

    name: str
    versions: dict[str, str]
    sources: dict[str, str | None]
    binaries: dict[str, str | None]
    topology: Topology
    kueue_topology_name: str
    kueue_flavor_name: str
    base_port: int
    ready_seconds: float
    raw: dict[str, Any]
    provider: str = "local"
    timeout_scale: float = 1.0  # timeouts.scale: every suite deadline and watched window
    node_grace_seconds: int = 40  # timeouts.node_grace_seconds: a silent node's time to NotReady
    private_node_grace_seconds: int = 20  # timeouts.private_node_grace_seconds: the same on private clusters
    snapshots: bool = True  # snapshots: local clusters start from a provisioned-state snapshot
    kueue_manage_unlabelled: bool = False  # kueue.manage_jobs_without_queue_name
    # kueue.pods_ready_timeout_seconds and kueue.pods_ready_backoff_base_seconds (None: Kueue's own)
    kueue_pods_ready: tuple[int, int | None] | None = None
    kueue_feature_gates: dict[str, bool] = dataclasses.field(default_factory=dict)  # kueue.feature_gates
    # build.go_replace.<component>: module -> version or absolute directory, a go.mod replace line
    # each in that component's build (a dependency the module proxy does not serve)
    go_replace: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    explicit: frozenset[str] = frozenset()  # components whose version was set explicitly (profile or --set)

    def with_overrides(self, settings: Sequence[str]) -> Profile:
        """This profile with KEY=VALUE `settings` applied as --set applies them (a private
        cluster's settings, its `network.base_port`), validated as `load_profile` validates; what
        the settings leave alone (a source tree, a go_replace target) is not resolved again."""
        if not settings:
            return self
        data = copy.deepcopy(self.raw)
        explicit = set(self.explicit)
        for assignment in settings:
            _apply_set(data, assignment)
            if assignment.startswith("versions."):
                explicit.add(assignment.partition("=")[0].strip().removeprefix("versions."))
        _check_keys(data, _read("default"), "")
        try:
            return _build(self.name, data, explicit, known=self)
        except (TypeError, ValueError) as exc:
            raise UserError(f"profile '{self.name}' with {' '.join(settings)}: {exc}") from None

    def resolved(self) -> dict[str, Any]:
        """Everything this profile is, as plain data (`from_resolved` builds it back)."""
        return {
            "name": self.name,
            "raw": self.raw,
            "explicit": sorted(self.explicit),
            "resolved": {
                "versions": dict(self.versions),
                "sources": dict(self.sources),
                "go_replace": {c: dict(r) for c, r in self.go_replace.items()},
            },
        }

    def write_resolved(self, path: Path) -> Path:
        """The profile as resolved here, for another process (`read_resolved`)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "# the profile of this run as lwsc resolved it (--profile merged with --set, sources resolved)\n"
            + yaml.safe_dump(self.resolved(), sort_keys=False)
        )
        return path

    def private(self) -> Profile:
        """This profile as the private clusters run it: their nodes go NotReady after
        `timeouts.private_node_grace_seconds` (the node-failure tests wait that out there)."""
        return dataclasses.replace(self, node_grace_seconds=self.private_node_grace_seconds)

    def upgrade_starts(self, component: str) -> list[Profile]:
        """The profiles groups start under before an in-place upgrade of `component` to this one:
        one per version in `upgrade.<component>_from` (module version, no source override)."""
        starts = (self.raw.get("upgrade") or {}).get(f"{component}_from") or []
        return [self.upgrade_start(component, str(v)) for v in (starts if isinstance(starts, list) else [starts])]

    def upgrade_start(self, component: str, version: str) -> Profile:
        """This profile with `component` at module version `version` (no source, no binary override,
        no go_replace, `component` not coverage-instrumented: coverage counts the versions under
        test only)."""
        build = self.raw.get("build") or {}
        covered = build.get("coverage")
        kept = [c for c in (("lws", "kueue") if covered is True else covered or []) if c != component]
        raw = {**self.raw, "build": {**build, "coverage": kept or False}}
        return dataclasses.replace(
            self,
            versions={**self.versions, component: version},
            sources={**self.sources, component: None},
            binaries={**self.binaries, component: None},
            raw=raw,
            go_replace={c: r for c, r in self.go_replace.items() if c != component},
        )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read(name_or_path: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
        raise UserError(f"profile '{name_or_path}' not found; use one of: {known} (or a path)")
    if str(path) in seen:
        raise UserError(f"profile {path} extends itself; fix its 'extends:' chain")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"profile {path} is not valid YAML: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise UserError(f"profile {path} must be a mapping at top level")
    parent = data.pop("extends", None)
    if parent:
        return _merge(_read(str(parent), (*seen, str(path))), data)
    return data


def _check_keys(data: Any, schema: Any, where: str) -> None:
    """Reject any key of `data` that the default schema does not have; an empty mapping in the
    schema (kueue.feature_gates) takes any key, its values checked where the profile is built."""
    if not isinstance(schema, dict):
        return
    if not isinstance(data, dict):
        raise UserError(f"profile key '{where}' must be a mapping")
    if not schema:
        return
    for key, value in data.items():
        if key not in schema:
            path = f"{where}.{key}" if where else key
            valid = ", ".join(sorted(str(k) for k in schema))
            raise UserError(f"unknown profile key '{path}'; valid keys here: {valid}")
        _check_keys(value, schema[key], f"{where}.{key}" if where else str(key))


def _apply_set(data: dict[str, Any], assignment: str) -> None:
    if "=" not in assignment:
        raise UserError(f"--set '{assignment}' must look like key.path=value")
    key, _, text = assignment.partition("=")
    value = yaml.safe_load(text) if text else None
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise UserError(f"--set '{assignment}': '{part}' is not a mapping")
    node[parts[-1]] = value


def port_given(profile: Profile, overrides: list[str]) -> bool:
    """Did the user choose `network.base_port` (a --set, or a profile other than the default's)?"""
    default = _read("default")["network"]["base_port"]
    return any(kv.strip().startswith("network.base_port=") for kv in overrides) or profile.base_port != default


def _count(kind: str, what: str) -> None:
    """One line per profile load in the file $LWSC_PROFILE_LOADS names (unset: nothing)."""
    record = os.environ.get(LOADS_ENV)
    if record:
        with open(record, "a") as fh:
            fh.write(f"{os.getpid()} {kind} {what}\n")


def from_resolved(doc: dict[str, Any]) -> Profile:
    """The profile `Profile.resolved` describes, validated again, nothing resolved again."""
    try:
        return _build(str(doc["name"]), doc["raw"], set(doc.get("explicit") or ()), resolved=doc["resolved"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"resolved profile of profile {doc.get('name')!r} is not usable: {exc}") from None


def read_resolved(path: Path) -> Profile:
    """The profile `Profile.write_resolved` wrote to `path` (a run's profile.resolved.yaml)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read the resolved profile {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path} is not a resolved profile (written by `lwsc run`)")
    _count("read", str(path))
    return from_resolved(doc)


def load_profile(name: str = "default", overrides: list[str] | None = None) -> Profile:
    """Load, merge and validate a profile; every problem is a one-line `UserError`."""
    _count("resolve", " ".join([name, *(overrides or [])]))
    schema = _read("default")
    data = _merge(schema, _read(name)) if name != "default" else copy.deepcopy(schema)
    explicit = set(_read(name).get("versions") or {}) if name != "default" else set()
    for assignment in overrides or []:
        _apply_set(data, assignment)
        if assignment.startswith("versions."):
            explicit.add(assignment.partition("=")[0].strip().removeprefix("versions."))
    _check_keys(data, schema, "")
    try:
        return _build(name, data, explicit)
    except (TypeError, ValueError) as exc:
        raise UserError(f"profile '{name}': {exc}") from None


def _grace(timeouts: dict[str, Any], key: str, default: int) -> int:
    grace = timeouts.get(key, default)
    if isinstance(grace, bool) or not isinstance(grace, int) or not 8 <= grace <= 600:
        raise ValueError(f"timeouts.{key} must be an integer in 8..600, got {grace!r}")
    return grace


def _pods_ready(kueue: dict[str, Any]) -> tuple[int, int | None] | None:
    timeout, backoff = kueue.get("pods_ready_timeout_seconds"), kueue.get("pods_ready_backoff_base_seconds")
    for key, value in (("pods_ready_timeout_seconds", timeout), ("pods_ready_backoff_base_seconds", backoff)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 86400):
            raise ValueError(f"kueue.{key} must be null or an integer in 1..86400, got {value!r}")
    if timeout is None:
        if backoff is not None:
            raise ValueError("kueue.pods_ready_backoff_base_seconds needs kueue.pods_ready_timeout_seconds")
        return None
    return timeout, backoff


def _feature_gates(kueue: dict[str, Any]) -> dict[str, bool]:
    gates = kueue.get("feature_gates") or {}
    if not isinstance(gates, dict):
        raise ValueError(f"kueue.feature_gates must be a mapping of gate names to true or false, got {gates!r}")
    for gate, on in gates.items():
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", str(gate)) or not isinstance(on, bool):
            raise ValueError(
                f"kueue.feature_gates.{gate} must be a gate name (e.g. ShortWorkloadNames) set to true or false"
            )
    return {str(g): bool(on) for g, on in gates.items()}


def _go_replace(build: dict[str, Any]) -> dict[str, dict[str, str]]:
    """build.go_replace.<component>: a list of `module=target` (`lwsc --set
    build.go_replace.kueue=[sigs.k8s.io/lws=DIR@v0.10.0]`); targets resolved once, here."""
    out: dict[str, dict[str, str]] = {}
    for comp, items in (build.get("go_replace") or {}).items():
        key = f"build.go_replace.{comp}"
        if not isinstance(items, list):
            raise ValueError(f"{key} must be a list of module=target, got {items!r}")
        for item in items:
            module, _, target = str(item).partition("=")
            if not module.strip() or not target.strip() or "." not in module.split("/")[0]:
                raise ValueError(f"{key}: {item!r} must look like example.com/module=v1.2.3 (or =DIR, =DIR@REF)")
            out.setdefault(comp, {})[module.strip()] = replacement(key, module.strip(), target.strip())
    return out


def _positive(data: dict[str, Any], key: str) -> int:
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"topology.{key} must be a positive integer, got {value!r}")
    return value


def _build(
    name: str,
    data: dict[str, Any],
    explicit: set[str] | None = None,
    *,
    known: Profile | None = None,
    resolved: dict[str, Any] | None = None,
) -> Profile:
    """The profile of merged `data`. Sources and go_replace targets are resolved here, except
    those `resolved` gives (read back from a resolved profile) or `known` resolved already from the
    same declaration (a profile derived from it)."""
    versions = {k: str(v) for k, v in data["versions"].items()}
    for comp, ver in versions.items():
        if not VERSION.match(ver):
            raise ValueError(f"versions.{comp}={ver!r} is not a version like v1.2.3")
    sources = {k: (str(v) if v else None) for k, v in data["sources"].items()}
    for comp, spec in sources.items():
        if resolved is not None:
            sources[comp] = resolved["sources"].get(comp)
            versions[comp] = str(resolved["versions"].get(comp, versions[comp]))
        elif spec and known is not None and _same(known.raw, data, comp):  # resolved already
            sources[comp], versions[comp] = known.sources[comp], known.versions[comp]
        elif spec:  # a git DIR@REF or a checkout: build that tree, report its real version
            found = resolve_source(comp, spec, versions[comp], comp in (explicit or set()))
            sources[comp], versions[comp] = str(found.path), found.version
    for kind in ("binaries",):
        for comp, path in data[kind].items():
            if path is not None and not Path(str(path)).exists():
                raise ValueError(f"{kind}.{comp}={path} does not exist; give an existing path")
    t = data["topology"]
    topology = Topology(
        blocks=_positive(t, "blocks"),
        racks_per_block=_positive(t, "racks_per_block"),
        nodes_per_rack=_positive(t, "nodes_per_rack"),
        gpus_per_node=_positive(t, "gpus_per_node"),
        cpu_per_node=str(t["cpu_per_node"]),
        memory_per_node=str(t["memory_per_node"]),
        pods_per_node=_positive(t, "pods_per_node"),
        gpu_resource=str(t["gpu_resource"]),
        block_label=str(t["block_label"]),
        rack_label=str(t["rack_label"]),
        hostname_label=str(t["hostname_label"]),
    )
    provider = data.get("provider", "local")
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    base_port = data["network"]["base_port"]
    if not isinstance(base_port, int) or not 1024 <= base_port <= 65000:
        raise ValueError(f"network.base_port must be an integer in 1024..65000, got {base_port!r}")
    manage = data["kueue"].get("manage_jobs_without_queue_name", False)
    if not isinstance(manage, bool):
        raise ValueError(f"kueue.manage_jobs_without_queue_name must be true or false, got {manage!r}")
    pods_ready = _pods_ready(data["kueue"])
    scale = data["timeouts"].get("scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not 0.1 <= scale <= 100:
        raise ValueError(f"timeouts.scale must be a number in 0.1..100, got {scale!r}")
    grace = _grace(data["timeouts"], "node_grace_seconds", 40)
    private_grace = _grace(data["timeouts"], "private_node_grace_seconds", 20)
    coverage = (data.get("build") or {}).get("coverage", False)
    if not isinstance(coverage, bool) and not (isinstance(coverage, list) and set(coverage) <= {"lws", "kueue"}):
        raise ValueError(f"build.coverage must be true, false or a list of lws and kueue, got {coverage!r}")
    snapshots = data.get("snapshots", True)
    if not isinstance(snapshots, bool):
        raise ValueError(f"snapshots must be true or false, got {snapshots!r}")
    return Profile(
        name=name,
        versions=versions,
        sources=sources,
        binaries={k: (str(v) if v else None) for k, v in data["binaries"].items()},
        topology=topology,
        kueue_topology_name=str(data["kueue"]["topology_name"]),
        kueue_flavor_name=str(data["kueue"]["flavor_name"]),
        base_port=base_port,
        ready_seconds=float(data["timeouts"]["ready_seconds"]),
        raw=data,
        provider=provider,
        timeout_scale=float(scale),
        node_grace_seconds=grace,
        private_node_grace_seconds=private_grace,
        snapshots=snapshots,
        kueue_manage_unlabelled=manage,
        kueue_pods_ready=pods_ready,
        kueue_feature_gates=_feature_gates(data["kueue"]),
        go_replace=_go_replace_of(data, known, resolved),
        explicit=frozenset(explicit or ()),
    )


def _same(before: dict[str, Any], after: dict[str, Any], comp: str) -> bool:
    """Does `comp` have the same declared version and source in both merged profiles?"""
    return all((before.get(k) or {}).get(comp) == (after.get(k) or {}).get(comp) for k in ("versions", "sources"))


def _go_replace_of(
    data: dict[str, Any], known: Profile | None, resolved: dict[str, Any] | None
) -> dict[str, dict[str, str]]:
    if resolved is not None:
        return {str(c): {str(m): str(t) for m, t in r.items()} for c, r in (resolved.get("go_replace") or {}).items()}
    declared = (data.get("build") or {}).get("go_replace")
    if known is not None and declared == (known.raw.get("build") or {}).get("go_replace"):
        return {c: dict(r) for c, r in known.go_replace.items()}
    return _go_replace(data.get("build") or {})
