"""packaging/build_vulkan.py: the Vulkan wheel's libraries unpacked beside the CPU engine, copies made links."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "packaging"))

import build_vulkan  # noqa: E402

from inference import engines  # noqa: E402


def wheel(path: Path, libs: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("llama_cpp/__init__.py", "")
        for name, data in libs.items():
            z.writestr(f"llama_cpp/lib/{name}", data)
    return path


def test_the_wheels_copies_become_links_and_the_folder_is_an_engine(tmp_path):
    libs = {"libllama.so": b"llama", "libllama.so.0": b"llama", "libllama.so.0.5.0": b"llama",
            "libggml-vulkan.so": b"vk", "libggml-vulkan.so.0.25.3": b"vk", "libggml.so": b"ggml"}
    dest = tmp_path / "env" / engines.ENGINES_DIR / "vulkan"
    dest.parent.mkdir(parents=True)
    names = build_vulkan.unpack_libraries(wheel(tmp_path / "w.whl", libs), dest)
    assert names == sorted(libs)
    assert (dest / "libllama.so").is_symlink() and (dest / "libllama.so").resolve().name == "libllama.so.0.5.0"
    assert not (dest / "libggml.so").is_symlink() and (dest / "libggml.so").read_bytes() == b"ggml"
    assert all((dest / n).read_bytes() == data for n, data in libs.items())
    assert engines.installed(tmp_path / "env")["vulkan"] == dest


def test_a_wheel_built_without_vulkan_is_refused_and_leaves_nothing(tmp_path):
    dest = tmp_path / "vulkan"
    with pytest.raises(SystemExit, match="no Vulkan backend"):
        build_vulkan.unpack_libraries(wheel(tmp_path / "w.whl", {"libllama.so": b"x", "libggml-cpu.so": b"y"}), dest)
    assert not dest.exists() and list(tmp_path.iterdir()) == [tmp_path / "w.whl"]


def test_headers_are_new_enough_only_with_the_layer_settings(tmp_path):
    core = tmp_path / "vulkan" / "vulkan_core.h"
    core.parent.mkdir()
    core.write_text("typedef struct VkApplicationInfo;")
    assert not build_vulkan.system_headers_new_enough(tmp_path)
    core.write_text("typedef struct VkLayerSettingEXT {")
    assert build_vulkan.system_headers_new_enough(tmp_path)


def test_an_engine_built_for_another_llama_cpp_python_is_left_out(tmp_path):
    # Bindings of one version over another version's libraries would call functions that changed: after an
    # upgrade the engine counts again only once `make vulkan` has built it for the new version.
    import importlib.metadata
    import json

    folder = tmp_path / engines.ENGINES_DIR / "vulkan"
    folder.mkdir(parents=True)
    for name in (engines.LIBRARY, "libggml-vulkan.so"):
        (folder / name).write_bytes(b"")
    record = folder / engines.ENGINE_RECORD
    record.write_text(json.dumps({"llama_cpp_python": importlib.metadata.version("llama_cpp_python")}))
    assert engines.installed(tmp_path)["vulkan"] == folder
    record.write_text(json.dumps({"llama_cpp_python": "0.0.1"}))
    assert "vulkan" not in engines.installed(tmp_path)
    record.write_text("not json")
    assert "vulkan" not in engines.installed(tmp_path)
