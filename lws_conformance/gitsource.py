"""`sources.<component>` as a git directory plus a ref, and the real version of a source tree.

`sources.lws=/path/to/lws.git@v0.10.0` (a tag, a branch such as `main`, or a commit) resolves the
ref to a commit, exports that commit's tree with `git archive` into the cache
(`$LWSC_CACHE_DIR/src/<component>-<commit[:12]>`, written to `.tmp` and renamed, so it is reused and
never half-written) and names the version of the code that will run:

- the commit carries a release tag (`vX.Y.Z`, the ref itself when the ref is a tag): that tag;
- otherwise `<nearest ancestor tag>+<branch or "commit">.<N>@<short sha>`, e.g.
  `v0.10.0+main.11@060ab4d`: N first-parent commits after the tag (what `git describe` finds).
  Version gating reads the tag, and on main also N: `since: v0.10.0+main.6` marks a rule merged
  to main as its 6th commit after v0.10.0 (`catalogue.reached`).

A plain directory (no `@REF`): a git work tree is described the same way from its HEAD (`-dirty`
when files differ); a directory outside git has no knowable version, so its `versions.<component>`
must be given explicitly (`--set versions.lws=...` or a profile file), never the default's label.
Snapshots whose largest blobs are absent (the mirrors here) export without those files; the list is
written to `.lwsc-omitted` in the exported tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

TAG = re.compile(r"^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")
MODULE_DIR = re.compile(r"^[^@]+@(v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$")
RELEASE = re.compile(r"^v\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class Resolved:
    path: Path  # the tree to build (exported snapshot, or the checkout itself)
    version: str  # real version: gating, known deviations and every report use it
    commit: str | None = None


def git(repo: Path, *args: str, check: bool = True) -> str:
    """`git -C repo ARGS`'s stripped output ("" when it failed and `check` is off)."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args, proc.stdout, proc.stderr)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def is_git(path: Path) -> bool:
    """`path` itself is a repository (bare, or a work tree's top): a plain directory nested in
    some other checkout is not described by that checkout's history."""
    if not path.is_dir():
        return False
    if git(path, "rev-parse", "--is-bare-repository", check=False) == "true":
        return Path(git(path, "rev-parse", "--absolute-git-dir")).resolve() == path.resolve()
    top = git(path, "rev-parse", "--show-toplevel", check=False)
    return bool(top) and Path(top).resolve() == path.resolve()


def split(spec: str) -> tuple[Path, str | None]:
    """`DIR@REF` -> (DIR, REF); an existing path (even with an '@' in it) -> (path, None)."""
    if Path(spec).exists() or "@" not in spec:
        return Path(spec), None
    where, _, ref = spec.rpartition("@")
    return Path(where), ref


def commit_of(repo: Path, ref: str, key: str) -> str:
    sha = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if not sha:
        raise UserError(f"{key}: '{ref}' is not a tag, branch or commit of {repo}; list them with git -C {repo} tag")
    return sha


def version_at(repo: Path, commit: str, ref: str | None) -> str:
    """The tag at `commit`, else `<ancestor tag>+<branch|commit>@<short sha>`."""
    tags = git(repo, "tag", "--points-at", commit, check=False).split()
    if ref in tags and TAG.match(ref or ""):
        return str(ref)
    releases = sorted((t for t in tags if RELEASE.match(t)), key=_key)
    if releases:
        return releases[-1]
    base = git(repo, "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*", commit, check=False)
    if not TAG.match(base):
        base = "v0.0.0"
    short = git(repo, "rev-parse", "--short=7", commit)
    name = ref if ref and _is_branch(repo, ref) else "commit"
    after = git(repo, "rev-list", "--count", "--first-parent", f"{base}..{commit}", check=False) or "0"
    return f"{base}+{re.sub(r'[^0-9A-Za-z-]', '-', name)}.{after}@{short}"


def _key(tag: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag)[:3])


def _is_branch(repo: Path, ref: str) -> bool:
    return any(
        git(repo, "rev-parse", "--verify", "--quiet", f"{prefix}{ref}", check=False)
        for prefix in ("refs/heads/", "refs/remotes/origin/")
    )


def cache_root() -> Path:
    env = os.environ.get("LWSC_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "lws-conformance"


STAMP = ".lwsc-source"  # "<version> <commit>", written into every exported tree


def export(repo: Path, commit: str, component: str, version: str) -> Path:
    """`git archive` of `commit` into the cache (reused when present); absent blobs are left out."""
    out = cache_root() / "src" / f"{component}-{commit[:12]}"
    if out.is_dir():
        return out
    listing = git(repo, "ls-tree", "-r", "-z", "--format=%(objecttype) %(objectname) %(path)", commit)
    blobs = [e.split(" ", 2) for e in listing.split("\0") if e.startswith("blob ")]
    check = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-check"],
        input="".join(f"{sha}\n" for _, sha, _ in blobs),
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    missing = [path for (_, _, path), line in zip(blobs, check, strict=True) if line.endswith(" missing")]
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    excludes = [f":(exclude,literal){p}" for p in missing]
    archive = subprocess.Popen(
        ["git", "-C", str(repo), "archive", commit, "--", ".", *excludes], stdout=subprocess.PIPE
    )
    untar = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, capture_output=True)
    if archive.wait() != 0 or untar.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UserError(f"git archive of {commit[:12]} from {repo} failed; check the repository with git fsck")
    (tmp / ".lwsc-omitted").write_text("".join(f"{p}\n" for p in missing))
    (tmp / STAMP).write_text(f"{version} {commit}\n")
    tmp.rename(out)
    return out


def describe_tree(path: Path) -> str | None:
    """A git work tree's version from HEAD (`-dirty` if files differ); None outside git."""
    if not is_git(path):
        return None
    head = git(path, "rev-parse", "HEAD", check=False)
    if not head:
        return None
    branch = git(path, "rev-parse", "--abbrev-ref", "HEAD", check=False)
    version = version_at(path, head, branch if branch and branch != "HEAD" else None)
    dirty = git(path, "status", "--porcelain", "--untracked-files=no", check=False)
    return f"{version}{'.dirty' if '+' in version else '+dirty'}" if dirty else version


def replacement(key: str, module: str, spec: str) -> str:
    """A `build.go_replace` target -> what a go.mod `replace` line points at: a module version
    (`v1.6.2`) as it is, a git `DIR@REF` exported into the cache (its absolute path), or an
    existing directory (its absolute path). `key` names the setting in every error."""
    if TAG.match(spec):
        return spec
    path, ref = split(spec)
    if ref is not None:
        if not is_git(path):
            raise UserError(f"{key}: {module}={spec}: {path} is not a git repository; give DIR@REF with a git DIR")
        commit = commit_of(path, ref, key)
        return str(export(path, commit, module.rsplit("/", 1)[-1], version_at(path, commit, ref)))
    if not (path / "go.mod").is_file():
        raise UserError(
            f"{key}: {module}={spec} is neither a version (v1.2.3), a git DIR@REF nor a directory with a go.mod"
        )
    return str(path.resolve())


def resolve(component: str, spec: str, declared: str, explicit: bool) -> Resolved:
    """`sources.<component>` -> the tree to build and its real version (module docstring)."""
    key = f"sources.{component}"
    path, ref = split(spec)
    if ref is not None:
        if not is_git(path):
            raise UserError(f"{key}={spec}: {path} is not a git repository; give DIR@REF with a git DIR")
        commit = commit_of(path, ref, key)
        version = version_at(path, commit, ref)
        return Resolved(export(path, commit, component, version), version, commit)
    if not path.exists():
        raise UserError(f"{key}={spec} does not exist; give an existing path (or a git DIR@REF)")
    stamp = path / STAMP
    if stamp.is_file():  # a tree this module exported: it recorded the version it was cut from
        version, _, commit = stamp.read_text().strip().partition(" ")
        return Resolved(path.resolve(), version, commit or None)
    described = describe_tree(path)
    if described:
        return Resolved(path.resolve(), described, git(path, "rev-parse", "HEAD", check=False) or None)
    cached = MODULE_DIR.match(path.resolve().name)
    if cached and not explicit:
        return Resolved(path.resolve(), cached.group(1))  # a Go module cache directory: module@vX.Y.Z
    if not explicit:
        raise UserError(
            f"{key}={spec} is not a git checkout, so its version is unknown; "
            f"pass --set versions.{component}=<its version> (or use a git DIR@REF)"
        )
    return Resolved(path.resolve(), declared)
