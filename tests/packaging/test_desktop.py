"""Desktop integration: the .desktop entry, the AppStream metadata and the icon set agree and validate."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from tests.packaging.conftest import ROOT

ASSETS = ROOT / "assets"
APP_ID = "io.hearth.Hearth"


def desktop_keys() -> dict[str, str]:
    lines = (ASSETS / "hearth.desktop").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line and not line.startswith("#"))


def test_desktop_entry_starts_the_gui_with_the_app_icon(bundle_mod):
    keys = desktop_keys()
    assert keys["Type"] == "Application" and keys["Exec"] == "hearth gui" and keys["Icon"] == APP_ID
    assert "Office" in keys["Categories"].split(";")
    assert bundle_mod.DESKTOP_FILE == "hearth.desktop" and bundle_mod.APP_ID == APP_ID


def test_appstream_metadata_names_the_desktop_entry_and_icon():
    root = ET.parse(ASSETS / f"{APP_ID}.metainfo.xml").getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == "hearth.desktop"
    assert root.findtext("icon") == APP_ID
    assert root.findtext("metadata_license") == "CC0-1.0" and root.findtext("project_license") == "Apache-2.0"
    assert root.find("provides/binary").text == "hearth"
    assert root.find("releases/release").get("version") is not None


def test_icon_set_has_every_size_and_the_scalable_original():
    hicolor = ASSETS / "icons" / "hicolor"
    for size in (16, 24, 32, 48, 64, 128, 256, 512):
        png = hicolor / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (size, size), png
    assert (hicolor / "scalable" / "apps" / f"{APP_ID}.svg").read_bytes() == (ASSETS / "icons" / "hearth.svg").read_bytes()


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_desktop_entry_validates():
    r = subprocess.run(["desktop-file-validate", str(ASSETS / "hearth.desktop")], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstream not installed")
def test_appstream_metadata_validates():
    r = subprocess.run(["appstreamcli", "validate", "--no-net", str(ASSETS / f"{APP_ID}.metainfo.xml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
