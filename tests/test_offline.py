"""Nothing Hearth runs opens a network connection: every connect() is traced (strace) and checked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed"),
]
ROOT = Path(__file__).resolve().parents[1]
_CONNECT = re.compile(r"connect\(\d+, \{sa_family=(AF_INET6?), (.*?)\}")


def outside_connects(trace: str) -> list[str]:
    """connect() calls to anything but loopback (AF_UNIX is local by definition)."""
    bad = []
    for line in trace.splitlines():
        m = _CONNECT.search(line)
        if m and not re.search(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|"::ffff:127\.', m.group(2)):
            bad.append(line.strip())
    return bad


def test_outside_connects_parser_catches_dns_and_allows_loopback():
    trace = (
        '1 connect(3, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0\n'
        '1 connect(4, {sa_family=AF_INET, sin_port=htons(8642), sin_addr=inet_addr("127.0.0.1")}, 16) = 0\n'
        '1 connect(5, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0\n'
    )
    assert len(outside_connects(trace)) == 1


def test_ingest_search_ask_open_no_network_connection(tmp_path):
    log = tmp_path / "trace.txt"
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}  # Hearth must set it itself
    script = (
        f"{sys.executable} -m app --data-dir {data} --threads 2 ingest {ROOT / 'assets' / 'demo'} && "
        f"{sys.executable} -m app --data-dir {data} --threads 2 search 'meal allowance' && "
        f"{sys.executable} -m app --data-dir {data} --threads 2 ask 'What is the mileage rate?'"
    )
    r = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=connect,execve", "-o", str(log), "bash", "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert r.returncode == 0, r.stderr
    trace = log.read_text()
    assert trace.count('"-m", "app"') == 3  # all three commands ran under the trace
    assert outside_connects(trace) == []
