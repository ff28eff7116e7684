"""Nothing Hearth runs opens a network connection: every connect() and sendto() is traced (strace) and checked.

Each part runs as its own process under `strace -f` with the real default embedder and chat model: the
command line (ingest, search, ask), the HTTP API (`hearth serve`, asked over loopback), the MCP server
(`hearth mcp`, driven over stdio) and the desktop window (`hearth gui --screenshot`, offscreen, which
indexes the demo folder and answers a question before it exits). A connect(), sendto(), sendmsg() or
sendmmsg() to an internet address that is not loopback fails the test; AF_UNIX and netlink are local.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "assets" / "demo"
# accept/accept4 show that a server really served under the trace; execve that each command ran.
TRACED = "connect,sendto,sendmsg,sendmmsg,accept,accept4,execve"
_NET_CALL = re.compile(r"\b(connect|sendto|sendmsg|sendmmsg)\(\d+, ")
_INET = re.compile(r"sa_family=(AF_INET6?), (.*?)\}")
_LOOPBACK = re.compile(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|inet_pton\(AF_INET6, "::ffff:127\.')
_ACCEPTED = re.compile(r"\baccept4?\(\d+, .*\) = \d+")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_ADDRESS_TEXT = ("inet_addr(", "inet_pton(AF_INET6, ", "inet_pton(AF_INET, ")


def _without_data(line: str) -> str:
    """A trace line with the data it sends blanked out, so that text in a buffer never reads as an address."""
    return _QUOTED.sub(lambda m: m.group(0) if line[: m.start()].endswith(_ADDRESS_TEXT) else '""', line)


@dataclass(frozen=True)
class NetworkCalls:
    """What a trace shows of a process tree's traffic."""

    connects: int  # every connect() (AF_UNIX included)
    inet_connects: int  # connect() to an AF_INET/AF_INET6 address (loopback included)
    outside: list[str]  # the lines that address anything but loopback


def network_calls(trace: str) -> NetworkCalls:
    """Count connect() calls and find those (and any sendto/sendmsg/sendmmsg) to a non-loopback address."""
    connects = inet = 0
    outside = []
    for line in trace.splitlines():
        call = _NET_CALL.search(line)
        if call is None:
            continue
        address = _INET.search(_without_data(line[call.end():]))
        if call.group(1) == "connect":
            connects += 1
            inet += address is not None
        if address is not None and not _LOOPBACK.search(address.group(2)):
            outside.append(line.strip())
    return NetworkCalls(connects, inet, outside)


def outside_connects(trace: str) -> list[str]:
    """The lines of a trace that reach an address other than loopback (AF_UNIX is local by definition)."""
    return network_calls(trace).outside


def test_parser_catches_dns_and_udp_and_allows_loopback():
    trace = (
        '1 connect(3, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0\n'
        '1 connect(4, {sa_family=AF_INET, sin_port=htons(8642), sin_addr=inet_addr("127.0.0.1")}, 16) = 0\n'
        '1 connect(5, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0\n'
        '1 connect(6, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2a00:1450::1", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>\n'
        '1 connect(7, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0\n'
        '2 sendto(8, "\\x12\\x34", 2, 0, {sa_family=AF_INET, sin_port=htons(443), '
        'sin_addr=inet_addr("13.107.5.93")}, 16) = 2\n'
        '2 sendto(9, "{}", 2, MSG_NOSIGNAL, NULL, 0) = 2\n'
        '2 sendmsg(10, {msg_name={sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("8.8.8.8")}, '
        'msg_namelen=16, msg_iov=[{iov_base="x", iov_len=1}], msg_iovlen=1}, 0) = 1\n'
        '2 sendto(11, "sa_family=AF_INET, x}", 21, 0, NULL, 0) = 21\n'  # an address in the data is no address
    )
    calls = network_calls(trace)
    assert calls.connects == 5 and calls.inet_connects == 4
    assert [line.split("(")[0] for line in calls.outside] == ["1 connect", "1 connect", "2 sendto", "2 sendmsg"]


@needs_strace
def test_trace_catches_a_real_connect_and_sendto_of_a_child_process(tmp_path):
    """The whole chain (strace options, following children, the parser) on real calls to a test address."""
    log = tmp_path / "probe.trace"
    code = ("import socket\n"
            "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "try: u.sendto(b'x', ('192.0.2.1', 9))\nexcept OSError: pass\n"
            "t = socket.socket(); t.setblocking(False); t.connect_ex(('192.0.2.1', 9))\n"
            "l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(); c = socket.socket(); "
            "c.connect(l.getsockname())\n")
    r = subprocess.run(traced(log, ["bash", "-c", shlex.join([sys.executable, "-c", code])]), timeout=60)
    assert r.returncode == 0
    calls = network_calls(log.read_text())
    assert [line.split(None, 1)[1].split("(")[0] for line in calls.outside] == ["sendto", "connect"]
    assert calls.inet_connects == 2  # and the loopback connect() is seen but allowed


def traced(log: Path, args: list[str], *, exits: bool = False, calls: str = TRACED) -> list[str]:
    """The strace command line that traces `calls` of `args` (and every process they start) into `log`; with
    `exits`, each process's exit is written too ("PID +++ exited with 0 +++"). --seccomp-bpf stops the traced
    processes only at the calls traced, not at every call (the traces are the same, the commands run faster)."""
    quiet = "-q" if exits else "-qq"
    return ["strace", "-f", "--seccomp-bpf", quiet, "-e", f"trace={calls}", "-o", str(log), *args]


def hearth_args(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "app", "--data-dir", str(data), "--threads", "2", *args]


def env_without_offline_switches() -> dict[str, str]:
    """The environment less the switches Hearth must set itself (the test's conftest sets some)."""
    drop = {"ORT_DISABLE_TELEMETRY", "HF_HUB_OFFLINE", "ANONYMIZED_TELEMETRY"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def check_trace(log: Path, what: str) -> tuple[str, NetworkCalls]:
    trace = log.read_text()
    calls = network_calls(trace)
    print(f"\n{what}: {calls.connects} connect() calls, {calls.inet_connects} to IP addresses (all loopback "
          f"unless listed), {len(calls.outside)} to non-loopback addresses")
    assert calls.outside == [], f"{what} reached the network"
    return trace, calls


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory) -> tuple[Path, Path]:
    """ingest, search and ask through the command line under one trace; (data folder, trace file)."""
    base = tmp_path_factory.mktemp("offline")
    log, data = base / "cli.trace", base / "data"
    script = " && ".join(
        subprocess.list2cmdline(hearth_args(data, *args))
        for args in (("ingest", str(DEMO)), ("search", "meal allowance"), ("ask", "What is the mileage rate?"))
    )
    r = subprocess.run(traced(log, ["bash", "-c", script]), cwd=ROOT, env=env_without_offline_switches(),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "Sources:" in r.stdout  # the answer really came from the chat model and the index
    return data, log


@pytest.mark.slow
@needs_strace
def test_ingest_search_ask_no_network_connection(cli_run):
    trace, _ = check_trace(cli_run[1], "ingest + search + ask")
    assert trace.count('"-m", "app"') == 3  # all three commands ran under the trace


def _tracing(log: Path) -> bool:
    """Whether a strace writing to `log` still runs."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended meanwhile
            continue
        if args[:1] == [b"strace"] and str(log).encode() in args:
            return True
    return False


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _stop_traced(proc: subprocess.Popen) -> None:
    """Ctrl-C the traced program (strace's child), as a user would, and wait for strace to finish."""
    for child in _children(proc.pid):
        os.kill(child, signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.mark.slow
@needs_strace
def test_api_server_serves_over_loopback_only(cli_run, tmp_path):
    import httpx

    data = cli_run[0]
    log, err = tmp_path / "serve.trace", tmp_path / "serve.stderr"
    with err.open("w") as stderr:
        proc = subprocess.Popen(traced(log, hearth_args(data, "serve", "--port", "0")), cwd=ROOT,
                                env=env_without_offline_switches(), stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 120
        while not (m := re.search(r"Hearth API on (http://127\.0\.0\.1:\d+/v1)", err.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.2)
        key = re.search(r"^(hearth-\S+)$", err.read_text(), re.M)  # a key is required by default, shown once
        assert key, err.read_text()
        headers = {"Connection": "close", "Authorization": f"Bearer {key.group(1)}"}
        # A connection per request, so that each shows as an accept() in the trace.
        with httpx.Client(base_url=m.group(1), timeout=600, headers=headers) as client:
            models = client.get("/models").json()
            assert {"hearth-rag", "hearth-embed"} <= {x["id"] for x in models["data"]}
            emb = client.post("/embeddings", json={"model": "hearth-embed", "input": ["meal allowance"]}).json()
            assert len(emb["data"][0]["embedding"]) == 384
            rag = client.post("/chat/completions", json={
                "model": "hearth-rag", "messages": [{"role": "user", "content": "What is the mileage rate?"}]})
            assert rag.status_code == 200, rag.text
            assert rag.json()["sources"] and rag.json()["choices"][0]["message"]["content"]
            plain = client.post("/chat/completions", json={
                "model": models["data"][0]["id"], "max_tokens": 8, "stream": True,
                "messages": [{"role": "user", "content": "Say hello."}]})
            assert plain.status_code == 200 and plain.text.rstrip().endswith("data: [DONE]"), plain.text
    finally:
        _stop_traced(proc)
    trace, _ = check_trace(log, "hearth serve + 4 requests")
    assert len(_ACCEPTED.findall(trace)) >= 4  # the requests were served by the traced process


@pytest.mark.slow
@needs_strace
def test_mcp_server_over_stdio_no_network_connection(cli_run, tmp_path):
    anyio = pytest.importorskip("anyio")
    from mcp import Client, StdioServerParameters

    log = tmp_path / "mcp.trace"
    params = StdioServerParameters(command="strace", args=traced(log, hearth_args(cli_run[0], "mcp"), exits=True)[1:],
                                   env=env_without_offline_switches(), cwd=str(ROOT))

    async def session() -> dict:
        async with Client(params, read_timeout_seconds=600) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            search = await client.call_tool("search_documents", {"query": "meal allowance abroad", "k": 2})
            ask = await client.call_tool("ask", {"question": "What is the mileage rate?"})
        return {"tools": tools, "search": search, "ask": ask}

    out = anyio.run(session)
    assert out["tools"] == {"search_documents", "ask", "list_sources", "summarize_document", "compare_documents"}
    for name in ("search", "ask"):
        assert not out[name].is_error, out[name]
    answer = json.loads(out["ask"].content[0].text)
    assert answer["answer"] and answer["sources"]
    # The client closed stdin; strace writes the rest when the server exits: its first process (the one that ran
    # `hearth mcp`) writes its exit last ("4716  +++ exited with 0 +++": strace pads the process id). A server
    # slower to exit than the client waits (2 s) is killed with strace, which then writes no more.
    ended = re.compile(rf"^{log.read_text().split(None, 1)[0]}\s+\+\+\+ (?:exited|killed)", re.M)
    deadline = time.monotonic() + 30
    while not ended.search(log.read_text()) and _tracing(log):
        assert time.monotonic() < deadline, "the traced MCP server did not exit once its client closed"
        time.sleep(0.2)
    trace, _ = check_trace(log, "hearth mcp (list, search, ask)")
    assert '"mcp"]' in trace


@pytest.mark.slow
@needs_strace
def test_desktop_window_indexes_and_answers_without_network(cli_run, tmp_path):
    data = tmp_path / "gui-data"
    # The converted embedder and the joined chat model are the machine's (HEARTH_CACHE_DIR, tests/conftest.py):
    # the command line's run prepared them, and the window finds them there.
    log, shot = tmp_path / "gui.trace", tmp_path / "gui.png"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(env_without_offline_switches(), QT_QPA_PLATFORM="offscreen", TMPDIR=str(scratch))
    # openat too: the window must not even load Qt's network module (QNetworkAccessManager lives there).
    args = traced(log, hearth_args(data, "gui", "--screenshot", str(shot), "--add", str(DEMO), "--ask",
                                   "What is the mileage rate?"), calls=f"{TRACED},openat")
    r = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert shot.stat().st_size > 0
    assert not list(scratch.glob("hearth-*")), "the screenshot run left its temporary folders behind"
    trace, _ = check_trace(log, "hearth gui (index the demo folder, ask, screenshot)")
    # The window's work really happened under the trace: the documents were read and the models loaded.
    opened = re.findall(r'openat\(AT_FDCWD, "([^"]+)", [^)]*\) = \d+', trace)
    assert any(p.endswith("travel-policy.pdf") for p in opened)
    assert any(p.endswith(".gguf") for p in opened) and any(p.endswith(".onnx") for p in opened)
    assert not [p for p in opened if re.search(r"PySide6/QtNetwork\.", p)]
