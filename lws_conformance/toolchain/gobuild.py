"""Builds components from their Go modules with the machine's Go toolchain.

Every component is built through a small wrapper module (see `recipes.wrapper_go_mod`), which
works for modules with replace directives (etcd, kubernetes) and for a local checkout alike.
Builds print progress: `go build -v` names each package it compiles, and we count them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import InfraError, UserError
from . import cache
from .recipes import ALL_RECIPES, Recipe, cover_flags, kubernetes_staging_replaces, ldflags, tools_go, wrapper_go_mod

Progress = Callable[[str], None]
TRANSIENT = "\r"  # a progress message starting with it may be rewritten in place on a terminal
# Set (to "1") inside a test run of the suites: nothing builds there (`lwsc build`, and `lwsc run`
# before pytest starts, build what the selected tests need); a missing binary is an error at once.
NO_BUILD_ENV = "LWSC_NO_BUILD"
# Packages a cold `go build -v` compiles (measured here); the first estimate before any build of ours.
COLD_PACKAGES = {"etcd": 650, "kubernetes": 2550, "kwok": 630, "lws": 655, "kueue": 1315, "kind": 250}
# The cache entries of directory sources this process has built: one command builds a directory
# once (`lwsc run` builds before pytest starts, then brings its cluster up with that build), not
# again at every bring-up; the next command brings it up to date.
_BUILT_HERE: set[Path] = set()


def not_built(whats: list[str], log: Path, profile_name: str = "default") -> InfraError:
    """The error of builds that may not run here (inside a test run): names the builds, the
    command that runs them and the first one's last log."""
    command = "lwsc build" if profile_name == "default" else f"lwsc --profile {profile_name} build"
    last = f"its last build log: {log}" if log.is_file() else f"no build log yet ({log})"
    what = f"{whats[0]} is" if len(whats) == 1 else f"{', '.join(whats[:-1])} and {whats[-1]} are"
    return InfraError(
        f"{what} not built and nothing builds inside a test run: run `{command}` first "
        f"(`lwsc run` builds what its tests need before they start); {last}"
    )


def builds_forbidden() -> bool:
    return os.environ.get(NO_BUILD_ENV) == "1"


def go_binary() -> str:
    go = shutil.which("go")
    if not go:
        raise UserError(
            "no Go toolchain on PATH: install Go >= 1.26 (https://go.dev/dl) or point "
            "binaries.<name> in the profile at prebuilt binaries"
        )
    return go


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CGO_ENABLED", "0")
    env.setdefault("GOFLAGS", "-buildvcs=false")
    return env


def module_download(module: str, version: str) -> dict[str, str]:
    """`go mod download -json module@version`; a refusal is a UserError naming the version."""
    proc = subprocess.run(
        [go_binary(), "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        env=_go_env(),
        cwd=cache.cache_root().as_posix() if cache.cache_root().exists() else None,
    )
    try:
        info: dict[str, str] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or "Error" in info or "Dir" not in info:
        reason = (info.get("Error") or proc.stderr or "unknown error").strip().splitlines()[0]
        raise UserError(
            f"{module}@{version} cannot be obtained from the Go module proxy ({reason}); "
            f"choose another version with --set versions.<component>=..., or set sources.<component>"
        )
    return info


def module_dir(component: str, version: str, source: str | None) -> Path:
    """The directory holding the component's sources (manifests under config/ live there).
    Remembered in the cache: asking the go command costs a second or two per bring-up."""
    if source:
        return Path(source).resolve()
    memo = cache.cache_root() / "moddirs.json"
    key = f"{ALL_RECIPES[component].module}@{version}"
    known: dict[str, str] = json.loads(memo.read_text()) if memo.is_file() else {}
    if key in known and Path(known[key]).is_dir():
        return Path(known[key])
    directory = module_download(ALL_RECIPES[component].module, version)["Dir"]
    known[key] = directory
    memo.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, indent=1))
    tmp.rename(memo)
    return Path(directory)


def _estimate(count: int, expected: int | None, elapsed: float) -> str:
    """`, ~Ns left` from the package count of the last build of the same component."""
    if not expected or count < 20 or count >= expected:
        return ""
    return f", ~{elapsed * (expected - count) / count:.0f}s left (of ~{expected} packages)"


def _run_with_progress(
    cmd: list[str], cwd: Path, log: Path, label: str, progress: Progress, expected: int | None = None
) -> int:
    """Run `cmd`, teeing output to `log`; report progress on a heartbeat (1 s on a terminal, as one
    line rewritten in place; 30 s otherwise, so CI logs stay short) whether or not the command
    prints anything. Returns how many lines (packages, for `go build -v`) it printed."""
    start = time.monotonic()
    interval = 1.0 if sys.stderr.isatty() else 30.0
    count = 0
    with log.open("a", buffering=1) as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=_go_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

        def pump() -> None:
            nonlocal count
            assert proc.stdout is not None
            for line in proc.stdout:
                fh.write(line)
                count += 1

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            while True:
                try:
                    rc = proc.wait(timeout=interval)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - start
                    progress(
                        f"{TRANSIENT}{label}: {count} packages, {elapsed:.0f}s{_estimate(count, expected, elapsed)}"
                    )
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        reader.join()
    if rc != 0:
        tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
        raise InfraError(f"{label} failed ({tail[0]}); full log: {log}")
    return count


def _packages_seen(component: str, count: int | None = None) -> int | None:
    """The package count of this component's last build (the estimate's denominator); records
    `count` when given."""
    path = cache.cache_root() / "build-stats.json"
    stats: dict[str, int] = json.loads(path.read_text()) if path.is_file() else {}
    if count is not None:
        stats[component] = count
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(stats, indent=1))
        tmp.rename(path)
    return stats.get(component, COLD_PACKAGES.get(component))


def build(
    component: str,
    version: str,
    source: str | None,
    progress: Progress,
    coverage: bool = False,
    replace: Mapping[str, str] | None = None,
) -> Path:
    """Build (or reuse from cache) one component; returns the directory with its binaries.
    `coverage`: instrumented for Go coverage (`recipes.cover_flags`), cached apart from the plain
    build. `replace`: build.go_replace of the component (module -> version or directory)."""
    recipe: Recipe = ALL_RECIPES[component]
    replace = dict(replace or {})
    out = cache.bin_dir(component, version, source, coverage, replace)
    key = out.name
    with cache.locked(f"{component}-{key}"):
        # A module version, or a git snapshot (immutable: keyed by commit), is built once; so is
        # a build whose replaced modules are versions or snapshots.
        snapshots = (cache.cache_root() / "src").resolve()

        def immutable(tree: str | None) -> bool:
            return not tree or not tree.startswith("/") or Path(tree).resolve().parent == snapshots

        # Inside a test run a directory's build is the one made before pytest started (`lwsc run`,
        # `lwsc build`): it is used as it is, not brought up to date.
        fixed = (
            builds_forbidden()
            or out in _BUILT_HERE
            or (immutable(source) and all(immutable(t) for t in replace.values()))
        )
        if fixed and out.is_dir():
            wrong = cache.damaged(out, recipe.binaries)
            if wrong is None:
                return out
            progress(f"{component} {source or version}: cached binaries are damaged ({wrong}); rebuilding {out}")
        work = cache.build_dir(component, key)
        if builds_forbidden():
            raise not_built([f"{component} {source or version}"], work / "build.log")
        go = go_binary()
        work.mkdir(parents=True, exist_ok=True)
        log = work / "build.log"
        log.write_text("")
        replaces: dict[str, str] = {}
        if recipe.module == "k8s.io/kubernetes" and not source:
            go_mod_path = module_download(recipe.module, version)["GoMod"]
            replaces = kubernetes_staging_replaces(Path(go_mod_path).read_text(), version)
        elif not source:
            module_download(recipe.module, version)
        (work / "go.mod").write_text(wrapper_go_mod(recipe, version, {**replaces, **replace}, source))
        (work / "tools.go").write_text(tools_go(recipe))
        (work / "go.sum").unlink(missing_ok=True)
        label = f"{component} {source or version}{' (coverage)' if coverage else ''}"
        progress(f"{label}: resolving modules (log: {log})")
        _run_with_progress([go, "mod", "tidy"], work, log, f"{label} go mod tidy", progress)
        tmp = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        cmd = [go, "build", "-v", "-trimpath", *(cover_flags(recipe) if coverage else [])]
        cmd += ["-ldflags", ldflags(recipe, version), "-o"]
        if len(recipe.binaries) == 1:
            ((name, pkg),) = recipe.binaries.items()
            cmd += [str(tmp / name), pkg]
        else:
            cmd += [str(tmp) + "/", *recipe.binaries.values()]
        started = time.monotonic()
        packages = _run_with_progress(cmd, work, log, f"{label} build", progress, _packages_seen(component))
        if packages > 20 and not source and not coverage:
            _packages_seen(component, packages)
        if len(recipe.binaries) > 1:
            for name, pkg in recipe.binaries.items():
                built = tmp / pkg.rsplit("/", 1)[-1]
                if built != tmp / name:
                    built.rename(tmp / name)
        cache.seal(tmp, recipe.binaries)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
        _BUILT_HERE.add(out)
        progress(f"{label}: built in {time.monotonic() - started:.0f}s -> {out}")
        return out
