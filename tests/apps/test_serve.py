"""`labctl.py serve` is a quiet static server for loopback only, with --lan as an explicit opt-in.

It holds a classroom's burst of requests, closes idle and trickling connections, serves nothing
through a link that leaves site/, refuses duplicate and malformed Host headers, and says in one
line when its port is taken. Every test talks to 127.0.0.1 only.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from widgets.build import site as sitebuild

ROOT = Path(__file__).resolve().parents[2]
# Bigger than one socket buffer, so a reply cut short by a dropped connection shows as a short body.
BIG_ASSET = b"export const weights = [" + b"0x7f, " * 40_000 + b"];\n"


@pytest.fixture
def site(tmp_path):
    (tmp_path / "index.html").write_text("<h1>lab</h1>")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "a.js").write_text("1")
    (tmp_path / "assets" / "big.js").write_bytes(BIG_ASSET)
    (tmp_path / "explainers").mkdir()
    (tmp_path / "explainers" / "index.html").write_text("explainers")
    return tmp_path


@pytest.fixture
def outside(tmp_path_factory):
    """A folder beside the site, never inside it, holding what a link must not reach."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.txt").write_text("outside secret")
    (folder / "index.html").write_text("outside index")
    return folder


def _start(site, lan=False, **settings):
    server = sitebuild.site_server(site, ("127.0.0.1", 0), lan=lan, **settings)
    # a short poll keeps shutdown, and so each test's teardown, quick
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


def _stop(server, thread):
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture
def served(site):
    server, thread = _start(site)
    yield server.server_address[1]
    _stop(server, thread)


@pytest.fixture
def served_lan(site):
    server, thread = _start(site, lan=True)
    yield server.server_address[1]
    _stop(server, thread)


def _get(port, path, host=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _raw_status(port, head: bytes) -> int:
    """The status the server answers to a request head sent byte for byte, as http.client would not."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(head)
        reply = b""
        while b"\r\n" not in reply:
            chunk = client.recv(4096)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1])


def _closed_by_server(client: socket.socket) -> bool:
    """Whether the server has closed `client`: a read ends, or the connection was reset."""
    try:
        return client.recv(4096) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


def _link(link: Path, target: Path) -> None:
    try:
        link.symlink_to(target, target_is_directory=target.is_dir())
    except (OSError, NotImplementedError) as error:  # Windows without the symlink privilege
        pytest.skip(f"symlinks cannot be made here: {error}")


def test_pages_are_served_and_folders_are_not_listed(served):
    assert _get(served, "/") == (200, b"<h1>lab</h1>")
    assert _get(served, "/explainers/") == (200, b"explainers")
    assert _get(served, "/assets/")[0] == 404
    assert _get(served, "/missing.html")[0] == 404


@pytest.mark.parametrize("host", ["localhost:{port}", "[::1]:{port}", "127.0.0.1:{port}"])
def test_loopback_hosts_with_the_served_port_are_allowed(served, host):
    assert _get(served, "/", host.format(port=served))[0] == 200


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "127.0.0.1", "", "localhost.evil:{port}"])
def test_other_hosts_are_refused_against_dns_rebinding(served, host):
    assert _get(served, "/", host.format(port=served))[0] == 403


@pytest.mark.parametrize("path", ["/%00", "/..%2f..", "/../etc/passwd", "/%ff", "/a%5c..%5cb"])
def test_malformed_paths_are_a_400_not_a_traceback(served, path, capsys):
    assert _get(served, path)[0] == 400
    assert "Traceback" not in capsys.readouterr().err


def test_one_log_line_per_error_and_none_per_page(served, capsys):
    _get(served, "/")
    _get(served, "/index.html")
    assert capsys.readouterr().err == ""
    _get(served, "/missing.html")
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("host", ["192.168.1.20:8765", "[fe80::1]:8765", "workshop-laptop.local:8765", "workshop"])
def test_lan_mode_accepts_any_host(served_lan, host):
    assert _get(served_lan, "/", host)[0] == 200


def test_ctrl_c_stops_serve_without_a_traceback(site, monkeypatch, capsys):
    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(http.server.ThreadingHTTPServer, "serve_forever", interrupted)
    sitebuild.serve(site, port=0)  # returns instead of raising
    assert "stopped" in capsys.readouterr().out


# A classroom opening the site at once: every request is queued and answered in full.


def test_two_hundred_parallel_requests_are_all_answered_in_full(site):
    server, thread = _start(site)
    port = server.server_address[1]
    clients = 200
    start_together = threading.Barrier(clients)

    def fetch(_):
        start_together.wait(timeout=30)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        try:
            connection.request("GET", "/assets/big.js")
            response = connection.getresponse()
            return response.status, response.read()
        except OSError as error:  # an empty reply or a timeout is counted, not raised
            return type(error).__name__, b""
        finally:
            connection.close()

    started = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
            replies = list(pool.map(fetch, range(clients)))
    finally:
        _stop(server, thread)
    elapsed = time.monotonic() - started
    failed = [status for status, body in replies if (status, body) != (200, BIG_ASSET)]
    assert failed == [], f"{len(failed)} of {clients} requests were not answered in full: {failed[:5]}"
    assert elapsed < 25
    assert server.request_queue_size >= 128


def test_extra_clients_wait_in_the_queue_while_every_handler_is_busy(site):
    server, thread = _start(site, timeout_s=2, max_handlers=2)
    port = server.server_address[1]
    # two silent clients take both handlers
    busy = [socket.create_connection(("127.0.0.1", port), timeout=8) for _ in range(2)]
    try:
        started = time.monotonic()
        status, body = _get(port, "/")
        waited = time.monotonic() - started
        silent_clients_closed = [_closed_by_server(client) for client in busy]
    finally:
        for client in busy:
            client.close()
        _stop(server, thread)
    assert silent_clients_closed == [True, True]
    assert (status, body) == (200, b"<h1>lab</h1>")
    # answered only once a silent client's handler had timed out and freed its place
    assert 1.0 <= waited < 8


# Idle and slow clients cannot hold a connection open.


def test_the_default_timeout_closes_idle_connections_within_a_minute(site):
    assert 5 <= sitebuild.REQUEST_TIMEOUT_S <= 60
    assert sitebuild.site_handler(site).timeout == sitebuild.REQUEST_TIMEOUT_S


def test_an_idle_connection_is_closed_after_the_timeout(site):
    server, thread = _start(site, timeout_s=1)
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=8) as client:
            started = time.monotonic()
            closed = _closed_by_server(client)
            waited = time.monotonic() - started
    finally:
        _stop(server, thread)
    assert closed, "the server kept an idle connection open for 8 s"
    assert waited < 6


def test_a_client_trickling_its_request_is_closed_after_the_timeout(site):
    server, thread = _start(site, timeout_s=1)
    trickle = b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 100
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=0.2) as client:
            started = time.monotonic()
            closed = False
            # one byte every 0.2 s keeps each read under the 1 s timeout; only a deadline for the
            # whole request head ends it
            for byte in trickle:
                if time.monotonic() - started > 8:
                    break
                try:
                    client.sendall(bytes([byte]))
                except ConnectionError:
                    closed = True
                    break
                if _closed_by_server(client):
                    closed = True
                    break
            waited = time.monotonic() - started
    finally:
        _stop(server, thread)
    assert closed, f"the server was still reading a trickled request after {waited:.1f} s"
    assert waited < 6


# Nothing is served through a link that leaves site/.


@pytest.mark.parametrize(
    ("link", "target", "path"),
    [
        ("leak.txt", "secret.txt", "/leak.txt"),
        ("outdir", ".", "/outdir/secret.txt"),
        ("outdir", ".", "/outdir/"),
        ("outdir", ".", "/outdir/index.html"),
        ("outdir", ".", "/outdir"),
        ("explainers/leak.html", "index.html", "/explainers/leak.html"),
    ],
)
def test_a_link_that_leaves_the_site_is_a_404(site, outside, served, link, target, path):
    _link(site / link, outside / target)
    status, body = _get(served, path)
    assert status == 404
    assert b"outside" not in body
    # the reply a missing file gets, so it does not tell whether the link's target exists
    assert (status, body) == _get(served, "/missing.html")


def test_a_folder_whose_index_links_out_of_the_site_is_a_404(site, outside, served):
    (site / "course").mkdir()
    _link(site / "course" / "index.html", outside / "index.html")
    assert _get(served, "/course/")[0] == 404


def test_a_link_that_stays_inside_the_site_is_served(site, served):
    _link(site / "start.html", site / "index.html")
    _link(site / "scripts", site / "assets")
    assert _get(served, "/start.html") == (200, b"<h1>lab</h1>")
    assert _get(served, "/scripts/a.js") == (200, b"1")


# Host headers: one, well formed, and (without --lan) a loopback name with the served port.


@pytest.mark.parametrize(
    "hosts",
    [
        ["127.0.0.1:{port}", "evil.example"],
        ["127.0.0.1:{port}", "127.0.0.1:{port}"],
        ["localhost:{port}", ""],
    ],
)
@pytest.mark.parametrize("lan", [False, True])
def test_a_request_with_two_host_headers_is_a_400(site, hosts, lan):
    server, thread = _start(site, lan=lan)
    port = server.server_address[1]
    head = "GET / HTTP/1.1\r\n" + "".join(f"Host: {host.format(port=port)}\r\n" for host in hosts) + "\r\n"
    try:
        assert _raw_status(port, head.encode()) == 400
    finally:
        _stop(server, thread)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}, evil.example",
        "127.0.0.1:{port} evil.example",
        "127.0.0.1:{port}:1",
        "127.0.0.1:abc",
        "127.0.0.1:",
        "127.0.0.1:99999",
        "user@127.0.0.1:{port}",
        "127.0.0.1:{port}/path",
        "[::1:{port}",
        "-localhost:{port}",
        "a" * 300,
    ],
)
@pytest.mark.parametrize("lan", [False, True])
def test_a_malformed_host_header_is_a_400_even_with_lan(site, host, lan):
    server, thread = _start(site, lan=lan)
    port = server.server_address[1]
    try:
        assert _get(port, "/", host.format(port=port))[0] == 400
    finally:
        _stop(server, thread)


def test_a_folded_host_header_is_a_400(served):
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{served}\r\n evil.example\r\n\r\n"
    assert _raw_status(served, head.encode()) == 400


def test_lan_mode_refuses_a_request_naming_no_host(served_lan):
    assert _get(served_lan, "/", "")[0] == 403
    assert _raw_status(served_lan, b"GET / HTTP/1.0\r\n\r\n") == 403


# A port in use is one line on stderr that says how to choose another, not a traceback.

SERVE_FROM = (
    "import pathlib, sys\n"
    "from widgets.build import site\n"
    "site.ROOT = pathlib.Path(sys.argv[1])  # the repository whose site/ is served\n"
    "sys.exit(site.main(sys.argv[2:]))\n"
)


@pytest.mark.parametrize("spelling", [["{port}"], ["--port", "{port}"]])
def test_a_port_in_use_is_one_line_that_says_how_to_pick_another(tmp_path, spelling):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<h1>lab</h1>")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-c", SERVE_FROM, str(tmp_path), "serve", *(word.format(port=port) for word in spelling)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"port {port} is in use on 127.0.0.1; pick another with: python3 labctl.py serve --port {port + 1}"
    ]
    assert result.stdout == ""
