"""Starting the window: its configuration comes only through app/config.py, "automatic" GPU layers are
planned by the core (HearthConfig.n_gpu_layers None), and the package's __init__ runs nothing."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from app.config import Requested  # noqa: E402
from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import AUTO, Prefs, hearth_config_for  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GUI = ROOT / "app" / "gui"
WAIT = 20_000


@pytest.fixture(autouse=True)
def _no_policy(monkeypatch):
    monkeypatch.delenv("HEARTH_POLICY", raising=False)
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


@pytest.fixture
def prefs(tmp_path) -> Prefs:
    return Prefs(tmp_path / "gui.ini")


def test_the_package_init_is_a_docstring_only():
    tree = ast.parse((GUI / "__init__.py").read_text(encoding="utf-8"))
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)  # no import, no code
    code = "import sys, app.gui; assert not [m for m in sys.modules if m.startswith('PySide6')]"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_the_gui_never_reaches_into_the_cli_or_the_environment_for_settings():
    for path in GUI.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "app.cli", path
            if isinstance(node, ast.Import):
                assert all(a.name != "app.cli" for a in node.names), path
            if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                raise AssertionError(f"{path.name} sets or reads os.environ[...]: {ast.unparse(node)}")


def test_every_gui_source_file_is_short():
    for path in GUI.rglob("*.py"):
        n = len(path.read_text(encoding="utf-8").splitlines())
        assert n <= 650, f"{path.relative_to(ROOT)} has {n} lines"


def test_automatic_gpu_layers_are_left_to_the_core(prefs, tmp_path):
    assert prefs.gpu_layers == AUTO
    assert hearth_config_for(prefs).n_gpu_layers is None  # planned when the model loads, not 0
    prefs.gpu_layers = 12
    assert hearth_config_for(prefs).n_gpu_layers == 12
    prefs.gpu_layers = 0
    assert hearth_config_for(prefs).n_gpu_layers == 0


def test_saved_choices_under_the_flags_and_the_data_folder_rule(prefs, tmp_path, monkeypatch):
    saved, flag, env = tmp_path / "saved", tmp_path / "flag", tmp_path / "env"
    prefs.data_dir = str(saved)
    prefs.chat_model = "saved.gguf"
    prefs.n_ctx = 8192
    prefs.chunk_tokens = 128
    monkeypatch.delenv("HEARTH_DATA_DIR", raising=False)
    config = hearth_config_for(prefs)
    assert (config.data_dir, config.chat_model, config.n_ctx, config.ingest.chunk_tokens) == (
        saved, "saved.gguf", 8192, 128)
    monkeypatch.setenv("HEARTH_DATA_DIR", str(env))
    assert hearth_config_for(prefs).data_dir == env  # the variable wins over the saved folder at start
    flags = Requested(data_dir=flag, chat_model="flag.gguf", threads=3)
    config = hearth_config_for(prefs, flags)
    assert (config.data_dir, config.chat_model, config.n_threads) == (flag, "flag.gguf", 3)
    # Chosen just now in Settings, the saved choices win over the flags (the threads stay the flags').
    config = hearth_config_for(prefs, flags, chosen_now=True)
    assert (config.data_dir, config.chat_model, config.n_threads) == (saved, "saved.gguf", 3)


def test_model_ranking_saved_over_the_variable_and_under_the_flags(prefs, monkeypatch):
    from app.cli import build_parser
    from app.config import requested_from_args
    from inference.errors import UsageError

    monkeypatch.delenv("HEARTH_MODEL_RANKING", raising=False)
    assert prefs.model_ranking is None and hearth_config_for(prefs).model_ranking is False  # off by default
    monkeypatch.setenv("HEARTH_MODEL_RANKING", "1")
    assert hearth_config_for(prefs).model_ranking is True  # never chosen in Settings: the variable counts
    prefs.model_ranking = False
    assert hearth_config_for(prefs).model_ranking is False  # chosen in Settings: over the variable
    flags = requested_from_args(build_parser().parse_args(["--model-ranking", "gui"]))
    assert hearth_config_for(prefs, flags).model_ranking is True  # a flag: over Settings
    assert requested_from_args(build_parser().parse_args(["gui"])).model_ranking is None
    monkeypatch.setenv("HEARTH_MODEL_RANKING", "maybe")
    with pytest.raises(UsageError, match="HEARTH_MODEL_RANKING must be 1 or 0"):
        hearth_config_for(Prefs(prefs.path.with_name("other.ini")))


def test_the_administrators_policy_applies_to_the_windows_configuration(prefs, tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    policy = tmp_path / "policy.toml"
    policy.write_text(f'version = 1\n[data]\nfolder = "{locked}"\n[models]\nallowed = ["ok.gguf"]\n')
    monkeypatch.setenv("HEARTH_POLICY", str(policy))
    monkeypatch.delenv("HEARTH_DATA_DIR", raising=False)
    prefs.data_dir = str(tmp_path / "mine")  # saved before the policy came: the policy's folder is used
    prefs.chat_model = "ok.gguf"
    config = hearth_config_for(prefs)
    assert config.data_dir == locked and config.chat_model == "ok.gguf"
    prefs.chat_model = "other.gguf"
    from app.policy import PolicyError

    with pytest.raises(PolicyError):
        hearth_config_for(prefs, chosen_now=True)


def test_the_hardware_plan_never_rebuilds_the_service(qtbot, tmp_path, prefs):
    built: list[HearthConfig] = []

    def factory(cfg: HearthConfig) -> Hearth:
        built.append(cfg)
        return Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("ok"))

    from tests.tinygguf import write_tiny_llama

    (tmp_path / "data" / "models").mkdir(parents=True)
    write_tiny_llama(tmp_path / "data" / "models" / "tiny-chat.gguf")
    prefs.chat_model = "tiny-chat.gguf"
    config = hearth_config_for(prefs, Requested(data_dir=tmp_path / "data"))
    window = build_window(config, prefs=prefs, factory=factory, open_external=lambda p: None)
    qtbot.addWidget(window)
    window.show()
    window.start()
    window.show_side_tab(1)
    qtbot.waitUntil(lambda: window.hardware.snapshot is not None, timeout=WAIT)
    qtbot.waitUntil(lambda: not window.ops.busy and window.model_state == "ready", timeout=WAIT)
    assert window.hardware.snapshot.get("plan")  # there was a plan to act on ...
    assert len(built) == 1 and window.ops.config.n_gpu_layers is None  # ... and the service stayed as built
    window.close()


def test_applying_settings_rebuilds_the_service_through_app_config(qtbot, tmp_path, prefs, monkeypatch):
    monkeypatch.delenv("HEARTH_DATA_DIR", raising=False)
    flags = Requested(data_dir=tmp_path / "data", threads=2)
    window = build_window(hearth_config_for(prefs, flags), prefs=prefs, flags=flags, open_external=lambda p: None,
                          factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("ok")))
    qtbot.addWidget(window)
    window.show()
    window.start()
    qtbot.waitUntil(lambda: not window.ops.busy, timeout=WAIT)
    prefs.n_ctx = 2048
    prefs.gpu_layers = 7
    window.apply_prefs()
    config = window.ops.config
    assert (config.n_ctx, config.n_gpu_layers, config.n_threads, config.data_dir) == (2048, 7, 2, tmp_path / "data")
    prefs.gpu_layers = AUTO
    window.apply_prefs()
    assert window.ops.config.n_gpu_layers is None
    qtbot.waitUntil(lambda: not window.ops.busy, timeout=WAIT)
    window.close()


def test_the_controllers_strings_are_translated(qapp):
    from PySide6.QtCore import QCoreApplication

    from app.gui.launch import install_translations

    assert install_translations(qapp, "ru") == "ru"
    try:
        for context, text in (("WorkspaceController", "New workspace"), ("ModelController", "Model: {name}"),
                              ("SourceController", "Open link?"), ("DocumentController", "Add documents"),
                              ("ConversationController", "Stopped.")):
            assert QCoreApplication.translate(context, text) != text, (context, text)
    finally:
        for t in getattr(qapp, "_hearth_translators", ()):
            qapp.removeTranslator(t)
