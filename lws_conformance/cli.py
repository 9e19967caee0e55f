"""`lwsc`: bring the local cluster up and down, inspect it, and run the suites.

User mistakes end in one line on stderr and exit 2; harness/infrastructure failures exit 3; a
run's verdicts give 0, 1, 3 or 4 (`report.conclusion`: 4 = MUST failures that are listed upstream
bugs only). SIGTERM is turned into KeyboardInterrupt so that
Ctrl-C and a CI kill both go through the same cleanup.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from kubernetes import client

from . import (
    bisect,
    catalogue,
    cli_certify,
    cli_completion,
    cli_conventions,
    cli_incluster,
    cli_results,
    images,
    matrix,
    prebuild,
    product_input,
    provenance,
    resources,
    runtarget,
    selection,
    shards,
    worker_count,
)
from .errors import LwscError, UserError
from .k8s.client import api_client, to_dict
from .k8s.objects import RUN_LABEL
from .profile import RESOLVED_FILE, Profile, load_profile, port_given
from .providers import apicheck, discovery, existing, multikueue, preflight, process
from .providers.base import ClusterHandle, Provider
from .providers.components import ORDER, state_root
from .providers.kind import KindCluster, KindTools, built_tool
from .providers.kind import state_dir as kind_state_dir
from .providers.local import PORT_FILE, LocalCluster, down_private
from .providers.ports import claim_port_range
from .report import html, merge, render
from .runconfig import RunConfig, RunState
from .toolchain import cache as bincache
from .toolchain.gobuild import TRANSIENT

CHILD_CLEANUP_S = 120  # pytest's Ctrl-C path deletes the run's namespaces; then it is killed


_open_line = False  # a transient progress line is on the terminal, waiting to be rewritten


def _progress(msg: str) -> None:
    """One line per message; on a terminal a transient message (a build heartbeat) rewrites the
    previous transient line in place instead of scrolling."""
    global _open_line
    stamp = time.strftime("%H:%M:%S")
    transient = msg.startswith(TRANSIENT)
    line = f"{_paint(f'[{stamp}]', '2')} {msg.removeprefix(TRANSIENT)}"
    if sys.stderr.isatty():
        end = "" if transient else "\n"
        print(f"\r\x1b[K{line}" if _open_line else line, end=end, file=sys.stderr, flush=True)
        _open_line = transient
    else:
        print(line, file=sys.stderr, flush=True)


def _paint(text: str, sgr: str) -> str:
    """`text` in colour (ANSI SGR code, e.g. '31' red, '2' dim) on a terminal, unless NO_COLOR."""
    if not sys.stderr.isatty() or os.environ.get("NO_COLOR"):
        return text
    return f"\x1b[{sgr}m{text}\x1b[0m"


def _cluster(cfg: RunConfig) -> LocalCluster:
    """The named local cluster. A cluster other than `default` gets a free block of ports of its
    own (claimed when it comes up, then read back from its state) unless the user chose
    `network.base_port`, so named clusters run side by side."""
    profile = cfg.profile
    if cfg.name != "default" and not port_given(profile, list(cfg.sets)):
        remembered = state_root() / cfg.name / PORT_FILE
        if remembered.is_file():
            profile = dataclasses.replace(profile, base_port=int(remembered.read_text()))
        elif cfg.command in ("up", "run"):
            profile = dataclasses.replace(profile, base_port=claim_port_range())
    if workers := multikueue.workers_of(profile.raw):  # a manager + worker clusters (MultiKueue)
        return multikueue.MultiKueueClusters(profile, name=cfg.name, workers=workers)
    return LocalCluster(profile, name=cfg.name)


def _kind(cfg: RunConfig) -> KindCluster:
    tools = KindTools.resolve(*cfg.tools, built=built_tool(cfg.profile, _progress))
    return KindCluster(cfg.profile, tools, name=cfg.name, state_dir=kind_state_dir(cfg.name))


def _target(cfg: RunConfig, choice: runtarget.Choice, out: Path | None = None) -> Provider:
    """The cluster of this invocation behind one interface (`providers.base.Provider`): an
    existing cluster is adopted (its preflight and handle go to `out`), else `--provider` or the
    profile's provider creates one."""
    if choice.provider == "existing":
        return existing.ExistingCluster(
            choice.target,
            cfg.profile,
            out or Path.cwd(),
            # with --context or a $KUBECONFIG list: a private 0600 copy in the state dir, never in
            # reports/ (it holds credentials)
            pinned=state_root() / "existing" / f"{out.name if out else 'up'}.kubeconfig",
        )
    return _kind(cfg) if choice.provider == "kind" else _cluster(cfg)


def _choice(cfg: RunConfig) -> runtarget.Choice:
    """The cluster this invocation acts on and why (`runtarget`), checked before any work."""
    return runtarget.resolve(
        provider_flag=cfg.provider_flag,
        kubeconfig=cfg.kubeconfig,
        kubeconfig_from=cfg.kubeconfig_from,
        context=cfg.context,
        profile=cfg.profile,
        profile_name=cfg.profile_name,
        name=cfg.name,
        kubeconfig_env=cfg.kubeconfig_env,
    )


def _lifecycle(cfg: RunConfig) -> Provider:
    """A provider `lwsc up`/`down` can bring up and down (not the existing one: one line, exit 2);
    the cluster it is is said first."""
    if cfg.provider == "existing":
        raise UserError(existing.NO_LIFECYCLE)
    choice = _choice(cfg)
    _progress(choice.line())
    return _target(cfg, choice)


def cmd_up(cfg: RunConfig) -> int:
    print(_lifecycle(cfg).up(_progress).kubeconfig)
    return 0


def cmd_build(cfg: RunConfig) -> int:
    """Obtain every binary the selected tests need (cached by version); prints where each one is."""
    from .toolchain import ensure_binaries

    started = time.monotonic()
    profile = cfg.profile
    sel = selection.collect(list(cfg.selection), profile)
    prebuild.build(prebuild.needs(profile, "local", sel), _progress)  # all resolved first
    for name, path in ensure_binaries(profile, _progress).items():
        print(f"{name:<24} {path}")
    for component, version in sel.upgrade_starts:  # the versions LWS-/KUEUE-UPGRADE-* start under
        path = ensure_binaries(profile.upgrade_start(component, version), _progress)[component]
        print(f"{component + ' ' + version + ' (upgrade)':<24} {path}")
    if cfg.options.get("kind", False):  # the kind provider's images, on the engine it would use
        kind_cluster = _kind(cfg)
        engine = kind_cluster.engine(_progress)
        for name, ref in kind_cluster.images(engine, _progress).items():
            print(f"{'kind ' + name + ' image':<24} {ref} ({engine.describe()})")
        kind_cluster.stop_idle_engine()
    allure = html.install_allure(bincache.cache_root() / "node")  # reports then render offline
    print(f"{'allure (report HTML)':<24} {allure or 'not installed (no Node/npm): reports use index.html'}")
    _progress(f"binaries ready in {time.monotonic() - started:.0f}s")
    return 0


def cmd_down(cfg: RunConfig) -> int:
    cluster = _lifecycle(cfg)
    if isinstance(cluster, LocalCluster):  # also any MultiKueue workers of this name, whatever the profile says now
        cluster = multikueue.MultiKueueClusters(cluster.profile, name=cfg.name)
    started = time.monotonic()
    cluster.down()
    _progress(f"cluster '{cfg.name}' down in {time.monotonic() - started:.1f}s")
    return 0


def cmd_kubeconfig(cfg: RunConfig) -> int:
    cluster = _cluster(cfg)
    if cfg.provider == "kind":
        kind_kc = kind_state_dir(cfg.name) / "kubeconfig"
        if not kind_kc.is_file():
            raise UserError(f"kind cluster '{cfg.name}' is not up; run `lwsc --provider kind up` first")
        print(kind_kc)
        return 0
    if not cluster.kubeconfig.is_file():
        raise UserError(f"cluster '{cfg.name}' is not up; run `lwsc up` first")
    print(cluster.kubeconfig)
    return 0


def cmd_status(cfg: RunConfig) -> int:
    cluster = _cluster(cfg)
    recs = {r.name: r for r in cluster.records()}
    if cfg.options.get("output", "text") == "json":
        return _status_json(cfg, cluster, recs)
    if not recs:
        print(f"cluster '{cfg.name}': not running (state dir {cluster.dir})")
        return 1
    print(f"cluster '{cfg.name}': {'up' if cluster.running() else 'DEGRADED'}; kubeconfig {cluster.kubeconfig}")
    for name in ORDER:
        rec = recs.get(name)
        state = "running" if rec and process.alive(rec) else "stopped"
        pid = rec.pid if rec else "-"
        print(f"  {name:<24} {state:<8} pid {pid!s:<8} log {cluster.log(name)}")
    return 0 if cluster.running() else 1


def _status_json(cfg: RunConfig, cluster: LocalCluster, recs: dict[str, process.ProcRecord]) -> int:
    up = bool(recs) and cluster.running()
    components = [
        {
            "name": n,
            "state": "running" if recs.get(n) and process.alive(recs[n]) else "stopped",
            "pid": recs[n].pid if n in recs else None,
            "log": str(cluster.log(n)),
        }
        for n in ORDER
    ]
    state = "up" if up else ("degraded" if recs else "not running")
    doc = {"name": cfg.name, "state": state, "kubeconfig": str(cluster.kubeconfig), "components": components}
    print(json.dumps(doc, indent=2))
    return 0 if up else 1


def _conclusion(pytest_rc: int, run_dir: Path) -> tuple[int, str]:
    """(exit code, line) the run's summary.json concludes (`report.conclusion`: 0, 1, 3, 4); 3
    also when there is no summary, or pytest failed without a requirement saying why."""
    summary_file = run_dir / "summary.json"
    if not summary_file.is_file():
        return 3, "inconclusive: the run wrote no summary.json"
    end = json.loads(summary_file.read_text()).get("conclusion", {})
    code, line = int(end.get("code", 3)), str(end.get("line", ""))
    if code in (0, 4) and pytest_rc != 0:  # never a green, nor "listed upstream bugs only", on a broken run
        return 3, f"inconclusive: pytest exited {pytest_rc} with no requirement failing"
    return code, line


def _exit_code(pytest_rc: int, run_dir: Path) -> int:
    return _conclusion(pytest_rc, run_dir)[0]


def _say_conclusion(code: int, line: str) -> None:
    _progress(_paint(line, "1;32" if code == 0 else "1;31"))


def _default_reports() -> str:
    """./reports of the current directory, or $ARTIFACTS (a CI's artefact directory) when set."""
    return os.environ.get("ARTIFACTS") or str(Path.cwd() / "reports")


def _new_run_id(cfg: RunConfig) -> str:
    """A run id from the time, unique among the report directories: its directory is created
    here (exclusively), so two runs started in the same second never share one."""
    reports = _reports(cfg)
    if not reports.is_dir():
        reports.mkdir(parents=True)
        cfg.state.reports_created = True
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 100):
        run_id = stamp if n == 1 else f"{stamp}{n}"
        try:
            (reports / run_id).mkdir()
            return run_id
        except FileExistsError:
            continue
    raise UserError(f"{reports} already has 99 runs started at {stamp}; use another --reports directory")


def _reports(cfg: RunConfig) -> Path:
    if cfg.reports is None:
        raise UserError(f"`lwsc {cfg.command}` writes no run directories")
    return cfg.reports


def _unstarted(cfg: RunConfig, out: Path) -> None:
    """A run that never started (its cluster refused or did not come up) leaves no directory."""
    shutil.rmtree(out, ignore_errors=True)
    if cfg.state.reports_created:
        with contextlib.suppress(OSError):
            out.parent.rmdir()


def _point_latest(cfg: RunConfig, run_id: str) -> None:
    """reports/latest -> the run that started last."""
    latest = _reports(cfg) / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(run_id)


def _suites(
    cfg: RunConfig, profile: Profile, handle_file: Path, run_id: str, out: Path, extra: list[str] | None = None
) -> int:
    """Run the suites against the cluster of `handle_file` with `profile` (written to
    `out`/profile.resolved.yaml, which pytest reads), reports into `out` (pytest's rc)."""
    resolved = profile.write_resolved(out / RESOLVED_FILE)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *resources.plugin_args(),  # -p lws_conformance.plugin: no entry point loads it into every session
        str(resources.suites()),
        *cfg.selection,
        f"--lwsc-handle={handle_file}",
        f"--lwsc-run-id={run_id}",
        f"--lwsc-report-dir={out}",
        f"--lwsc-resolved-profile={resolved}",
        f"--lwsc-mode={'certify' if cfg.certify else 'standard'}",
        *(["--lwsc-strict"] if cfg.strict else []),
        *([f"--lwsc-shard={cfg.shard}"] if cfg.shard else []),
        *(["--lwsc-accept-known-deviations"] if cfg.accept_known_deviations else []),
        *(extra or []),
        f"--junitxml={out / 'junit_01.xml'}",
        "-o",
        "junit_family=xunit2",
        f"--alluredir={out / 'allure-results'}",
        "-n",
        str(cfg.workers),
        "-p",
        "no:cacheprovider",
        *cfg.pytest_args,
    ]
    try:
        return _tee(cmd, out / "e2e.log")
    finally:
        for name in down_private(run_id, profile):
            _progress(f"stopped private cluster {name}, left running by the interrupted tests")


def _check_run_input(ns: argparse.Namespace) -> None:
    """`lwsc run`'s own arguments, checked before any work (the profile was checked first)."""
    if ns.shard:
        shards.parse(ns.shard)
        if ns.certify:
            raise UserError("--certify runs every requirement in one run; drop --shard (or merge shards for gating)")
    product_input.check(ns.product_metadata, ns.certify)


def _dry_run(cfg: RunConfig, choice: runtarget.Choice, sel: selection.Selection) -> int:
    """What `lwsc run` would do, resolved as the run resolves it; nothing is built or contacted."""
    print(f"target:       {choice.describe()}, chosen by {choice.why}")
    if choice.unused_kubeconfig:
        print(f"              ({choice.line().partition('; ')[2]})")
    print(f"profile:      {cfg.profile_name}{' with ' + ' '.join(cfg.sets) if cfg.sets else ''}")
    versions = ", ".join(f"{c} {v}" for c, v in cfg.profile.versions.items())
    print(f"versions:     {versions}" + (" (the profile's; the run reads the cluster's)" if choice.target else ""))
    shard = f", shard {cfg.shard}" if cfg.shard else ""
    print(f"selection:    {' '.join(cfg.selection[1:]) or 'every test'}{shard}")
    needs = prebuild.needs(cfg.profile, choice.provider, sel)
    todo = [f"{', '.join(whats)} (for {need.why})" for need, whats in prebuild.pending(needs)]
    print(f"to build:     {'; '.join(todo) or 'nothing (every binary is cached)'}")
    print(f"tests ({len(sel.tests)}):")
    for nodeid, rids in sel.tests.items():
        print(f"  {nodeid}  {' '.join(sorted(rids))}")
    print(f"requirements ({len(sel.requirements)}): {' '.join(sel.requirements)}")
    return 0


def cmd_run(cfg: RunConfig) -> int:
    """The main job: bring up (or reuse, or adopt) a cluster, run the suites, write reports/.
    Its usage mistakes were refused when `cfg` was resolved (one line, exit 2, before any work)."""
    choice = _choice(cfg)
    sel = selection.collect(list(cfg.selection), cfg.profile, cfg.shard)
    if cfg.dry_run:
        return _dry_run(cfg, choice, sel)
    needs = prebuild.needs(cfg.profile, choice.provider, sel)
    prebuild.check(needs)  # a version the module proxy refuses: one line, exit 2, before anything
    _progress(choice.line())
    if choice.target is not None:  # a cluster that refuses us: one line, exit 2, nothing written
        existing.reachable(choice.target)
    prebuild.build(needs, _progress)
    run_id = _new_run_id(cfg)
    # names every namespace and label of the run: unique also among runs started in the same second
    # against the same cluster from other report directories
    pytest_run_id = run_id.replace("-", "")[4:] + secrets.token_hex(2)
    out = _reports(cfg) / run_id
    try:
        target = _target(cfg, choice, out)
        stays = not target.creates or target.running() or cfg.keep  # adopted, reused or kept
        handle = target.up(_progress)
    except BaseException:
        _unstarted(cfg, out)
        raise
    _point_latest(cfg, run_id)
    cfg.state.run_started = True  # a cluster that refuses from here on makes the run inconclusive (exit 3)
    _progress(f"running suites against {handle.kubeconfig} ({handle.provider}, run {pytest_run_id}); reports in {out}")
    _progress(f"workers: {cfg.workers} ({cfg.workers.why})" if cfg.workers else "workers: none")
    extra = ["--lwsc-allow-destructive"] if cfg.allow_destructive else []
    try:
        rc = _suites(cfg, cfg.profile, target.handle_file, pytest_run_id, out, extra)
    finally:
        if stays:  # nothing of this run may stay (also after a Ctrl-C mid-teardown)
            left = target.release(pytest_run_id)
            _progress(f"cleanup: deleted {len(left)} leftover object(s) labelled with run {pytest_run_id}")
        else:
            target.down()
    if (out / "results.json").is_file():
        cli_certify.keep_product_metadata(cfg, out)
        render.render(out, bincache.cache_root() / "node")
    code, line = _conclusion(rc, out)
    _progress(f"results archive: {cli_certify.write_archive(out)} (check it with `lwsc verify`)")
    _say_conclusion(code, line)
    _progress(f"done: {out / 'summary.md'} " + _paint(f"(exit {code})", "1;32" if code == 0 else "1;31"))
    return code


def _api_for(cfg: RunConfig) -> tuple[existing.Target, dict[str, str]]:
    """(the cluster, versions the harness knows) for discover / preflight / cleanup, chosen by
    `existing.resolve`: --kubeconfig, else $KUBECONFIG (every entry, unless --provider names a
    harness cluster), else the named local or kind cluster's handle. The cluster it names is said
    on stderr, and an unreachable server is one line within seconds."""
    provider, env = cfg.provider, None if cfg.provider_flag else cfg.kubeconfig_env
    handle_file = kind_state_dir(cfg.name) / "handle.json" if provider == "kind" else _cluster(cfg).handle_file
    own = f"the {provider} cluster '{cfg.name}'"
    handle = None
    if not cfg.kubeconfig and not (env or "").strip(os.pathsep) and handle_file.is_file():
        handle = ClusterHandle.from_json(handle_file.read_text())
    t = existing.resolve(
        cfg.kubeconfig,
        cfg.context,
        env=env,
        own=handle.kubeconfig if handle else None,
        own_why=own,
        missing=f"no --kubeconfig or $KUBECONFIG and {provider} cluster '{cfg.name}' is not up (no {handle_file}); "
        "pass --kubeconfig PATH or run `lwsc up`",
    )
    _progress(f"cluster: {t}, chosen by {t.chosen_by}")
    existing.reachable(t)
    return t, (handle.versions if handle else {})


def cmd_discover(cfg: RunConfig) -> int:
    """Print a profile proposed from the cluster's nodes (topology label keys, GPU resource)."""
    t, known = _api_for(cfg)
    api = api_client(t.config_file, t.context)
    try:
        nodes = [to_dict(api, n) for n in client.CoreV1Api(api).list_node().items]
        versions = {c: preflight.detect(api, c, known.get(c)).version for c in preflight.COMPONENTS}
    finally:
        api.close()
    proposal = discovery.propose(nodes, {c: v for c, v in versions.items() if v})
    header = (
        f"Proposed by `lwsc discover` from {proposal.nodes_seen} node(s) ({proposal.gpu_nodes} with accelerators) "
        f"of {t.config_file}{f' context {cfg.context}' if cfg.context else ''} at {time.strftime('%Y-%m-%d %H:%M')}.\n"
        "Review it, then: lwsc --profile THIS_FILE preflight --kubeconfig ...\n"
        "            and: lwsc --profile THIS_FILE run --kubeconfig ..."
    )
    text = proposal.to_yaml(header)
    output = cfg.options.output
    if output == "json":
        doc = {"nodes_seen": proposal.nodes_seen, "gpu_nodes": proposal.gpu_nodes, "profile": yaml.safe_load(text)}
        print(json.dumps(doc, indent=2))
        return 0
    if output and output != "yaml":
        Path(output).write_text(text)
        _progress(f"wrote {output}")
    print(text, end="")
    return 0


def cmd_preflight(cfg: RunConfig) -> int:
    """Versions, feature gates and capacity, before any test runs; exit 2 if the cluster is unusable."""
    t, known = _api_for(cfg)
    api = api_client(t.config_file, t.context)
    try:
        report = preflight.run(api, cfg.profile.topology, known)
    finally:
        api.close()
    as_json = cfg.options.json or cfg.options.get("output", "text") == "json"
    print(json.dumps(report.to_dict(), indent=2) if as_json else report.text())
    return 2 if report.failed else 0


def cmd_cleanup(cfg: RunConfig) -> int:
    """Delete what harness runs created (run label), nothing else."""
    run_id = cfg.options.run_id
    if bool(run_id) == bool(cfg.options.all):
        raise UserError("give exactly one of --run-id ID (one run) or --all (every lwsc run on this cluster)")
    t, _known = _api_for(cfg)
    api = api_client(t.config_file, t.context)
    try:
        deleted = existing.cleanup(api, run_id)
    finally:
        api.close()
    for what in deleted:
        print(f"deleted {what}")
    _progress(f"cleanup: {len(deleted)} object(s) labelled {RUN_LABEL}{'=' + run_id if run_id else ''}")
    return 0


def cmd_matrix(cfg: RunConfig) -> int:
    """The suites (or --focus) against several LWS / Kueue versions, one fresh local cluster each."""
    from .toolchain import ensure_binaries

    plan = matrix.cells(
        matrix.parse_versions(cfg.options.lws, "--lws"),
        matrix.parse_versions(cfg.options.kueue, "--kueue"),
        cfg.options.base_port,
    )
    profiles = {c.name: cfg.profile.with_overrides(c.overrides) for c in plan}
    chosen = {c.name: selection.collect(list(cfg.selection), profiles[c.name]) for c in plan}  # exit 2 first
    for cell in plan:  # every version resolved and built before the first cluster comes up
        ensure_binaries(profiles[cell.name], _progress)
    for cell in plan:  # and what each cell's tests need besides (upgrade starts, private clusters)
        needs = prebuild.needs(profiles[cell.name], "local", chosen[cell.name])
        prebuild.build(needs, _progress)
    out = _reports(cfg) / f"matrix-{time.strftime('%Y%m%d-%H%M%S')}"

    def run_cell(cell: matrix.Cell, run_dir: Path) -> int | None:
        run_dir.mkdir(parents=True, exist_ok=True)
        cluster = LocalCluster(profiles[cell.name], name=cell.name)
        try:
            cluster.up(_progress)
            run_id = f"m{time.strftime('%H%M%S')}{secrets.token_hex(2)}"
            rc = _suites(cfg, profiles[cell.name], cluster.handle_file, run_id, run_dir)
        except LwscError as exc:
            (run_dir / "error.txt").write_text(str(exc))
            _progress(f"cell {cell.label} broke: {exc}")
            return exc.exit_code
        finally:
            cluster.down()
        return _exit_code(rc, run_dir)

    m = matrix.run(plan, run_cell, out, _progress)
    print(matrix.render_md(m), end="")
    _progress(f"matrix: {out / 'matrix.md'}, {out / 'matrix.json'}")
    codes = {c.exit_code for c in m.columns}
    if 1 in codes:
        return 1
    if any(c.note for c in m.columns) or 3 in codes or None in codes:
        return 3
    return 4 if 4 in codes else 0


def cmd_bisect(cfg: RunConfig) -> int:
    """The first commit between --good and --bad where the named requirements break (or, with
    --fixed, start to hold): git bisects, each step builds that commit and runs only their tests."""
    o = cfg.options
    passed_on = [
        a
        for kv in cfg.sets
        if not kv.startswith((f"sources.{o.component}=", "network.base_port="))
        for a in ("--set", kv)
    ]
    plan = bisect.Plan(
        component=o.component,
        git=Path(o.git).expanduser() if o.git else Path(),
        good=o.good,
        bad=o.bad,
        requirements=list(o.requirement or []),
        focus=cfg.focus or "",
        tries=o.tries,
        fixed=o.fixed,
        reports=_reports(cfg),
        base_port=o.base_port,
        lwsc_args=["--profile", cfg.profile_name, *passed_on],
    )
    if not o.git:
        raise UserError(f"--git DIR is required: the {o.component} git repository (a bare snapshot is fine)")
    unknown = [r for r in plan.requirements if r not in catalogue.default()]
    if unknown:
        raise UserError(f"--requirement {' '.join(unknown)}: not in the catalogue (fixtures/requirements/)")
    cli_conventions.check_selection(["-k", bisect.focus_expression(plan)])  # exit 2 if it selects nothing
    result = bisect.run(plan, _progress)
    if result.first is None:
        _progress("bisect: no single commit found (every remaining candidate was skipped)")
        return 3
    pr = f" (PR #{result.pr})" if result.pr else ""
    word = "fixed" if o.fixed else "bad"
    print(f"first {word} commit: {result.first} {result.subject}{pr} ({result.seconds / 60:.1f} min)")
    return 0


def _tee(cmd: list[str], log: Path) -> int:
    """Run `cmd`, copying its output to the terminal and to `log` (the CNCF-style e2e.log).
    Tests write timelines and journals under `<run-dir>/artifacts` (LWSC_ARTIFACT_DIR)."""
    env = {**os.environ, "LWSC_ARTIFACT_DIR": str(log.parent / "artifacts")}
    with log.open("w") as fh:
        # Its own process group: a Ctrl-C at the terminal reaches lwsc only, which passes exactly
        # one SIGINT to pytest and its xdist workers (whose teardown deletes the run's namespaces).
        proc = subprocess.Popen(
            cmd,
            cwd=resources.root(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,
        )
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                fh.write(line)
            return proc.wait()
        except BaseException:  # SIGTERM/Ctrl-C of lwsc: pytest tears its tests down, then goes
            _interrupt_group(proc)
            raise


def _interrupt_group(proc: subprocess.Popen[str]) -> None:
    """SIGINT to the child's process group; wait for its cleanup; kill it after a deadline."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=CHILD_CLEANUP_S)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        _progress(f"pytest did not stop within {CHILD_CLEANUP_S}s of Ctrl-C; killing it")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def cmd_report(cfg: RunConfig) -> int:
    """Re-render a run directory offline from its recorded results, or merge shards' run
    directories into one (`--merge`). Exits with the run's conclusion code."""
    if cfg.options.merge:
        return _merge_report(cfg)
    if not cfg.options.run_dir:
        raise UserError("give a reports/<run-id> directory, or --merge DIR DIR ... to join shards")
    run_dir = Path(cfg.options.run_dir)
    if run_dir.is_file():  # a results archive (or Sonobuoy's tarball), read without extracting it first
        return cli_results.report_archive(cfg, bincache.cache_root() / "node")
    if not (run_dir / "results.json").is_file():
        raise UserError(f"{run_dir} has no results.json; give a reports/<run-id> directory of `lwsc run`")
    results = json.loads((run_dir / "results.json").read_text()).get("results") or []
    if results and "outcomes" not in results[0]:
        raise UserError(f"{run_dir} was written by an older lws-conformance (no per-requirement outcomes); re-run it")
    doc = render.render(run_dir, bincache.cache_root() / "node")
    print(run_dir / "summary.md")
    return int(doc.get("conclusion", {}).get("code", 3))


def _merge_report(cfg: RunConfig) -> int:
    dirs = [Path(d).expanduser().resolve() for d in cfg.options.merge]
    doc = merge.results(dirs)
    out = Path(cfg.options.out or _reports(cfg) / doc["run_id"]).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=False)
    (out / "results.json").write_text(json.dumps(doc, indent=2))
    merge.junit(dirs, out)
    merge.logs(dirs, out)
    render.render(out, bincache.cache_root() / "node")
    _progress(f"merged {len(dirs)} run directories ({len(doc['results'])} tests) into {out}")
    _progress(f"results archive: {cli_certify.write_archive(out)} (check it with `lwsc verify`)")
    code, line = _conclusion(0, out)
    _say_conclusion(code, line)
    print(out / "summary.md")
    return code


def cmd_chaos_target(cfg: RunConfig) -> int:
    """Namespace + LWS for the standalone chaos/ experiments; prints the env `chaos run` reads."""
    from .chaos_target import create

    _progress(_choice(cfg).line())
    on_kind = cfg.provider == "kind"
    cluster = _kind(cfg) if on_kind else _cluster(cfg)
    if not cluster.running():
        up = "lwsc --profile kind up" if on_kind else "lwsc up"
        raise UserError(f"cluster '{cfg.name}' is not up; run `{up}` first")
    if on_kind:  # the workload images kind nodes hold instead of the suites' (nothing is pulled)
        substitutes = ClusterHandle.from_json(cluster.handle_file.read_text()).images
        os.environ[images.SUBSTITUTES_ENV] = json.dumps(substitutes)
    env = create(str(cluster.kubeconfig), cfg.options.namespace, cfg.options.lws, cfg.options.node)
    if not on_kind:  # kind faults check the cluster's own handle instead of an opt-in
        env["LWSC_DISPOSABLE_CLUSTER"] = cfg.name  # process and node faults need this opt-in
    print(" ".join(f"{k}={v}" for k, v in env.items()))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lwsc",
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog=cli_conventions.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _global_args(p)
    sub = p.add_subparsers(dest="command", required=True)
    _cluster_commands(sub)
    _run_command(sub)
    _cluster_tool_commands(sub)
    _matrix_command(sub)
    _bisect_command(sub)
    EXTRA_HANDLERS.update(cli_certify.add_parsers(sub))
    EXTRA_HANDLERS.update(cli_incluster.add_parsers(sub))
    EXTRA_HANDLERS.update(cli_results.add_parsers(sub))
    cli_completion.add_parser(sub)
    cli_conventions.add_late_globals(p, sub)
    return p


def _global_args(p: argparse.ArgumentParser) -> None:
    """Options before the subcommand: profile, overrides, cluster name and provider."""
    p.add_argument("--version", action=_Version, help="print the harness version and commit, then exit")
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
    p.add_argument(
        "--provider",
        choices=("local", "kind", "existing"),
        help="who provides the cluster (default: the profile's `provider`, local); --kubeconfig implies existing",
    )
    p.add_argument("--kind-bin", help="kind binary (default: from PATH; never downloaded)")
    p.add_argument("--docker-bin", help="docker binary for the kind provider (default: from PATH)")
    p.add_argument("--kubectl-bin", help="kubectl binary for the kind provider (default: from PATH)")


def _cluster_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The local cluster's life cycle: build, up, down, status, kubeconfig; and report."""
    build_p = sub.add_parser(
        "build", help="build (or find in the cache) every binary the tests need: the profile's, upgrade starts' ..."
    )
    build_p.add_argument("--focus", help="only what the tests this pytest -k expression selects need")
    build_p.add_argument("--skip", help="leave out what only the tests this -k expression selects need")
    build_p.add_argument(
        "--kind",
        action="store_true",
        help="also build the kind provider's node, network, workload and controller images",
    )
    sub.add_parser("up", help="bring up the local cluster (idempotent); prints the kubeconfig path")
    sub.add_parser("down", help="stop every process of the local cluster and remove its state")
    stat = sub.add_parser("status", help="show each component, its pid and log file")
    stat.add_argument("--output", choices=("text", "json"), default="text", help="output format (default text)")
    sub.add_parser("kubeconfig", help="print the admin kubeconfig path")
    rep = sub.add_parser("report", help="re-render a run directory (summary, HTML, PRODUCT.yaml) offline")
    rep.add_argument("run_dir", nargs="?", help="a reports/<run-id> directory, or its .tar.gz (re-rendered into --out)")
    rep.add_argument("--merge", nargs="+", metavar="DIR", help="join the run directories of shards into one")
    rep.add_argument("--out", help="with --merge or an archive: the new run directory (default under --reports)")
    rep.add_argument("--reports", default=_default_reports(), help="default ./reports or $ARTIFACTS")


def _run_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The main job."""
    run = sub.add_parser("run", help="main job: up (or reuse), run the suites, write reports/")
    run.add_argument("--focus", help="run only tests matching this pytest -k expression (e.g. a requirement id)")
    run.add_argument("--skip", help="skip tests matching this pytest -k expression")
    run.add_argument("--dry-run", action="store_true", help="list what would run, run nothing")
    run.add_argument(
        "--reports", default=_default_reports(), help="where run directories go (default ./reports or $ARTIFACTS)"
    )
    run.add_argument(
        "-n",
        "--workers",
        default="auto",
        help="pytest-xdist workers (default auto: enough to keep the usable cores busy, 3 on 2 cores)",
    )
    run.add_argument(
        "--shard",
        metavar="K/N",
        help="run shard K of N of the selected tests (balanced by recorded durations); join with report --merge",
    )
    run.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    run.add_argument(
        "--certify",
        action="store_true",
        help="certification run: every requirement (no --focus/--skip); a MUST that failed, errored or did not "
        "run fails it; records the harness version and commit",
    )
    run.add_argument(
        "--strict",
        action="store_true",
        help="also fail when a listed deterministic known deviation no longer reproduces (deviation-fixed?)",
    )
    _accept_arg(run)
    _cluster_args(run)
    run.add_argument(
        "--allow-destructive",
        action="store_true",
        help="also run `destructive` tests on an existing cluster (they always run on local/kind)",
    )
    run.add_argument(
        "--in-cluster", action="store_true", help="run inside the cluster under test with the pod's ServiceAccount"
    )
    run.add_argument(
        "--product-metadata", metavar="FILE", help="YAML of PRODUCT.yaml metadata (vendorName, platformName, ...)"
    )
    cli_results.add_rerun_arg(run)
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")


def _accept_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--accept-known-deviations",
        action="store_true",
        help="exit 0 instead of 4 when every MUST that did not pass is a listed upstream bug of the installed "
        "versions (gating 'no new regressions'); the summary records that they were accepted",
    )


def _cluster_tool_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Commands against any cluster: discover, preflight, cleanup, chaos-target."""
    disc = sub.add_parser("discover", help="print a profile (topology labels, GPU resource) proposed from the nodes")
    _cluster_args(disc)
    disc.add_argument(
        "-o", "--output", help="`yaml` (default) or `json` to stdout, or a FILE to write the YAML proposal to as well"
    )
    pre = sub.add_parser("preflight", help="versions, feature gates and capacity of the cluster, before any test")
    _cluster_args(pre)
    pre.add_argument("--json", action="store_true", help="machine-readable output")
    pre.add_argument("--output", choices=("text", "json"), default="text", help="output format (--json = json)")
    clean = sub.add_parser("cleanup", help="delete what harness runs created (label lwsc.x-k8s.io/run), nothing else")
    _cluster_args(clean)
    clean.add_argument("--run-id", help="the run whose objects to delete")
    clean.add_argument("--all", action="store_true", help="every harness run's objects")
    tgt = sub.add_parser("chaos-target", help="create the namespace and LWS chaos/ experiments act on; print env")
    tgt.add_argument("--namespace", default="lwsc-chaos", help="namespace (gets the run label; default lwsc-chaos)")
    tgt.add_argument("--lws", default="chaos", help="LWS name (default chaos, the experiments' default)")
    tgt.add_argument(
        "--node", help="pin one group of 2 pods to this node (chaos/node-failure.yaml; on kind the chaos node)"
    )


def _matrix_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Several LWS / Kueue versions, one cluster each."""
    mat = sub.add_parser("matrix", help="run the suites against several LWS / Kueue versions; print a table")
    mat.add_argument("--lws", required=True, help="comma-separated LWS versions, e.g. v0.8.0,v0.9.0")
    mat.add_argument("--kueue", help="comma-separated Kueue versions (default: the profile's)")
    mat.add_argument("--focus", help="pytest -k expression, e.g. 'LWS-NAME or LWS-VALID'")
    mat.add_argument("--skip", help="pytest -k expression to leave out")
    mat.add_argument("-n", "--workers", default="2", help="pytest-xdist workers per cell (default 2)")
    mat.add_argument("--base-port", type=int, default=matrix.MATRIX_BASE_PORT, help="first cell's network.base_port")
    mat.add_argument("--reports", default=_default_reports(), help="default ./reports or $ARTIFACTS")
    _accept_arg(mat)
    mat.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")


def _bisect_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """From a red requirement to the upstream commit that broke it."""
    bis = sub.add_parser("bisect", help="find the first upstream commit that breaks (or fixes) requirements")
    bis.add_argument("--component", required=True, choices=("lws", "kueue"), help="which component's history")
    bis.add_argument("--git", help="the component's git repository (bare snapshots work; never written to)")
    bis.add_argument("--good", required=True, help="a ref where the promise held (with --fixed: where it broke)")
    bis.add_argument("--bad", required=True, help="a later ref where it broke (with --fixed: where it holds)")
    bis.add_argument("--requirement", nargs="+", metavar="ID", help="requirement ids whose tests decide each step")
    bis.add_argument("--focus", help="pytest -k expression of the tests to run (with --requirement: both)")
    bis.add_argument("--tries", type=int, default=1, help="runs per step; one try that fails makes it bad (races)")
    bis.add_argument("--fixed", action="store_true", help="find the first commit where they start to hold")
    bis.add_argument("--base-port", type=int, default=17500, help="network.base_port of the steps' clusters")
    bis.add_argument("--reports", default=_default_reports(), help="default ./reports or $ARTIFACTS")


EXTRA_HANDLERS: dict[str, cli_certify.Handler] = {}  # subcommands defined in cli_*.py modules


class _Version(argparse.Action):
    """`lwsc --version`: package version and the commit it was built from (git is asked only here)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        print(f"lwsc {provenance.version()} (commit {provenance.commit()})")
        parser.exit()


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="an existing cluster's kubeconfig (selects the existing provider)")
    p.add_argument("--context", help="kubeconfig context (default: its current context)")


def _sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def resolve(ns: argparse.Namespace) -> RunConfig:
    """Everything this invocation does, resolved once, before any work; every usage mistake is a
    one-line `UserError` (exit 2): the profile with every --set (the one `load_profile` of a run),
    then `lwsc run`'s own input (--in-cluster, --rerun-failed, --certify, -n, --shard,
    --product-metadata). The cluster is resolved at its first use (`_choice`, `_api_for`,
    `cli_incluster`), by `existing.resolve`."""
    command = str(ns.command)
    profile = load_profile(ns.profile, ns.set)  # validated before any work
    get = functools.partial(getattr, ns)
    kubeconfig, kubeconfig_from, focus = get("kubeconfig", None), "--kubeconfig", get("focus", None)
    if command == "run":
        if ns.in_cluster:  # the pod's ServiceAccount, existing provider
            kubeconfig = cli_incluster.in_cluster_kubeconfig(kubeconfig)
            kubeconfig_from = "--in-cluster (the pod's ServiceAccount)"
        rerun = cli_results.rerun_focus(ns.rerun_failed, focus or ns.skip or ns.certify or ns.shard)
        focus = rerun or focus  # --rerun-failed RUN: --focus on what did not pass there
        if ns.certify and (focus or ns.skip or ns.pytest_args):
            raise UserError("--certify runs every requirement: drop --focus/--skip and extra pytest arguments")
        _check_run_input(ns)
    skip = get("skip", None)
    reports = get("reports", None)
    return RunConfig.of(
        ns,
        command=command,
        profile=profile,
        profile_name=str(ns.profile),
        sets=tuple(ns.set),
        name=str(ns.name),
        # --kubeconfig (or --in-cluster) means an existing cluster; else --provider, else the profile's
        provider="existing" if kubeconfig else str(ns.provider or profile.provider),
        provider_flag=ns.provider,
        kubeconfig=kubeconfig,
        kubeconfig_from=kubeconfig_from,
        context=get("context", None),
        kubeconfig_env=os.environ.get("KUBECONFIG") or None,
        reports=Path(reports).expanduser().resolve() if reports else None,
        focus=focus,
        skip=skip,
        selection=tuple(selection.keyword_args(focus, skip)),
        workers=worker_count.resolve(str(ns.workers)) if hasattr(ns, "workers") else None,
        shard=get("shard", None),
        certify=bool(get("certify", False)),
        strict=bool(get("strict", False)),
        keep=bool(get("keep", False)),
        dry_run=bool(get("dry_run", False)),
        allow_destructive=bool(get("allow_destructive", False)),
        accept_known_deviations=bool(get("accept_known_deviations", False)),
        in_cluster=bool(get("in_cluster", False)),
        pytest_args=tuple(get("pytest_args", ())),
        tools=(ns.kind_bin, ns.docker_bin, ns.kubectl_bin),
    )


def main(argv: list[str] | None = None) -> int:
    ns = cli_conventions.finish(parser().parse_args(argv))
    signal.signal(signal.SIGTERM, _sigterm)
    # Started in the background by a script, a process inherits SIGINT ignored; lwsc's cleanup
    # path is KeyboardInterrupt, so Ctrl-C (SIGINT) must reach it however it was started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `lwsc status | head` ends quietly, as other tools do
    handlers = {
        "build": cmd_build,
        "up": cmd_up,
        "down": cmd_down,
        "status": cmd_status,
        "kubeconfig": cmd_kubeconfig,
        "run": cmd_run,
        "report": cmd_report,
        "discover": cmd_discover,
        "preflight": cmd_preflight,
        "cleanup": cmd_cleanup,
        "matrix": cmd_matrix,
        "bisect": cmd_bisect,
        "completion": lambda c: print(cli_completion.script(parser(), c.options.shell), end="") or 0,
        **EXTRA_HANDLERS,
        "chaos-target": cmd_chaos_target,
    }
    state = RunState()
    try:
        cfg = resolve(ns)
        state = cfg.state
        return handlers[cfg.command](cfg)
    except LwscError as exc:
        print(f"{_paint('lwsc: error:', '1;31')} {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        said = apicheck.midway(exc)  # a cluster that refused after the up-front check: one line too
        if said is None:
            raise
        print(f"{_paint('lwsc: error:', '1;31')} {said[1]}", file=sys.stderr)
        return 3 if state.run_started else said[0]
    except KeyboardInterrupt:
        print("lwsc: interrupted; everything started by this command was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
