"""The kit for requirement authors: everything a suite module imports from the harness.

A suite (suites/<name>/) imports from here only, never from the harness's other modules (an
import-linter contract in pyproject.toml and tests/test_suite_kit.py hold it to that): what is
here is the surface the suites rely on; the rest may change with the harness.

- the test's world: `Scenario` (one namespace, its objects, waits that explain themselves:
  `wait_pods`, `wait_lws`, `wait_objects(kind, ...)`, `wait_objects_gone`, `list_objects`),
  `Claims`, the cluster handle types;
- objects to create: `workloads`, `images`;
- checks: `predicates` (pure checks of objects), `history` (checks over a recording's watch
  history), `facts`, `disagg`, `kueue_evidence`, `admission`;
- recording: `record`, `Timeline`, `Recorder`, `saved`, `artifact_dir`, `check`, ...;
- waits: every primitive taking a deadline or a window (`wait_for`, `observe`, the `Scenario`
  waits, `run_in_pod`, `wait_pod_log`, a private cluster's `wait_log`, `node_containers.wait_new_leader`)
  applies `timeouts.scale` itself: suites pass plain seconds and never multiply by the scale;
- named fault hooks: the chaos actions and probes, `faults_pending`, `chaos_local_cluster`,
  `process_alive`, `node_manifest`, `CHAOS_TOLERATION`.
"""

from __future__ import annotations

from . import images, upgrades, workloads
from .catalogue import parse_version, reached
from .chaos import actions, kubelet, node_containers, probes, runner
from .chaos.probes import steady_state_violations
from .chaos.safety import local_cluster as chaos_local_cluster
from .chaos.safety import pending as faults_pending
from .claims import Claims
from .errors import Failures, InfraError, UserError, WaitTimeout
from .k8s import admission, clock, kueue_evidence, policy, predicates
from .k8s.admission import Answer
from .k8s.client import api_client, to_dict
from .k8s.execute import Ran, run_in_pod
from .k8s.kueue_evidence import pod_group_names_wrong
from .k8s.logs import json_log_records, wait_pod_log
from .k8s.objects import RUN_LABEL, Objects
from .k8s.wait import observe, wait_for
from .k8s.wait import scale as _scale
from .observe import (
    Event,
    Recorder,
    Source,
    Timeline,
    artifact_dir,
    check,
    describe,
    disagg,
    disagg_picture,
    facts,
    failures,
    history,
    record,
    require_complete,
    saved,
    sources,
)
from .plugin import skip_private_on_kind
from .profile import Topology
from .providers.base import ClusterHandle
from .providers.kind import CHAOS_TOLERATION
from .providers.local import LocalCluster
from .providers.nodes import POOL_LABEL, node_manifest
from .providers.process import alive as process_alive
from .scenario import LWS_API, LWS_GROUP, LWS_PLURAL, LWS_VERSION, NEEDS_KIND, NEEDS_KUBELET, Scenario
from .session_profile import run_profile


def scaled_seconds(seconds: float) -> float:
    """`seconds` times the run's `timeouts.scale`: for a duration handed to the system under test
    (a Kueue timeout the test configures) or named in a message, never for a deadline or window
    of the kit's waits, which scale theirs themselves."""
    return seconds * _scale()


def timeout_scale() -> float:
    """The run's `timeouts.scale`, for records (a figure's context), never to multiply by."""
    return _scale()


__all__ = [
    "CHAOS_TOLERATION",
    "LWS_API",
    "LWS_GROUP",
    "LWS_PLURAL",
    "LWS_VERSION",
    "NEEDS_KIND",
    "NEEDS_KUBELET",
    "POOL_LABEL",
    "RUN_LABEL",
    "Answer",
    "Claims",
    "ClusterHandle",
    "Event",
    "Failures",
    "InfraError",
    "LocalCluster",
    "Objects",
    "Ran",
    "Recorder",
    "Scenario",
    "Source",
    "Timeline",
    "Topology",
    "UserError",
    "WaitTimeout",
    "actions",
    "kubelet",
    "admission",
    "api_client",
    "artifact_dir",
    "chaos_local_cluster",
    "check",
    "clock",
    "describe",
    "disagg",
    "disagg_picture",
    "facts",
    "failures",
    "faults_pending",
    "history",
    "images",
    "json_log_records",
    "kueue_evidence",
    "node_containers",
    "node_manifest",
    "observe",
    "parse_version",
    "pod_group_names_wrong",
    "policy",
    "predicates",
    "probes",
    "process_alive",
    "reached",
    "record",
    "require_complete",
    "run_in_pod",
    "run_profile",
    "runner",
    "saved",
    "scaled_seconds",
    "skip_private_on_kind",
    "sources",
    "steady_state_violations",
    "timeout_scale",
    "to_dict",
    "upgrades",
    "wait_for",
    "wait_pod_log",
    "workloads",
]
