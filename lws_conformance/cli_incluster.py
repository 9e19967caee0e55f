"""`lwsc gen`, `lwsc retrieve`, `lwsc run --in-cluster`: the in-cluster runner (kept out of cli.py)."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kubernetes import client
from kubernetes.stream import stream

from . import images, incluster, provenance
from .errors import UserError
from .k8s.client import api_client
from .providers import existing
from .providers.components import state_root
from .report import archive

Handler = Callable[[argparse.Namespace], int]
RAW = argparse.RawDescriptionHelpFormatter
DEFAULT_IMAGE = f"ghcr.io/lws-conformance/lwsc:{provenance.version()}"


def apply_in_cluster(args: argparse.Namespace) -> None:
    """`run --in-cluster`: adopt the cluster the pod runs in, with the pod's ServiceAccount."""
    if not getattr(args, "in_cluster", False):
        return
    if args.kubeconfig:
        raise UserError("give either --in-cluster or --kubeconfig, not both")
    out = state_root() / "existing" / f"in-cluster-{time.strftime('%Y%m%d-%H%M%S')}.kubeconfig"
    try:
        args.kubeconfig = str(incluster.kubeconfig_from_pod(out))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def cmd_gen(args: argparse.Namespace) -> int:
    run_args = [a for a in args.run_args if a != "--"]
    if args.sonobuoy:
        print(incluster.dump([incluster.sonobuoy_plugin(args.image, run_args)]), end="")
    else:
        print(incluster.dump(incluster.manifests(args.image, args.namespace, run_args)), end="")
    return 0


def _pod(core: client.CoreV1Api, namespace: str) -> str:
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={incluster.NAME}").items
    if not pods:
        raise UserError(f"no pod of Job {namespace}/{incluster.NAME}; apply `lwsc gen` first")
    meta = pods[0].metadata
    return str(meta.name if meta else "")


def _exec(core: client.CoreV1Api, namespace: str, pod: str, script: str) -> str:
    out: str = stream(
        core.connect_get_namespaced_pod_exec, pod, namespace, command=["sh", "-c", script],
        stderr=True, stdin=False, stdout=True, tty=False,
    )
    return out


def cmd_retrieve(args: argparse.Namespace) -> int:
    """Copy the newest results archive out of the Job's pod (base64 over exec), then verify it."""
    if not args.kubeconfig:
        raise UserError("give --kubeconfig PATH (or set KUBECONFIG with --provider existing) of the cluster")
    kubeconfig = Path(args.kubeconfig).expanduser()
    if not kubeconfig.is_file():
        raise UserError(f"kubeconfig {kubeconfig} does not exist; pass --kubeconfig PATH")
    t = existing.target(kubeconfig, args.context)  # a wrong context is one line, not a traceback
    print(f"cluster: {t}", file=sys.stderr)
    existing.reachable(t)
    api = api_client(kubeconfig, args.context)
    try:
        core = client.CoreV1Api(api)
        pod = _pod(core, args.namespace)
        state = _exec(core, args.namespace, pod, f"cat {incluster.RESULTS}/exit-code 2>/dev/null || echo running")
        if state.strip() == "running":
            raise UserError(f"the run in pod {args.namespace}/{pod} has not finished; retry later")
        name = _exec(core, args.namespace, pod, f"ls -t {incluster.RESULTS}/*.tar.gz | head -n1").strip()
        data = base64.b64decode(_exec(core, args.namespace, pod, f"base64 {name}"))
    finally:
        api.close()
    out = Path(args.output).expanduser() / Path(name).name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    result = archive.verify(out)
    print(out)
    print(result.text(), file=sys.stderr)
    return int(state.strip() or 3) if result.ok else 1


def cmd_images(args: argparse.Namespace) -> int:
    """The images the suites' pods name (with the profile's images.registry applied) and the harness image."""
    registry = str((args.config.raw.get("images") or {}).get("registry") or "")
    rows = [(name, images.ref(name, registry), use) for name, (_ref, use) in images.IMAGES.items()]
    rows.append(("harness", DEFAULT_IMAGE, "the in-cluster runner (`lwsc gen --image` overrides it)"))
    if args.output == "json":
        print(json.dumps([{"name": n, "image": i, "used_by": u} for n, i, u in rows], indent=2))
    else:
        for name, image, use in rows:
            print(f"{name:<16} {image:<48} {use}")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> dict[str, Handler]:
    gen = sub.add_parser(
        "gen",
        help="print Namespace, ServiceAccount, least-privilege ClusterRole/Binding and the Job running the suites",
        formatter_class=RAW,
        epilog="examples:\n  lwsc gen | kubectl apply -f -\n"
        "  lwsc gen --image registry.local/lwsc:0.1.0 -- --focus KUEUE\n"
        "  lwsc gen --sonobuoy > lwsc-plugin.yaml && sonobuoy run --plugin lwsc-plugin.yaml",
    )
    gen.add_argument("--image", default=DEFAULT_IMAGE, help=f"harness image (default {DEFAULT_IMAGE})")
    gen.add_argument("--namespace", default=incluster.NAMESPACE, help=f"where the Job runs ({incluster.NAMESPACE})")
    gen.add_argument("--sonobuoy", action="store_true", help="print a Sonobuoy plugin definition instead")
    gen.add_argument("run_args", nargs="*", help="extra `lwsc run` arguments for the Job (after --)")
    ret = sub.add_parser(
        "retrieve",
        help="copy the results archive out of the in-cluster Job's pod and verify it",
        formatter_class=RAW,
        epilog="examples:\n  lwsc retrieve --kubeconfig ~/.kube/config -o ./results",
    )
    ret.add_argument("--kubeconfig", help="the cluster's kubeconfig")
    ret.add_argument("--context", help="kubeconfig context (default: its current context)")
    ret.add_argument("--namespace", default=incluster.NAMESPACE, help=f"the Job's namespace ({incluster.NAMESPACE})")
    ret.add_argument("-o", "--output", default=".", help="directory to write the archive to (default .)")
    img = sub.add_parser(
        "images",
        help="list the container images the suites use (mirror them for air-gapped registries)",
        formatter_class=RAW,
        epilog="examples:\n  lwsc images\n  lwsc images --set images.registry=mirror.example.com/k8s --output json",
    )
    img.add_argument("--output", choices=("text", "json"), default="text", help="output format (default text)")
    return {"gen": cmd_gen, "retrieve": cmd_retrieve, "images": cmd_images}
