"""`labctl.py serve` is a quiet static server for loopback only, with --lan as an explicit opt-in.

It holds a classroom's burst of requests, closes idle and trickling connections, serves nothing
through a link that leaves site/, refuses duplicate and malformed Host headers, and says in one
line when its port is taken. With --lan it prints this machine's addresses and a QR code, answers
/room, and accepts exactly those addresses as hosts. Text files go out gzipped, with cache headers.
Every test talks to 127.0.0.1 only: the room's addresses are injected documentation addresses
(RFC 5737, RFC 3849), sent only as Host header values, never connected to.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import ipaddress
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import segno
import zxingcpp
from serving import BIG_ASSET, ROOM_ADDRESSES, ROOM_HOSTNAME, fetch, get_page, make_site, start_server, stop_server

from classroom import room, serve
from lab.text import shown

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def site(tmp_path):
    return make_site(tmp_path)


@pytest.fixture
def outside(tmp_path_factory):
    """A folder beside the site, never inside it, holding what a link must not reach."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.txt").write_text("outside secret")
    (folder / "index.html").write_text("outside index")
    return folder


@pytest.fixture
def served(site):
    server, thread = start_server(site)
    yield server.server_address[1]
    stop_server(server, thread)


@pytest.fixture
def served_lan(site):
    server, thread = start_server(site, lan=True)
    yield server.server_address[1]
    stop_server(server, thread)


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
    assert get_page(served, "/") == (200, b"<h1>lab</h1>")
    assert get_page(served, "/explainers/") == (200, b"explainers")
    assert get_page(served, "/assets/")[0] == 404
    assert get_page(served, "/missing.html")[0] == 404


@pytest.mark.parametrize("host", ["localhost:{port}", "[::1]:{port}", "127.0.0.1:{port}"])
def test_loopback_hosts_with_the_served_port_are_allowed(served, host):
    assert get_page(served, "/", host.format(port=served))[0] == 200


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "127.0.0.1", "", "localhost.evil:{port}"])
def test_other_hosts_are_refused_against_dns_rebinding(served, host):
    assert get_page(served, "/", host.format(port=served))[0] == 403


@pytest.mark.parametrize("path", ["/%00", "/..%2f..", "/../etc/passwd", "/%ff", "/a%5c..%5cb"])
def test_malformed_paths_are_a_400_not_a_traceback(served, path, capsys):
    assert get_page(served, path)[0] == 400
    assert "Traceback" not in capsys.readouterr().err


def test_one_log_line_per_error_and_none_per_page(served, capsys):
    get_page(served, "/")
    get_page(served, "/index.html")
    assert capsys.readouterr().err == ""
    get_page(served, "/missing.html")
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_ctrl_c_stops_serve_without_a_traceback(site, monkeypatch, capsys):
    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve.SiteServer, "serve_forever", interrupted)
    serve.serve(site, port=0)  # returns instead of raising
    assert "stopped" in capsys.readouterr().out


# A classroom opening the site at once: every request is queued and answered in full.


def test_two_hundred_parallel_requests_are_all_answered_in_full(site):
    server, thread = start_server(site)
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
        stop_server(server, thread)
    elapsed = time.monotonic() - started
    failed = [status for status, body in replies if (status, body) != (200, BIG_ASSET)]
    assert failed == [], f"{len(failed)} of {clients} requests were not answered in full: {failed[:5]}"
    assert elapsed < 25
    assert server.request_queue_size >= 128


def _stalled_reader(port, path="/photo.png") -> socket.socket:
    """A client that asks for a file and reads none of it: a small receive window, so the server's
    writes stall once a few hundred KB are on their way."""
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.settimeout(10)
    client.connect(("127.0.0.1", port))
    client.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    return client


def _read_to_the_end(client: socket.socket) -> int:
    """The bytes a client reads until the server closes the connection (10 s at most)."""
    read, started = 0, time.monotonic()
    while time.monotonic() - started < 10:
        try:
            chunk = client.recv(65536)
        except ConnectionError:
            break
        if not chunk:
            break
        read += len(chunk)
    return read


def test_extra_clients_wait_in_the_queue_while_every_handler_is_busy(site):
    # 16 MB: Linux lets a sending socket buffer up to 4 MB (net.ipv4.tcp_wmem), so a smaller reply
    # could leave whole in the server's buffers and free its handler without stalling
    photo = bytes(range(256)) * 64_000
    (site / "photo.png").write_bytes(photo)
    server, thread = start_server(site, timeout_s=2, max_handlers=2, max_handlers_per_client=2)
    port = server.server_address[1]
    # two clients that never read take both handlers, each stalled in a write
    busy = [_stalled_reader(port) for _ in range(2)]
    try:
        time.sleep(0.5)
        started = time.monotonic()
        status, body = get_page(port, "/")
        waited = time.monotonic() - started
        # the page came once one stalled write timed out; both stalls began before the page was asked
        # for, so one more write timeout later the other has timed out too, and reading it now cannot
        # let its write go on
        time.sleep(2 + 0.5)
        stalled_clients_read = [_read_to_the_end(client) for client in busy]
    finally:
        for client in busy:
            client.close()
        stop_server(server, thread)
    # each stalled reply was cut off: the server closed the connection before the file's end
    assert all(0 < read < len(photo) for read in stalled_clients_read), stalled_clients_read
    assert (status, body) == (200, b"<h1>lab</h1>")
    # answered only once a stalled write had timed out and freed its handler
    assert 1.0 <= waited < 8


# Idle and slow clients cannot hold a connection open.


def test_the_default_timeout_closes_idle_connections_within_a_minute(site):
    assert 5 <= serve.REQUEST_TIMEOUT_S <= 60
    with serve.site_server(site, ("127.0.0.1", 0)) as server:  # each handler takes the server's timeout
        assert server.reply_timeout_s == serve.REQUEST_TIMEOUT_S
    assert 1 <= serve.HEAD_DEADLINE_S <= serve.REQUEST_TIMEOUT_S


def test_an_idle_connection_is_closed_after_the_timeout(site):
    server, thread = start_server(site, timeout_s=1)
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=8) as client:
            started = time.monotonic()
            closed = _closed_by_server(client)
            waited = time.monotonic() - started
    finally:
        stop_server(server, thread)
    assert closed, "the server kept an idle connection open for 8 s"
    assert waited < 6


def test_a_client_trickling_its_request_is_closed_after_the_timeout(site):
    server, thread = start_server(site, timeout_s=1)
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
        stop_server(server, thread)
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
    status, body = get_page(served, path)
    assert status == 404
    assert b"outside" not in body
    # the reply a missing file gets, so it does not tell whether the link's target exists
    assert (status, body) == get_page(served, "/missing.html")


def test_a_folder_whose_index_links_out_of_the_site_is_a_404(site, outside, served):
    (site / "course").mkdir()
    _link(site / "course" / "index.html", outside / "index.html")
    assert get_page(served, "/course/")[0] == 404


def test_a_link_that_stays_inside_the_site_is_served(site, served):
    _link(site / "start.html", site / "index.html")
    _link(site / "scripts", site / "assets")
    assert get_page(served, "/start.html") == (200, b"<h1>lab</h1>")
    assert get_page(served, "/scripts/a.js") == (200, b"1")


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
    server, thread = start_server(site, lan=lan)
    port = server.server_address[1]
    head = "GET / HTTP/1.1\r\n" + "".join(f"Host: {host.format(port=port)}\r\n" for host in hosts) + "\r\n"
    try:
        assert _raw_status(port, head.encode()) == 400
    finally:
        stop_server(server, thread)


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
    server, thread = start_server(site, lan=lan)
    port = server.server_address[1]
    try:
        assert get_page(port, "/", host.format(port=port))[0] == 400
    finally:
        stop_server(server, thread)


def test_a_folded_host_header_is_a_400(served):
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{served}\r\n evil.example\r\n\r\n"
    assert _raw_status(served, head.encode()) == 400


def test_lan_mode_refuses_a_request_naming_no_host(served_lan):
    assert get_page(served_lan, "/", "")[0] == 403
    assert _raw_status(served_lan, b"GET / HTTP/1.0\r\n\r\n") == 403


# A port in use is one line on stderr that says how to choose another, not a traceback.

SERVE_FROM = (
    "import pathlib, sys\n"
    "from publish import site\n"
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


# --lan: this machine's addresses, a QR code, the room page, and exactly those hosts.


@pytest.mark.parametrize(
    "host",
    [
        "192.0.2.10:{port}",
        "[2001:db8::10]:{port}",
        "workshop-laptop:{port}",
        "WORKSHOP-LAPTOP:{port}",
        "127.0.0.1:{port}",
        "localhost:{port}",
        "[::1]:{port}",
    ],
)
def test_lan_mode_accepts_each_printed_address_with_the_port(served_lan, host):
    assert get_page(served_lan, "/", host.format(port=served_lan)) == (200, b"<h1>lab</h1>")


@pytest.mark.parametrize(
    "host",
    [
        "192.168.1.20:8765",
        "[fe80::1]:{port}",
        "workshop-laptop.local:{port}",
        "workshop",
        "192.0.2.11:{port}",
        "192.0.2.10:1",
        "192.0.2.10",
        "[2001:db8::11]:{port}",
        "workshop-laptop:1",
        "evil.example:{port}",
    ],
)
def test_lan_mode_refuses_every_other_host(served_lan, host):
    assert get_page(served_lan, "/", host.format(port=served_lan))[0] == 403


def _qr_rows(block: list[str]) -> list[list[int]]:
    """The modules a printed block of half blocks draws, two rows a line (1 for dark)."""
    tops = {" ": 0, "\u2580": 1, "\u2584": 0, "\u2588": 1}
    bottoms = {" ": 0, "\u2580": 0, "\u2584": 1, "\u2588": 1}
    rows = []
    for line in block:
        rows += [[tops[char] for char in line], [bottoms[char] for char in line]]
    return rows


def qr_texts(rows: list[list[int]]) -> list[str]:
    """What ZXing reads in `rows` of modules (1 for dark) drawn 8 pixels a module, black on white."""
    modules = np.array(rows, dtype=np.uint8)
    image = np.kron(255 - 255 * modules, np.ones((8, 8), dtype=np.uint8)).astype(np.uint8)
    return [found.text for found in zxingcpp.read_barcodes(image)]


def _serve_lan_output(site, monkeypatch, capsys, addresses):
    """What `serve --lan` prints, served on 127.0.0.1 instead of every interface, and where it asked
    to listen."""
    listened = []
    on_every_interface = serve.site_server

    def on_loopback(site, address, **settings):
        listened.append(address)
        return on_every_interface(site, ("127.0.0.1", 0), **settings)

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve, "site_server", on_loopback)
    monkeypatch.setattr(serve.SiteServer, "serve_forever", interrupted)
    serve.serve(site, port=0, lan=True, addresses=addresses, hostname=ROOM_HOSTNAME)
    out = capsys.readouterr().out
    port = int(re.search(r"serving .* at http://127\.0\.0\.1:(\d+)/", out)[1])
    return out.splitlines(), port, listened


def test_lan_prints_every_address_with_the_port_and_the_first_ones_qr_code(site, monkeypatch, capsys):
    lines, port, listened = _serve_lan_output(site, monkeypatch, capsys, ROOM_ADDRESSES)
    # IPv6 addresses are printed where the server listens on both families
    dual_stack = socket.has_dualstack_ipv6()
    assert listened == [("::" if dual_stack else "0.0.0.0", 0)]
    expected = [f"http://192.0.2.10:{port}/"] + ([f"http://[2001:db8::10]:{port}/"] if dual_stack else [])
    assert [line.strip() for line in lines if line.startswith("  http://") and "workshop" not in line] == expected
    assert f"  http://workshop-laptop:{port}/  ({room.HOSTNAME_NOTE})" in lines
    start = lines.index(f"or scan this code for http://192.0.2.10:{port}/:")
    end = lines.index(f"the code and every address on one page, for the projector: http://127.0.0.1:{port}/room")
    printed = _qr_rows(lines[start + 1 : end])
    modules = [list(row) for row in segno.make_qr(f"http://192.0.2.10:{port}/", error="m").matrix_iter(border=4)]
    # the block draws exactly that code, with its quiet zone, and a light row to make the lines even
    assert printed[: len(modules)] == modules
    assert printed[len(modules) :] in ([], [[0] * len(modules[0])])
    # and an independent decoder (ZXing's) reads the printed block back as the first address
    assert qr_texts(printed) == [f"http://192.0.2.10:{port}/"]
    assert not any("Traceback" in line for line in lines)


def test_lan_with_no_address_says_so_in_one_line_and_draws_no_code(site, monkeypatch, capsys):
    lines, port, _ = _serve_lan_output(site, monkeypatch, capsys, [])
    assert lines.count(room.NO_ADDRESS) == 1
    assert "join the room's Wi-Fi or network" in room.NO_ADDRESS
    assert not any(set(line) & set(room.HALF_BLOCKS.values()) - {" "} for line in lines)
    assert f"  http://workshop-laptop:{port}/  ({room.HOSTNAME_NOTE})" in lines


def test_the_coloured_qr_code_is_the_plain_one_drawn_black_on_white():
    url = "http://192.0.2.10:8765/"
    coloured = room.terminal_qr(url, colour=True).splitlines()
    plain = room.terminal_qr(url, colour=False).splitlines()
    assert all(line.startswith("\x1b[30;107m") and line.endswith("\x1b[0m") for line in coloured)
    assert [line[len("\x1b[30;107m") : -len("\x1b[0m")] for line in coloured] == plain


def test_the_room_page_shows_every_address_escaped_and_the_first_ones_qr_code(served_lan):
    status, headers, body = fetch(served_lan, "/room")
    page = body.decode("utf-8")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Security-Policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    urls = [
        f"http://192.0.2.10:{served_lan}/",
        f"http://[2001:db8::10]:{served_lan}/",
        f"http://workshop-laptop:{served_lan}/",
    ]
    for url in urls:
        assert f'<a href="{shown(url)}">{shown(url)}</a>' in page
    assert page.count("<li>") == len(urls)
    svg = segno.make_qr(urls[0], error="m").svg_inline(border=4, dark="#000000", light="#ffffff", omitsize=True)
    assert svg.startswith("<svg") and svg in page
    # nothing on it names a place to load from: the addresses are character references
    assert "http://" not in page and "https://" not in page and "//" not in page.replace("&#47;&#47;", "")
    assert "prefers-color-scheme: dark" in page
    # every size set, the smallest a clamp() allows included, is at least 16 px
    assert min(int(size) for size in re.findall(r"font-size: (?:clamp\()?(\d+)px", page)) >= 16


def test_the_room_page_shows_a_hostname_of_markup_as_text(site):
    server, thread = start_server(site, lan=True, hostname='<img src=x onerror="alert(1)">')
    try:
        page = get_page(server.server_address[1], "/room")[1].decode("utf-8")
    finally:
        stop_server(server, thread)
    assert "<img" not in page and "onerror=" not in page
    assert shown(f'http://<img src=x onerror="alert(1)">:{server.server_address[1]}/') in page


def test_the_room_page_is_answered_only_with_lan_and_only_to_allowed_hosts(served, served_lan):
    assert get_page(served, "/room")[0] == 404
    assert get_page(served_lan, "/room", "evil.example:80")[0] == 403
    status, headers, body = fetch(served_lan, "/room", method="HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == len(get_page(served_lan, "/room")[1])


def test_room_addresses_leave_out_loopback_link_local_and_repeats_ipv4_first():
    listed = ["::1", "127.0.0.1", "fe80::fc:ff:fe00:1", "2001:db8::10", "192.0.2.10", "0.0.0.0", "192.0.2.10"]
    listed += ["fd00::2", "169.254.7.1", "ff02::1", "2001:DB8:0::10"]
    assert room.room_addresses(listed) == ["192.0.2.10", "169.254.7.1", "2001:db8::10", "fd00::2"]


def test_ipv6_addresses_are_read_from_proc_net_if_inet6():
    text = (
        "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n"
        "00000000000000000000000000000001 01 80 10 80       lo\n"
        "20010db8000000000000000000000010 04 40 00 82     eth0\n"
    )
    assert room.addresses_from_if_inet6(text) == ["fe80::fc:ff:fe00:1", "::1", "2001:db8::10"]


def test_lan_addresses_of_this_machine_are_strings_none_of_them_loopback():
    addresses = room.lan_addresses()  # read from the system; nothing is sent to any of them
    assert isinstance(addresses, list)
    for address in addresses:
        assert isinstance(address, str)
        parsed = ipaddress.ip_address(address)
        assert not parsed.is_loopback and not parsed.is_unspecified
        assert not (parsed.version == 6 and parsed.is_link_local)
        assert str(parsed) == address
    assert len(set(addresses)) == len(addresses)


# Text files gzipped once and kept under a byte cap; cache headers and ETags.


def test_a_browser_that_drops_its_connection_mid_file_leaves_no_traceback(site, capsys):
    # a file bigger than the socket buffers on both ends, so the server is still writing it
    (site / "photo.png").write_bytes(bytes(range(256)) * 80_000)
    server, thread = start_server(site)
    try:
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5)
            client.sendall(b"GET /photo.png HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.server_address[1])
            assert client.recv(64).startswith(b"HTTP/1.0 200")
            # closed with a reset, as a browser tab closed mid-load drops its connection
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
        assert get_page(server.server_address[1], "/index.html")[0] == 200
    finally:
        stop_server(server, thread)
    said = capsys.readouterr()
    assert "Traceback" not in said.err and "Error" not in said.err, said.err[-2000:]
