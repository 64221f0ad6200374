"""`labctl.py serve` is a quiet static server for loopback only, with --lan as an explicit opt-in."""

from __future__ import annotations

import http.client
import http.server
import threading

import pytest

from widgets.build.site import site_handler


@pytest.fixture
def site(tmp_path):
    (tmp_path / "index.html").write_text("<h1>lab</h1>")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "a.js").write_text("1")
    (tmp_path / "explainers").mkdir()
    (tmp_path / "explainers" / "index.html").write_text("explainers")
    return tmp_path


def _start(site, lan=False):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), site_handler(site, lan=lan))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def served(site):
    server, thread = _start(site)
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


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


def test_lan_mode_accepts_any_host(site):
    server, thread = _start(site, lan=True)
    try:
        assert _get(server.server_address[1], "/", "192.168.1.20:8765")[0] == 200
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_ctrl_c_stops_serve_without_a_traceback(site, monkeypatch, capsys):
    from widgets.build import site as sitebuild

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(http.server.ThreadingHTTPServer, "serve_forever", interrupted)
    sitebuild.serve(site, port=0)  # returns instead of raising
    assert "stopped" in capsys.readouterr().out
