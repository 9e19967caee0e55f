"""Everything `lwsc run` reads is checked before any work, and the cluster is said first:
--product-metadata against its schema, the kubeconfig and context, the shard (also in --dry-run,
which prints the resolved target, profile, versions, tests and requirement ids); a bad input is
one line and exit 2 with nothing written; the run directory and reports/latest appear only once
the cluster is up."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lws_conformance import cli, prebuild
from lws_conformance.errors import UserError
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.providers.local import LocalCluster

Run = Callable[..., tuple[int, str, list[str]]]
GOOD = {
    "vendorName": "Example",
    "platformName": "Example Kubernetes",
    "platformVersion": "1.2",
    "websiteUrl": "https://example.com",
    "documentationUrl": "https://example.com/docs",
    "productLogoUrl": "https://example.com/logo.svg",
    "description": "An example platform",
    "contactEmailAddress": "k8s@example.com",
    "k8sConformanceUrl": "https://github.com/cncf/k8s-conformance/tree/master/v1.36/example",
}


@pytest.fixture
def lwsc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    """`lwsc ARGS` in this process, in the directory `cwd`: (exit code, stdout, stderr lines)."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE)}

    def run(*args: str) -> tuple[int, str, list[str]]:
        capsys.readouterr()
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err.splitlines()

    yield run
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _refused(result: tuple[int, str, list[str]], *needles: str) -> str:
    code, _out, err = result
    assert code == 2 and len(err) == 1 and err[0].startswith("lwsc: error:"), err
    for needle in needles:
        assert needle in err[0], err[0]
    return err[0]


def _metadata(tmp_path: Path, text: str) -> str:
    path = tmp_path / "vendor.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "certify", "needles"),
    [
        ("vendorName: [unclosed\n", True, ("is not valid YAML",)),
        ("- vendorName: Example\n", True, ("must be a mapping", "not a list")),
        (
            "vendorname: Example\nplatfromName: X\n",
            False,
            (
                "unknown key 'vendorname' (did you mean vendorName?)",
                "unknown key 'platfromName'; valid keys: vendorName",
            ),
        ),
        ("vendor_name: Example\n", False, ("did you mean vendorName?",)),
        ("platformVersion: 1.2\n", False, ("platformVersion must be a string, not float",)),
        ("metadata: {vendorName: Example}\nextra: 1\n", False, ("unknown top-level key(s) extra",)),
        ("k8sConformanceUrl: https://example.com\n", False, ("k8sConformanceUrl https://example.com is not a",)),
        ("vendorName: '[Vendor Name]'\n", True, ("vendorName is still the placeholder [Vendor Name]", "missing:")),
    ],
)
def test_product_metadata_is_checked_before_any_work(
    text: str, certify: bool, needles: tuple[str, ...], tmp_path: Path, lwsc: Run
) -> None:
    flags = ["--certify"] if certify else ["--dry-run"]
    _refused(lwsc("run", *flags, "--product-metadata", _metadata(tmp_path, text)), "--product-metadata", *needles)
    assert list((tmp_path / "cwd").iterdir()) == [] and not (tmp_path / "state").exists()


def test_good_product_metadata_passes_also_under_certify(tmp_path: Path, lwsc: Run) -> None:
    import yaml

    flat = _metadata(tmp_path, yaml.safe_dump(GOOD))
    assert lwsc("run", "--dry-run", "--product-metadata", flat)[0] == 0
    nested = _metadata(tmp_path, yaml.safe_dump({"metadata": GOOD}))
    assert lwsc("run", "--dry-run", "--product-metadata", nested)[0] == 0
    placeholder = _metadata(tmp_path, yaml.safe_dump({**GOOD, "description": "[Description]"}))
    assert lwsc("run", "--dry-run", "--product-metadata", placeholder)[0] == 0  # fine outside --certify


def test_dry_run_resolves_the_target_and_lists_the_shards_tests(tmp_path: Path, lwsc: Run) -> None:
    code, out, _err = lwsc("run", "--dry-run", "--focus", "LWS-UPGRADE", "--shard", "1/2")
    assert code == 0
    assert "target:       local cluster 'default'" in out and "profile:      default" in out
    assert "lws v0.9.0" in out and "shard 1/2" in out and "tests (1):" in out
    assert "requirements (2): LWS-UPGRADE-001 LWS-UPGRADE-002" in out
    other = lwsc("run", "--dry-run", "--focus", "LWS-UPGRADE", "--shard", "2/2")[1]
    mine, theirs = ({ln for ln in text.splitlines() if "::" in ln} for text in (out, other))
    assert len(mine) == len(theirs) == 1 and mine != theirs
    _refused(lwsc("run", "--dry-run", "--focus", "LWS-NAME-001", "--shard", "2/2"), "shard 2/2", "holds no test")


def test_a_wrong_kubeconfig_or_context_is_refused_before_anything(tmp_path: Path, lwsc: Run) -> None:
    kc = tmp_path / "vendor.kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: vendor\nclusters: [{name: c, cluster: {server: "
        "'https://127.0.0.1:1'}}]\ncontexts: [{name: vendor, context: {cluster: c, user: u}}]\nusers: [{name: u}]\n"
    )
    _refused(lwsc("run", "--dry-run", "--kubeconfig", "/nonexistent"), "/nonexistent", "does not exist")
    _refused(lwsc("run", "--dry-run", "--kubeconfig", str(kc), "--context", "nope"), "context 'nope' not in")
    _refused(lwsc("run", "--dry-run", "--context", "vendor"), "--context", "--kubeconfig")
    code, out, _ = lwsc("run", "--dry-run", "--kubeconfig", str(kc), "--focus", "LWS-NAME-001")
    assert code == 0 and "target:       existing cluster https://127.0.0.1:1 (context vendor" in out
    reports = tmp_path / "cwd" / "reports"
    (reports / "earlier").mkdir(parents=True)
    (reports / "latest").symlink_to("earlier")
    _refused(lwsc("run", "--kubeconfig", str(kc), "--context", "nope"), "context 'nope' not in")
    assert sorted(p.name for p in reports.iterdir()) == ["earlier", "latest"]  # no empty run directory
    assert (reports / "latest").readlink() == Path("earlier")


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The local provider and the suites stubbed out; what was done, in order."""
    done: list[str] = []

    def up(self: LocalCluster, progress: Callable[[str], None]) -> ClusterHandle:
        if done == ["refuse"]:
            done[:] = ["up"]
            raise UserError("port 16002 is in use; choose another network.base_port")
        done.append("up")
        return ClusterHandle("local", tmp_path / "kubeconfig", {}, self.profile.topology, "t", "f")

    monkeypatch.setattr(LocalCluster, "up", up)
    monkeypatch.setattr(LocalCluster, "running", lambda self: False)
    monkeypatch.setattr(LocalCluster, "down", lambda self, keep_logs=False: done.append("down"))
    monkeypatch.setattr(prebuild, "build", lambda needs, progress: [])
    monkeypatch.setattr(cli, "_suites", lambda *a, **k: done.append("pytest") or 0)
    monkeypatch.setattr(cli.cli_certify, "write_archive", lambda out: out / "x.tar.gz")
    return done


def test_the_target_is_said_first_and_an_unused_kubeconfig_named(
    stubbed: list[str], tmp_path: Path, lwsc: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", "/home/me/.kube/config")
    for argv in (["run", "--focus", "LWS-NAME-001"], ["up"], ["down"]):
        _code, _out, err = lwsc(*argv)
        first = err[0]
        assert "cluster: local cluster 'default'" in first and "chosen by the default provider (local)" in first
        assert "$KUBECONFIG (/home/me/.kube/config) is not used" in first and '--kubeconfig "$KUBECONFIG"' in first
    _code, _out, err = lwsc("--provider", "local", "up")
    assert "chosen by --provider local" in err[0] and "KUBECONFIG" not in err[0]


def test_a_cluster_that_does_not_come_up_leaves_no_run_directory(stubbed: list[str], tmp_path: Path, lwsc: Run) -> None:
    reports = tmp_path / "cwd" / "reports"
    stubbed.append("refuse")
    _refused_line = lwsc("run", "--focus", "LWS-NAME-001")
    assert _refused_line[0] == 2 and stubbed == ["up"]
    assert not reports.exists()
    stubbed.clear()
    code, _out, _err = lwsc("run", "--focus", "LWS-NAME-001")
    assert stubbed == ["up", "pytest", "down"] and code == 3  # the stubbed suites wrote no summary
    (run_dir,) = [p for p in reports.iterdir() if p.name != "latest"]
    assert (reports / "latest").readlink() == Path(run_dir.name)
