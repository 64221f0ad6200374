"""`labctl.py serve`'s bytes on the wire: text files gzipped once (kept under a byte cap) for a
browser that accepts gzip, the rest as they are; a hashed front-end chunk cached for a year and
everything else revalidated by a strong ETag, with 304 for a copy the browser already holds.
Every request goes to 127.0.0.1."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
from pathlib import Path

import pytest
from serving import BIG_ASSET, HASHED_ASSET, fetch, make_site, start_server, stop_server

from classroom import handler
from publish import site as sitebuild


@pytest.fixture
def site(tmp_path):
    return make_site(tmp_path)


@pytest.fixture
def served(site):
    server, thread = start_server(site)
    yield server.server_address[1]
    stop_server(server, thread)


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_text_file_is_sent_gzipped_to_a_browser_that_accepts_it(served, method):
    status, headers, body = fetch(served, "/assets/big.js", [("Accept-Encoding", "gzip, deflate, br")], method)
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Vary"] == "Accept-Encoding"
    assert headers["Content-Type"] == "text/javascript"
    full = fetch(served, "/assets/big.js", [("Accept-Encoding", "gzip")])[2]
    assert gzip.decompress(full) == BIG_ASSET
    assert int(headers["Content-Length"]) == len(full) < len(BIG_ASSET) // 10
    assert body == (full if method == "GET" else b"")


@pytest.mark.parametrize("accept", [None, "identity", "gzip;q=0", "br", "*;q=0", "deflate, *;q=0"])
def test_without_gzip_in_accept_encoding_the_file_is_sent_as_it_is(served, accept):
    headers_sent = [] if accept is None else [("Accept-Encoding", accept)]
    status, headers, body = fetch(served, "/assets/big.js", headers_sent)
    assert (status, body) == (200, BIG_ASSET)
    assert "Content-Encoding" not in headers
    assert int(headers["Content-Length"]) == len(BIG_ASSET)
    assert headers["Vary"] == "Accept-Encoding"


@pytest.mark.parametrize("accept", ["*", "gzip;q=0.5, br;q=1", "GZIP"])
def test_gzip_allowed_by_any_spelling_is_sent(served, accept):
    status, headers, body = fetch(served, "/assets/big.js", [("Accept-Encoding", accept)])
    assert (status, headers["Content-Encoding"], gzip.decompress(body)) == (200, "gzip", BIG_ASSET)


def test_an_html_page_and_an_svg_are_gzipped_too_but_an_image_is_not(site, served):
    page = b"<!doctype html><p>" + b"four bits " * 500 + b"</p>"
    (site / "explainers" / "long.html").write_bytes(page)
    (site / "figure.svg").write_bytes(b"<svg>" + b"<rect/>" * 500 + b"</svg>")
    (site / "photo.png").write_bytes(b"\x89PNG" + b"\0" * 5000)
    gzipped = {"Accept-Encoding": "gzip"}.items()
    for path, original in (("/explainers/long.html", page), ("/figure.svg", (site / "figure.svg").read_bytes())):
        status, headers, body = fetch(served, path, gzipped)
        assert (status, headers["Content-Encoding"], gzip.decompress(body)) == (200, "gzip", original)
    status, headers, body = fetch(served, "/photo.png", gzipped)
    assert (status, body) == (200, (site / "photo.png").read_bytes())
    assert "Content-Encoding" not in headers and "Vary" not in headers


def test_a_hashed_asset_is_cached_for_a_year_and_a_page_is_revalidated(served):
    asset = fetch(served, "/" + HASHED_ASSET, [("Accept-Encoding", "gzip")])[1]
    assert asset["Cache-Control"] == "public, max-age=31536000, immutable"
    for path in ("/", "/index.html", "/explainers/", "/assets/a.js", "/assets/big.js"):
        headers = fetch(served, path)[1]
        assert headers["Cache-Control"] == "no-cache", path
        assert re.fullmatch(r'"[0-9a-f]+-[0-9a-f]+"', headers["ETag"]), path


def test_the_hashed_name_rule_is_the_site_builds():
    assert handler.HASHED_NAME.pattern == sitebuild.VITE_HASH.pattern
    # the folders the build writes content-named files into: marimo's front-end and the widget modules
    assert handler.HASHED_FOLDERS == (f"/{sitebuild.ASSET_DIR.split('/')[0]}/", f"/{sitebuild.WIDGET_DIR}/")


def test_a_widget_module_named_by_its_content_is_cached_for_a_year(site, served):
    (site / sitebuild.WIDGET_DIR).mkdir()
    (site / sitebuild.WIDGET_DIR / "lab-widget-0123abcd.js").write_bytes(BIG_ASSET)
    (site / sitebuild.WIDGET_DIR / "notes.js").write_bytes(BIG_ASSET)
    status, headers, body = fetch(
        served, f"/{sitebuild.WIDGET_DIR}/lab-widget-0123abcd.js", [("Accept-Encoding", "gzip")]
    )
    assert (status, headers["Cache-Control"], gzip.decompress(body)) == (200, handler.IMMUTABLE, BIG_ASSET)
    assert fetch(served, f"/{sitebuild.WIDGET_DIR}/notes.js")[1]["Cache-Control"] == "no-cache"


@pytest.mark.parametrize("accept", [None, "gzip"])
def test_if_none_match_with_the_current_etag_is_a_304(served, accept):
    sent = [] if accept is None else [("Accept-Encoding", accept)]
    for path in ("/index.html", "/assets/big.js", "/" + HASHED_ASSET):
        status, headers, body = fetch(served, path, sent)
        etag = headers["ETag"]
        for if_none_match in (etag, f'"other", W/{etag}', "*"):
            again = fetch(served, path, [*sent, ("If-None-Match", if_none_match)])
            assert (again[0], again[2], again[1]["ETag"]) == (304, b"", etag)
            assert again[1]["Cache-Control"] == headers["Cache-Control"]
        assert fetch(served, path, [*sent, ("If-None-Match", '"other"')])[0] == 200


def test_the_gzip_and_the_plain_bytes_have_different_etags(served):
    plain = fetch(served, "/assets/big.js")[1]["ETag"]
    gzipped = fetch(served, "/assets/big.js", [("Accept-Encoding", "gzip")])[1]["ETag"]
    assert plain != gzipped
    # a gzip copy a cache holds does not stand for the plain bytes, and the other way round
    assert fetch(served, "/assets/big.js", [("If-None-Match", gzipped)])[2] == BIG_ASSET
    assert fetch(served, "/assets/big.js", [("Accept-Encoding", "gzip"), ("If-None-Match", plain)])[0] == 200


def test_a_changed_file_gets_a_new_etag_and_a_new_gzip_copy(site, served):
    before = fetch(served, "/assets/big.js", [("Accept-Encoding", "gzip")])
    changed = BIG_ASSET.replace(b"0x7f", b"0x01")
    (site / "assets" / "big.js").write_bytes(changed)
    stat = (site / "assets" / "big.js").stat()
    os.utime(site / "assets" / "big.js", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = fetch(served, "/assets/big.js", [("Accept-Encoding", "gzip"), ("If-None-Match", before[1]["ETag"])])
    assert after[0] == 200
    assert after[1]["ETag"] != before[1]["ETag"]
    assert gzip.decompress(after[2]) == changed


def _text_of(seed: str, size: int) -> bytes:
    """Text that compresses only about in half, so two gzip copies of it have sizes far apart from 0."""
    digits = b""
    while len(digits) < size:
        digits += hashlib.sha256(f"{seed}{len(digits)}".encode()).hexdigest().encode()
    return digits[:size]


def test_the_gzip_copies_stay_under_the_byte_cap(site):
    first, second = _text_of("first", 60_000), _text_of("second", 50_000)
    (site / "first.txt").write_bytes(first)
    (site / "second.txt").write_bytes(second)
    measure, thread = start_server(site)
    try:
        port = measure.server_address[1]
        sizes = [len(fetch(port, f"/{name}.txt", [("Accept-Encoding", "gzip")])[2]) for name in ("first", "second")]
    finally:
        stop_server(measure, thread)
    cap = sum(sizes) - 1  # each fits alone, the two together do not
    server, thread = start_server(site, gzip_cache_bytes=cap)
    try:
        port = server.server_address[1]
        cache = server.gzip_cache
        for name, original in (("first", first), ("second", second), ("first", first), ("first", first)):
            status, headers, body = fetch(port, f"/{name}.txt", [("Accept-Encoding", "gzip")])
            assert (status, headers["Content-Encoding"], gzip.decompress(body)) == (200, "gzip", original)
            assert int(headers["Content-Length"]) == len(body)
            assert cache.total_bytes <= cap
            assert cache.total_bytes == sum(len(entry[2]) for entry in cache.entries.values())
            assert [Path(path).name for path in cache.entries] == [f"{name}.txt"]
    finally:
        stop_server(server, thread)


def test_a_file_larger_than_the_cap_is_sent_as_it_is(site):
    server, thread = start_server(site, gzip_cache_bytes=len(BIG_ASSET) - 1)
    try:
        status, headers, body = fetch(server.server_address[1], "/assets/big.js", [("Accept-Encoding", "gzip")])
    finally:
        stop_server(server, thread)
    assert (status, body) == (200, BIG_ASSET)
    assert "Content-Encoding" not in headers
    assert server.gzip_cache.total_bytes == 0
