"""`sources.<component>=DIR@REF`: ref parsing, export keyed by commit, the real version reported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lws_conformance import gitsource
from lws_conformance.cli import main
from lws_conformance.errors import UserError
from lws_conformance.profile import load_profile


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """v0.9.0 <- v0.10.0 <- main (one commit past the tag), plus a branch 'feature/x'."""
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    r = tmp_path / "lws"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    for i, tag in enumerate(("v0.9.0", "v0.10.0", None)):
        (r / "go.mod").write_text(f"module sigs.k8s.io/lws // {i}\n")
        _git(r, "add", "go.mod")
        _git(r, "commit", "-q", "-m", f"c{i}")
        if tag:
            _git(r, "tag", tag)
    _git(r, "branch", "feature/x", "v0.10.0")
    return r


def test_split_keeps_existing_paths_with_at(tmp_path: Path) -> None:
    odd = tmp_path / "lws@v0.9.0"
    odd.mkdir()
    assert gitsource.split(str(odd)) == (odd, None)
    assert gitsource.split("/no/such@main") == (Path("/no/such"), "main")
    assert gitsource.split("/a/b") == (Path("/a/b"), None)


def test_tag_branch_and_commit_versions(repo: Path) -> None:
    main_sha = _git(repo, "rev-parse", "main")
    short = main_sha[:7]
    assert gitsource.resolve("lws", f"{repo}@v0.10.0", "v0.9.0", False).version == "v0.10.0"
    on_main = gitsource.resolve("lws", f"{repo}@main", "v0.9.0", False)
    assert on_main.version == f"v0.10.0+main.1@{short}" and on_main.commit == main_sha
    assert gitsource.resolve("lws", f"{repo}@{main_sha}", "v0.9.0", False).version == f"v0.10.0+commit.1@{short}"
    # a branch whose head carries a release tag is that release
    assert gitsource.resolve("lws", f"{repo}@feature/x", "v0.9.0", False).version == "v0.10.0"
    assert gitsource.resolve("lws", f"{repo}@v0.9.0", "v0.10.0", True).version == "v0.9.0"


def test_export_is_keyed_by_commit_and_stamped(repo: Path, tmp_path: Path) -> None:
    got = gitsource.resolve("lws", f"{repo}@v0.10.0", "v0.9.0", False)
    sha = _git(repo, "rev-parse", "v0.10.0^{commit}")
    assert got.path == tmp_path / "cache" / "src" / f"lws-{sha[:12]}"
    assert (got.path / "go.mod").read_text() == "module sigs.k8s.io/lws // 1\n"
    assert (got.path / gitsource.STAMP).read_text() == f"v0.10.0 {sha}\n"
    # the exported tree, given as a plain path, still reports the version it was cut from
    again = gitsource.resolve("lws", str(got.path), "v0.9.0", False)
    assert (again.version, again.commit) == ("v0.10.0", sha)


def test_bad_ref_and_bad_dir_are_user_errors(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"'v9\.9\.9' is not a tag, branch or commit"):
        gitsource.resolve("lws", f"{repo}@v9.9.9", "v0.9.0", False)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UserError, match="is not a git repository"):
        gitsource.resolve("lws", f"{plain}@main", "v0.9.0", False)
    with pytest.raises(UserError, match=r"version is unknown; pass --set versions\.lws="):
        gitsource.resolve("lws", str(plain), "v0.9.0", False)
    assert gitsource.resolve("lws", str(plain), "v0.9.0", True).version == "v0.9.0"


def test_work_tree_is_described_from_head(repo: Path) -> None:
    short = _git(repo, "rev-parse", "--short=7", "main")
    assert gitsource.resolve("lws", str(repo), "v0.9.0", False).version == f"v0.10.0+main.1@{short}"
    (repo / "go.mod").write_text("changed\n")
    assert gitsource.resolve("lws", str(repo), "v0.9.0", False).version == f"v0.10.0+main.1@{short}.dirty"
    _git(repo, "checkout", "-q", "-f", "v0.9.0")
    assert gitsource.resolve("lws", str(repo), "v0.10.0", False).version == "v0.9.0"


def test_directory_inside_another_checkout_is_not_described_by_it(repo: Path) -> None:
    inner = repo / "vendor-copy"
    inner.mkdir()
    with pytest.raises(UserError, match="version is unknown"):
        gitsource.resolve("lws", str(inner), "v0.9.0", False)


def test_module_cache_directory_names_its_version(tmp_path: Path) -> None:
    d = tmp_path / "lws@v0.8.0"
    d.mkdir()
    assert gitsource.resolve("lws", str(d), "v0.9.0", False).version == "v0.8.0"


def test_profile_uses_the_real_version(repo: Path) -> None:
    p = load_profile(overrides=[f"sources.lws={repo}@v0.10.0"])
    assert (
        p.versions["lws"] == "v0.10.0"
        and p.sources["lws"]
        and p.sources["lws"].endswith(_git(repo, "rev-parse", "v0.10.0^{commit}")[:12])
    )
    # the real version wins over a label given by hand
    assert load_profile(overrides=[f"sources.lws={repo}@v0.10.0", "versions.lws=v0.9.0"]).versions["lws"] == "v0.10.0"


def test_cli_bad_ref_exits_2_with_one_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--name", "h16-unit", "--set", f"sources.lws={repo}@nope", "build"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'nope' is not a tag, branch or commit" in err[0]


def test_go_replace_targets_are_resolved_once_in_the_profile(repo: Path, tmp_path: Path) -> None:
    """build.go_replace.<c>: a version stays a version, DIR@REF is exported (keyed by commit), a
    directory with a go.mod is made absolute; the upgrade's start version drops them."""
    plain = tmp_path / "ray"
    plain.mkdir()
    (plain / "go.mod").write_text("module github.com/ray-project/kuberay/ray-operator\n")
    items = f"[sigs.k8s.io/lws={repo}@v0.10.0,example.com/a=v1.6.2,example.com/b={plain}]"
    p = load_profile(overrides=[f"build.go_replace.kueue={items}"])
    lws_dir = p.go_replace["kueue"]["sigs.k8s.io/lws"]
    assert lws_dir.endswith("lws-" + _git(repo, "rev-parse", "v0.10.0^{commit}")[:12]) and Path(lws_dir).is_dir()
    assert p.go_replace["kueue"]["example.com/a"] == "v1.6.2"
    assert p.go_replace["kueue"]["example.com/b"] == str(plain.resolve())
    assert "kueue" not in p.upgrade_start("kueue", "v0.17.0").go_replace
    assert p.upgrade_start("lws", "v0.8.0").go_replace == p.go_replace


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[sigs.k8s.io/lws]", "must look like example.com/module=v1.2.3"),
        ("sigs.k8s.io/lws=v0.10.0", "must be a list of module=target"),
        ("[sigs.k8s.io/lws=/nowhere]", "is neither a version (v1.2.3), a git DIR@REF nor a directory with a go.mod"),
        ("[sigs.k8s.io/lws={repo}@nope]", "'nope' is not a tag, branch or commit"),
    ],
)
def test_bad_go_replace_is_one_line_naming_the_setting(repo: Path, value: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        load_profile(overrides=[f"build.go_replace.kueue={value.format(repo=repo)}"])
    assert message in str(err.value) and "build.go_replace.kueue" in str(err.value) and "\n" not in str(err.value)


def test_go_replace_of_an_unknown_component_is_refused() -> None:
    with pytest.raises(UserError, match="unknown profile key 'build.go_replace.kwok'"):
        load_profile(overrides=["build.go_replace.kwok=[example.com/a=v1.0.0]"])
