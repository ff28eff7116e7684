"""One process per data folder (rag/datalock.py): real processes holding the folder, the clear refusal a
second one gets (CLI, service, window), and the lock's end when its holder dies, even by kill -9."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.cli import main
from inference.errors import DataDirInUse, UsageError
from rag.datalock import LOCK_NAME, claim, holder
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file locks")

# A process that opens the folder's index as the window would, says "held <pid>", then waits to be killed.
# With "fork" it first starts a child of its own (a forked copy that lives on), and says that one's pid too.
HOLDER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from rag.datalock import set_process_label
    from rag.service import Hearth, HearthConfig
    from tests.fakes import HashEmbedder

    set_process_label("hearth gui")
    h = Hearth(HearthConfig(data_dir=Path(sys.argv[1])), embedder=HashEmbedder())
    h.store  # opens ChromaDB, which takes the folder
    child = 0
    if "fork" in sys.argv[2:]:
        child = os.fork()
        if child == 0:
            quiet = os.open(os.devnull, os.O_RDWR)
            os.dup2(quiet, 1), os.dup2(quiet, 2)  # let the test's pipes close when the parent dies
            time.sleep(120)
            os._exit(0)
    print("held", os.getpid(), child, flush=True)
    time.sleep(120)
""")


class Holder:
    """Another Hearth process using a data folder, until killed."""

    def __init__(self, data: Path, *extra: str) -> None:
        self.p = subprocess.Popen([sys.executable, "-c", HOLDER, str(data), *extra], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        assert line and line[0] == "held", self.p.stderr.read()
        self.pid, self.child = int(line[1]), int(line[2])

    def kill(self) -> None:
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGKILL)
        self.p.communicate(timeout=30)
        if self.child:
            try:
                os.kill(self.child, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nEvery employee gets 25 days of paid annual leave.\n")
    return folder


def hearth(data: Path) -> Hearth:
    return Hearth(HearthConfig(data_dir=data), embedder=HashEmbedder(), chat_model=ScriptedModel("ok [1]"))


def test_a_second_process_is_refused_with_who_holds_the_folder(tmp_path, docs, capsys):
    data = tmp_path / "data"
    hearth(data).ingest([docs])  # indexed earlier; this Hearth is gone again
    gc.collect()
    other = Holder(data)
    try:
        with pytest.raises(DataDirInUse) as caught:
            hearth(data).search("annual leave")
        message = str(caught.value)
        assert message.startswith(f"Another Hearth is using {data.resolve()} (pid {other.pid}, `hearth gui`, since ")
        assert time.strftime("%H:") in message or time.strftime("%Y-") in message
        assert "hearth serve" in caught.value.hint and "--data-dir" in caught.value.hint
        assert isinstance(caught.value, UsageError)  # the contract's exit code 2
        assert holder(data).pid == other.pid

        # The command line fails fast with the sentence and the hint, exit code 2, for every index command.
        for argv in (["search", "leave"], ["ask", "How many days of leave?"], ["ingest", str(docs)],
                     ["forget", str(docs)]):
            assert main(["--data-dir", str(data), *argv]) == 2, argv
            err = capsys.readouterr().err
            assert f"hearth: error: Another Hearth is using {data.resolve()} (pid {other.pid}" in err, argv
            assert "hint: " in err and "Traceback" not in err
        # Reading the document list needs no index: it still works.
        assert main(["--data-dir", str(data), "sources", "--json"]) == 0
        assert "leave.md" in capsys.readouterr().out
    finally:
        other.kill()


def test_kill_9_of_the_holder_frees_the_folder(tmp_path, docs):
    data = tmp_path / "data"
    other = Holder(data)
    with pytest.raises(DataDirInUse):
        claim(data)
    other.kill()
    assert holder(data) is None  # the kernel let go of the dead process's lock
    h = hearth(data)
    assert h.ingest([docs]).added == 1
    assert [x.source for x in h.search("annual leave")] == [str((docs / "leave.md").resolve())]
    assert holder(data).pid == os.getpid()  # and now it is ours
    h.close()
    assert holder(data) is None


def test_a_forked_child_does_not_keep_the_folder_after_its_parent_dies(tmp_path):
    data = tmp_path / "data"
    other = Holder(data, "fork")
    try:
        assert other.child and holder(data).pid == other.pid
        os.kill(other.pid, signal.SIGKILL)
        other.p.communicate(timeout=30)
        os.kill(other.child, 0)  # the forked copy still runs…
        assert holder(data) is None  # …without the lock
        claim(data).release()
    finally:
        other.kill()


def test_hearth_objects_of_one_process_share_the_folder(tmp_path, docs):
    data = tmp_path / "data"
    first, second = hearth(data), hearth(data)
    assert first.ingest([docs]).added == 1
    assert second.search("annual leave") and second.ask("How many days of leave?").text == "ok [1]"
    assert holder(data).pid == os.getpid()
    lock = (data / LOCK_NAME).read_text()
    assert f'"pid": {os.getpid()}' in lock
    first.close()
    assert holder(data) is not None  # the second still uses it
    assert first.search("annual leave")  # a closed Hearth opens the index (and takes the folder) again
    first.close()
    second.close()
    assert holder(data) is None and (data / LOCK_NAME).read_text() == ""  # nobody is named any more
    # Another process may now have it.
    code = f"from pathlib import Path; from rag.datalock import claim; claim(Path({str(data)!r}))"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_a_forgotten_hearth_lets_go_when_collected(tmp_path, docs):
    data = tmp_path / "data"
    h = hearth(data)
    h.ingest([docs])
    h.warm_up(wait=True)  # the warm-up thread makes a reference cycle: only the cyclic collector frees it
    del h
    gc.collect()
    assert holder(data) is None


def test_a_claim_made_during_another_claims_collection_is_kept(tmp_path):
    """A release from a collector finalizer while the registry is busy is queued, never lost or deadlocked."""
    import rag.datalock as datalock

    data = tmp_path / "data"
    kept = claim(data)
    extra = claim(data)
    with datalock._mutex:  # as if the collector ran inside claim() on this thread
        extra.release()
        assert datalock._pending  # queued, not applied: the mutex is busy
    datalock._drain()
    assert not datalock._pending and holder(data).pid == os.getpid()
    kept.release()
    kept.release()  # twice is harmless
    assert holder(data) is None


def test_claiming_makes_the_folder_private_and_says_so_once(tmp_path, caplog):
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    with caplog.at_level("WARNING", logger="rag.datalock"):
        first = claim(data)
    try:
        assert len(first.notices) == 1 and "made it private" in first.notices[0]
        assert first.notices[0] in caplog.text
        assert (data.stat().st_mode & 0o777, (data / LOCK_NAME).stat().st_mode & 0o777) == (0o700, 0o600)
        second = claim(data)
        assert second.notices == []  # held already: nothing checked or changed again
        second.release()
    finally:
        first.release()
    data.chmod(0o770)  # now others may write: refused before any file is written or locked
    (data / LOCK_NAME).unlink()
    with pytest.raises(UsageError, match="can be written by other users"):
        claim(data)
    assert list(data.iterdir()) == [] and holder(data) is None


def test_a_shared_chroma_server_needs_no_folder_lock(tmp_path):
    data = tmp_path / "data"
    h = Hearth(HearthConfig(data_dir=data, chroma_url="http://127.0.0.1:9"), embedder=HashEmbedder())
    other = Holder(data)
    try:
        h.claim_data_dir()  # no error: the server guards its own files; the local files are SQLite
        assert h._claim is None
    finally:
        other.kill()


def test_the_window_shows_the_refusal_instead_of_failing(tmp_path, qtbot_or_skip):
    qtbot = qtbot_or_skip
    from app.gui.launch import build_window
    from app.gui.prefs import Prefs

    data = tmp_path / "data"
    other = Holder(data)
    try:
        window = build_window(HearthConfig(data_dir=data), prefs=Prefs(tmp_path / "gui.ini"), open_external=print,
                              factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("x")))
        qtbot.addWidget(window)
        window.show()
        window.start()
        qtbot.waitUntil(lambda: window.chat.banner.isVisible(), timeout=20_000)
        shown = window.chat.banner.message
        assert f"Another Hearth is using {data.resolve()} (pid {other.pid}, `hearth gui`" in shown
        assert "hearth serve" in shown  # the hint
        qtbot.waitUntil(lambda: not window.ops.busy, timeout=20_000)
        window.close()
    finally:
        other.kill()


@pytest.fixture
def qtbot_or_skip(request):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    pytest.importorskip("PySide6.QtWidgets")
    pytest.importorskip("pytestqt")
    from app.gui import gcguard

    qapp = request.getfixturevalue("qapp")
    gcguard.install(qapp)  # as the app does: cyclic collection only on the GUI thread
    try:
        yield request.getfixturevalue("qtbot")
    finally:
        gcguard.uninstall(qapp)
