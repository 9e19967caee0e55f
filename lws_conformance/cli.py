"""`lwsc`: bring the local cluster up and down, inspect it, and run the suites.

User mistakes end in one line on stderr and exit 2; harness/infrastructure failures exit 3; a
requirement that failed exits 1 (from pytest). SIGTERM is turned into KeyboardInterrupt so that
Ctrl-C and a CI kill both go through the same cleanup.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .errors import LwscError, UserError
from .profile import load_profile
from .providers import process
from .providers.local import ORDER, LocalCluster, state_root
from .report import render
from .toolchain import cache as bincache

PROJECT = Path(__file__).resolve().parent.parent


def _progress(msg: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] {msg}", file=sys.stderr, flush=True)


def _cluster(args: argparse.Namespace) -> LocalCluster:
    return LocalCluster(load_profile(args.profile, args.set), name=args.name)


def cmd_up(args: argparse.Namespace) -> int:
    handle = _cluster(args).up(_progress)
    print(handle.kubeconfig)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    """Obtain every binary of the profile (cached by version); prints where each one is."""
    from .toolchain import ensure_binaries

    started = time.monotonic()
    for name, path in ensure_binaries(load_profile(args.profile, args.set), _progress).items():
        print(f"{name:<24} {path}")
    _progress(f"binaries ready in {time.monotonic() - started:.0f}s")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    cluster = LocalCluster(load_profile(args.profile, args.set), name=args.name)
    started = time.monotonic()
    cluster.down()
    _progress(f"cluster '{args.name}' down in {time.monotonic() - started:.1f}s")
    return 0


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    if not cluster.kubeconfig.is_file():
        raise UserError(f"cluster '{args.name}' is not up; run `lwsc up` first")
    print(cluster.kubeconfig)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    recs = {r.name: r for r in cluster.records()}
    if not recs:
        print(f"cluster '{args.name}': not running (state dir {cluster.dir})")
        return 1
    print(f"cluster '{args.name}': {'up' if cluster.running() else 'DEGRADED'}; kubeconfig {cluster.kubeconfig}")
    for name in ORDER:
        rec = recs.get(name)
        state = "running" if rec and process.alive(rec) else "stopped"
        pid = rec.pid if rec else "-"
        print(f"  {name:<24} {state:<8} pid {pid!s:<8} log {cluster.log(name)}")
    return 0 if cluster.running() else 1


def _selection(args: argparse.Namespace) -> list[str]:
    """Hydrophone-style selection mapped onto pytest: --focus/--skip are -k expressions
    (requirement ids are test keywords too, so `--focus LWS-NAME` works)."""
    parts = [f"({args.focus})"] if args.focus else []
    if args.skip:
        parts.append(f"not ({args.skip})")
    return ["-k", " and ".join(parts)] if parts else []


def _exit_code(pytest_rc: int, run_dir: Path) -> int:
    """0 all applicable requirements passed; 1 a requirement failed; 3 harness/infra broken."""
    summary_file = run_dir / "summary.json"
    if not summary_file.is_file():
        return 3
    totals = json.loads(summary_file.read_text()).get("totals", {})
    if totals.get("failed"):
        return 1
    return 0 if pytest_rc == 0 else 3


def cmd_run(args: argparse.Namespace) -> int:
    """The main job: bring up (or reuse) the local cluster, run the suites, write reports/."""
    cluster = _cluster(args)
    if args.dry_run:
        cmd = [sys.executable, "-m", "pytest", str(PROJECT / "suites"), "--collect-only", "-q", *_selection(args)]
        return subprocess.call(cmd, cwd=PROJECT)
    was_running = cluster.running()
    handle = cluster.up(_progress)
    run_id = time.strftime("%Y%m%d-%H%M%S")
    reports = Path(args.reports)
    out = reports / run_id
    out.mkdir(parents=True, exist_ok=True)
    latest = reports / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(run_id)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(PROJECT / "suites"),
        *_selection(args),
        f"--lwsc-handle={cluster.handle_file}",
        f"--lwsc-run-id={run_id.replace('-', '')[4:]}",
        f"--lwsc-report-dir={out}",
        f"--lwsc-profile={args.profile}",
        f"--junitxml={out / 'junit_01.xml'}",
        "-o",
        "junit_family=xunit2",
        f"--alluredir={out / 'allure-results'}",
        "-n",
        str(args.workers),
        "-p",
        "no:cacheprovider",
        *args.pytest_args,
    ]
    _progress(f"running suites against {handle.kubeconfig}; reports in {out}")
    try:
        rc = _tee(cmd, out / "e2e.log")
    finally:
        if not was_running and not args.keep:
            cluster.down()
    if (out / "results.json").is_file():
        render.render(out, bincache.cache_root() / "node")
    code = _exit_code(rc, out)
    _progress(f"done: {out / 'summary.md'} (exit {code})")
    return code


def _tee(cmd: list[str], log: Path) -> int:
    """Run `cmd`, copying its output to the terminal and to `log` (the CNCF-style e2e.log).
    Tests write timelines and journals under `<run-dir>/artifacts` (LWSC_ARTIFACT_DIR)."""
    env = {**os.environ, "LWSC_ARTIFACT_DIR": str(log.parent / "artifacts")}
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            fh.write(line)
        return proc.wait()


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render a run directory offline from its recorded results."""
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.json").is_file():
        raise UserError(f"{run_dir} has no results.json; give a reports/<run-id> directory of `lwsc run`")
    doc = render.render(run_dir, bincache.cache_root() / "node")
    print(run_dir / "summary.md")
    return 1 if doc.get("totals", {}).get("failed") else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lwsc", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument(
        "--profile",
        default=os.environ.get("LWSC_PROFILE", "default"),
        help="profile name in fixtures/profiles or a path (default: default)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one profile key, e.g. --set versions.lws=v0.8.0",
    )
    p.add_argument("--name", default="default", help=f"local cluster name (state under {state_root()})")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build (or find in the cache) every binary of the profile")
    sub.add_parser("up", help="bring up the local cluster (idempotent); prints the kubeconfig path")
    sub.add_parser("down", help="stop every process of the local cluster and remove its state")
    sub.add_parser("status", help="show each component, its pid and log file")
    sub.add_parser("kubeconfig", help="print the admin kubeconfig path")
    rep = sub.add_parser("report", help="re-render a run directory (summary, HTML, PRODUCT.yaml) offline")
    rep.add_argument("run_dir")
    run = sub.add_parser("run", help="main job: up (or reuse), run the suites, write reports/")
    run.add_argument("--focus", help="run only tests matching this pytest -k expression (e.g. a requirement id)")
    run.add_argument("--skip", help="skip tests matching this pytest -k expression")
    run.add_argument("--dry-run", action="store_true", help="list what would run, run nothing")
    run.add_argument("--reports", default=str(PROJECT / "reports"))
    run.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (default 2)")
    run.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p


def _sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    handlers = {
        "build": cmd_build,
        "up": cmd_up,
        "down": cmd_down,
        "status": cmd_status,
        "kubeconfig": cmd_kubeconfig,
        "run": cmd_run,
    }
    try:
        return handlers[args.command](args)
    except LwscError as exc:
        print(f"lwsc: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("lwsc: interrupted; everything started by this command was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
