"""The data folder is this user's alone: what Hearth writes there no other account can read or change.

The real command line indexes a folder under the ordinary umask (022) and nothing under the data folder
may be readable or writable by group or others; a pre-created folder others can read is made private with
a notice; one others can write to, or one another user owns, is refused with the reason; the lock file
is never followed when it is a link.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from inference.errors import UsageError
from rag.conversations import ConversationStore
from rag.datalock import LOCK_NAME, claim, secure_data_dir

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX owners and modes")
ROOT = Path(__file__).resolve().parents[1]


def hearth(data: Path, *args: str) -> subprocess.CompletedProcess:
    """The real CLI in its own process, started under the usual umask 022 whatever this process has."""
    env = dict(os.environ, HEARTH_DATA_DIR=str(data.parent / "unused"))
    return subprocess.run(
        [sys.executable, "-m", "app", "--threads", "2", "--data-dir", str(data), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, preexec_fn=lambda: os.umask(0o022),
    )


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "policy.md").write_text("# Leave\n\nStaff get 28 days of annual leave.\n\n# Hours\n\nCore hours: 10 to 15.")
    (folder / "vpn.txt").write_text("Connect the VPN before opening the intranet.")
    return folder


def too_open(folder: Path) -> list[str]:
    """Everything under `folder` (itself included) that group or others may read, write or enter."""
    out = []
    for root, dirs, files in os.walk(folder):
        for p in [Path(root), *(Path(root, n) for n in dirs + files)]:
            mode = stat.S_IMODE(p.lstat().st_mode)
            if mode & 0o077 and not p.is_symlink():
                out.append(f"{p.relative_to(folder.parent)} {mode:o}")
    return sorted(set(out))


def test_nothing_the_cli_writes_is_open_to_others(tmp_path, docs):
    data = tmp_path / "data"
    r = hearth(data, "ingest", str(docs), "--json")
    assert r.returncode == 0, r.stderr
    r = hearth(data, "search", "annual leave", "--json")  # opens the index again, as a second process
    assert r.returncode == 0, r.stderr
    assert len(list(data.rglob("*"))) > 3  # index, keyword index, manifest: there is something to check
    assert too_open(data) == []
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def test_a_pre_created_readable_folder_is_made_private_with_a_notice(tmp_path, docs):
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    r = hearth(data, "ingest", str(docs), "--json")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert "made it private" in r.stderr
    # Directly: the notice says what was changed, and a second look finds nothing more to do.
    again = tmp_path / "again"
    again.mkdir()
    again.chmod(0o750)
    notices = secure_data_dir(again)
    assert len(notices) == 1 and str(again) in notices[0] and "750" in notices[0]
    assert stat.S_IMODE(again.stat().st_mode) == 0o700
    assert secure_data_dir(again) == []
    assert secure_data_dir(tmp_path / "new" / "folder") == []  # created private: nothing to tell
    assert stat.S_IMODE((tmp_path / "new" / "folder").stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o1777])
def test_a_folder_others_can_write_to_is_refused(tmp_path, docs, mode):
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(mode)
    with pytest.raises(UsageError, match="can be written by other users") as info:
        secure_data_dir(data)
    assert "chmod 700" in (info.value.hint or "")
    r = hearth(data, "ingest", str(docs))
    assert r.returncode == 2 and "can be written by other users" in r.stderr
    assert stat.S_IMODE(data.stat().st_mode) == mode and list(data.iterdir()) == []  # left as it was


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder to another user")
def test_a_folder_owned_by_another_user_is_refused(tmp_path, docs):
    import pwd

    nobody = pwd.getpwnam("nobody")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    os.chown(data, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(UsageError, match="belongs to another user"):
        secure_data_dir(data)
    with pytest.raises(UsageError, match="belongs to another user"):
        claim(data)
    r = hearth(data, "ingest", str(docs))
    assert r.returncode == 2 and "belongs to another user" in r.stderr
    assert list(data.iterdir()) == []


def test_a_link_as_the_data_folder_is_followed_only_as_named(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    real.chmod(0o755)
    named = tmp_path / "named"
    named.symlink_to(real, target_is_directory=True)
    assert len(secure_data_dir(named)) == 1  # the user named the link: the folder it leads to is used
    assert stat.S_IMODE(real.stat().st_mode) == 0o700


def test_a_lock_file_planted_as_a_link_is_not_followed(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    victim.chmod(0o644)
    (data / LOCK_NAME).symlink_to(victim)
    with pytest.raises(UsageError, match="is a link"):
        claim(data)
    assert victim.read_text() == "keep me" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_the_lock_and_the_conversations_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        data = tmp_path / "data"
        held = claim(data)
        try:
            store = ConversationStore(data / "conversations.sqlite")
            store.create("default", "Leave")
            store.close()
            assert too_open(data) == []
            assert {p.name for p in data.iterdir()} >= {LOCK_NAME, "conversations.sqlite"}
        finally:
            held.release()
    finally:
        os.umask(old)
