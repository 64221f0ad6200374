"""`labctl.py serve` against hostile clients: floods of idle and trickling connections, a client that
asks for files and never reads them, requests that say their length twice or send a Transfer-Encoding,
and the signals that stop it. Through every flood a normal request from the flood's own address is
answered in under a second and the teacher's view keeps answering.

Every connection goes to a server on 127.0.0.1, from 127.0.0.1 or 127.0.0.2 (Linux routes all of
127/8 to the loopback interface); each flood is bounded in count and time and closes its sockets.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from serving import make_site, start_server, stop_server

from classroom import teacher_view
from classroom.teacher_view import Classroom

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "teacher-token-for-the-hostile-tests-0123"
ROOM = "0123456789abcdef0123456789abcdef"
ANSWER = json.dumps(
    {
        "room": ROOM,
        "student": "a" * 32,
        "nickname": "Ada",
        "kind": "nibble-decode",
        "seed": 7,
        "round": 0,
        "answer": "1",
        "first": "1",
        "tries": 1,
        "shown": False,
    }
).encode()
# A file bigger than what the kernel buffers for a client that reads nothing.
BIG_FILE_BYTES = 4_000_000
# What a normal request may take while a flood is on.
PROMPT_S = 1.0


@pytest.fixture
def class_server(tmp_path):
    """A class server on 127.0.0.1 with serve's own limits: its Classroom, and the port."""
    made = Classroom(token=TOKEN, room=ROOM)
    server, thread = start_server(make_site(tmp_path), classroom=made)
    yield made, server.server_address[1]
    stop_server(server, thread)


def connect(port: int, source: str = "127.0.0.1", timeout: float = 5) -> socket.socket:
    client = socket.socket()
    client.settimeout(timeout)
    client.bind((source, 0))
    client.connect(("127.0.0.1", port))
    return client


def flooding(port: int) -> socket.socket:
    """A flood's connection: its connect is not waited for, so a server whose queue is full delays
    the flood no more than its other clients."""
    client = socket.socket()
    client.setblocking(False)
    client.connect_ex(("127.0.0.1", port))
    return client


def request(port: int, head: str, body: bytes = b"", source: str = "127.0.0.1", timeout: float = 5):
    """(status, headers and body as text, seconds taken) of one request sent byte for byte, or
    (None, the error's name, seconds) when no reply came within `timeout`."""
    started = time.monotonic()
    try:
        with connect(port, source, timeout) as client:
            client.sendall(head.encode("latin-1") + body)
            reply = b""
            while chunk := client.recv(65536):
                reply += chunk
    except OSError as error:
        return None, type(error).__name__, time.monotonic() - started
    elapsed = time.monotonic() - started
    if not reply:
        return None, "closed without a reply", elapsed
    return int(reply.split(b" ", 2)[1]), reply.decode("latin-1"), elapsed


def page(port: int, source: str = "127.0.0.1", timeout: float = 5):
    return request(port, f"GET / HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n", source=source, timeout=timeout)


def teachers_view(port: int, source: str = "127.0.0.1", timeout: float = 5):
    head = (
        f"GET {teacher_view.RESULTS_PATH} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    )
    return request(port, head, source=source, timeout=timeout)


def post_head(port: int, extra: str = "", length: int | None = len(ANSWER)) -> str:
    said = "" if length is None else f"Content-Length: {length}\r\n"
    return (
        f"POST {teacher_view.ANSWERS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\n{said}{extra}\r\n"
    )


def assert_prompt(replies, what):
    slow = [(status, round(elapsed, 2)) for status, _, elapsed in replies if status != 200 or elapsed >= PROMPT_S]
    assert replies and not slow, f"{len(slow)} of {len(replies)} {what} were slow or unanswered: {slow[:8]}"


# Idle and trickling connections cost the server no thread: a normal request is answered at once.


def test_an_idle_connection_flood_leaves_the_site_and_the_teachers_view_prompt(class_server):
    _, port = class_server
    pages, views = [], []
    with ExitStack() as flood:
        # 400 at once, then 20 new ones a second for half a minute, each left silent: six times the
        # server's 5 s deadline for a request head (classroom.serve.HEAD_DEADLINE_S)
        opened = [(time.monotonic(), flood.enter_context(flooding(port))) for _ in range(400)]
        started = time.monotonic()
        for second in range(30):
            opened += [(time.monotonic(), flood.enter_context(flooding(port))) for _ in range(20)]
            pages.append(page(port))
            if second % 5 == 0:
                views.append(teachers_view(port))
            # the server has closed what is this old; the flood lets go of its ends too
            while opened and opened[0][0] < time.monotonic() - 20:
                opened.pop(0)[1].close()
            time.sleep(max(0.0, started + second + 1 - time.monotonic()))
    assert_prompt(pages, "pages")
    assert_prompt(views, "teacher's views")
    assert all('"students"' in text for _, text, _ in views)


def test_a_trickle_flood_leaves_the_site_and_the_teachers_view_prompt(class_server):
    _, port = class_server
    trickle = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: {'a' * 200}".encode()
    pages, views = [], []
    with ExitStack() as flood:
        # 300 connections, each sending its request head one byte a second; one the server closed
        # is opened again, so the flood keeps its size for 20 s
        trickling = [[flood.enter_context(flooding(port)), 0] for _ in range(300)]
        started = time.monotonic()
        for second in range(20):
            for each in trickling:
                try:
                    each[0].send(trickle[each[1] : each[1] + 1])
                    each[1] += 1
                except OSError:
                    each[0].close()
                    each[:] = [flood.enter_context(flooding(port)), 0]
            pages.append(page(port))
            if second % 4 == 0:
                views.append(teachers_view(port))
            time.sleep(max(0.0, started + second + 1 - time.monotonic()))
    assert_prompt(pages, "pages")
    assert_prompt(views, "teacher's views")


def test_clients_that_never_read_hold_no_more_than_their_share(tmp_path):
    site = make_site(tmp_path)
    (site / "photo.png").write_bytes(bytes(range(256)) * (BIG_FILE_BYTES // 256))
    made = Classroom(token=TOKEN, room=ROOM)
    # replies stall for 3 s before a write gives up, so the same address's turn comes in seconds
    server, thread = start_server(site, classroom=made, timeout_s=3)
    port = server.server_address[1]
    try:
        with ExitStack() as flood:
            # more requests than the server has threads, from one address, none of them read
            for _ in range(160):
                client = flood.enter_context(socket.socket())
                client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                client.settimeout(5)
                client.connect(("127.0.0.1", port))
                client.sendall(f"GET /photo.png HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            time.sleep(1)
            other_address = [page(port, source="127.0.0.2"), teachers_view(port, source="127.0.0.2")]
            same_address = [page(port, timeout=20), teachers_view(port, timeout=20)]
    finally:
        stop_server(server, thread)
    assert_prompt(other_address, "requests from another address")
    assert [status for status, _, _ in same_address] == [200, 200], same_address


# How long a request's body is: said once, in a Content-Length, never with a Transfer-Encoding.


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_two_content_lengths_are_a_400(class_server, method):
    made, port = class_server
    if method == "GET":
        head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n"
    else:
        head = post_head(port, f"Content-Length: {len(ANSWER) + 10}\r\n")
    status, text, _ = request(port, head, ANSWER)
    assert status == 400, text
    assert "more than one Content-Length" in text
    assert made.register.snapshot() == {"students": []}


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("value", ["", "chunked", "identity"])
def test_any_transfer_encoding_is_refused(class_server, method, value):
    made, port = class_server
    if method == "GET":
        head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: {value}\r\n\r\n"
    else:
        head = post_head(port, f"Transfer-Encoding: {value}\r\n")
    status, text, _ = request(port, head, ANSWER)
    assert status in (400, 411), text
    assert "Transfer-Encoding" in text
    assert made.register.snapshot() == {"students": []}


def test_a_well_framed_post_is_still_taken(class_server):
    made, port = class_server
    assert request(port, post_head(port), ANSWER)[0] == 204
    assert [student["nickname"] for student in made.register.snapshot()["students"]] == ["Ada"]


# Ctrl+C, SIGTERM and SIGHUP stop serve the same way: quietly, its port closed, exit status 0.

SERVE = (
    "import pathlib, sys\nfrom classroom import serve\nsys.exit(serve.main(sys.argv[2:], pathlib.Path(sys.argv[1])))\n"
)


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_signal_ends_serve_quietly_with_status_0(tmp_path, stop):
    if not hasattr(signal, stop):
        pytest.skip(f"{stop} does not exist here")
    (tmp_path / "site").mkdir()
    site = make_site(tmp_path / "site")
    with socket.socket() as probe:  # a port free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(site), "--class", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        started = time.monotonic()
        while page(port)[0] != 200 and time.monotonic() - started < 60 and process.poll() is None:
            time.sleep(0.1)
        assert page(port)[0] == 200
        process.send_signal(getattr(signal, stop))
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err and err == "", err
    assert out.count("stopped") == 1 and out.rstrip().endswith("stopped"), out
    assert re.search(rf"serving .* at http://127\.0\.0\.1:{port}/", out)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
