"""A component that dies during start-up is reported in one line naming the cause and its fix."""

from __future__ import annotations

from pathlib import Path

from lws_conformance.providers.process import ProcRecord, exit_message

# The last lines etcd v3.6.14 wrote when its state dir was on a full 20 MiB tmpfs (seen here).
ETCD_FULL_DISK = (
    '{"level":"warn","caller":"wal/wal.go:147","msg":"failed to preallocate an initial WAL file",'
    '"segment-bytes":64000000,"error":"no space left on device"}\n'
    '{"level":"panic","caller":"etcdserver/bootstrap.go:663","msg":"failed to create WAL",'
    '"error":"no space left on device"}\npanic: failed to create WAL\n'
)


def _rec(tmp_path: Path, text: str) -> ProcRecord:
    log = tmp_path / "state" / "logs" / "etcd.log"
    log.parent.mkdir(parents=True)
    log.write_text(text)
    return ProcRecord("etcd", 1, "/bin/etcd", str(log))


def test_a_full_disk_is_named_with_its_fix(tmp_path: Path) -> None:
    msg = exit_message(_rec(tmp_path, ETCD_FULL_DISK))
    assert "no space left on the disk of" in msg and str(tmp_path / "state") in msg
    assert "LWSC_STATE_DIR" in msg and "\n" not in msg


def test_an_unknown_cause_shows_the_log_tail(tmp_path: Path) -> None:
    msg = exit_message(_rec(tmp_path, "a\nb\nflag provided but not defined: -x\n"))
    assert "exited during start-up" in msg and "flag provided but not defined" in msg
    assert "\n" not in msg


def test_an_exhausted_inotify_limit_is_named_with_its_fix(tmp_path: Path) -> None:
    # Kueue v0.17.0's last lines when 14 local clusters ran at once under the default limit of 128.
    log = (
        '{"level":"error","logger":"setup","caller":"kueue/main.go:216","msg":"Unable to initialize '
        'metrics certificate watcher","error":"too many open files"}\n'
    )
    msg = exit_message(_rec(tmp_path, log))
    assert "fs.inotify.max_user_instances" in msg and "sysctl -w" in msg and "\n" not in msg
