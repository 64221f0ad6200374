"""serve --lan's /room page, for a projector and for the phones that scan it: in Chromium at a
390 px phone and a 1920 px projector, light and dark, the QR code a camera sees (a screenshot,
read by ZXing's decoder) is the first address, nothing leaves the page, and the text is large and
contrasted enough to read from the back of a room."""

from __future__ import annotations

import io
import threading

import pytest
import zxingcpp
from chromium import browser_page
from PIL import Image
from test_ui_theme import contrast

from classroom import serve

pytestmark = pytest.mark.browser

ADDRESSES = ["192.0.2.10", "2001:db8::10"]

# The computed colour of an element's text and of the first background behind it, as #rrggbb.
COLOURS = """(node) => {
  const hex = (rgb) => "#" + rgb.match(/\\d+/g).slice(0, 3).map((c) => Number(c).toString(16).padStart(2, "0")).join("");
  let back = node;
  while (back && getComputedStyle(back).backgroundColor === "rgba(0, 0, 0, 0)") back = back.parentElement;
  return [hex(getComputedStyle(node).color), hex(getComputedStyle(back ?? document.body).backgroundColor)];
}"""


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    (site / "index.html").write_text("<h1>lab</h1>")
    server = serve.site_server(site, ("127.0.0.1", 0), lan=True, addresses=ADDRESSES, hostname="workshop-laptop")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.mark.parametrize(("width", "scheme"), [(390, "dark"), (390, "light"), (1920, "light"), (1920, "dark")])
def test_the_room_page_reads_and_scans_at_every_width(room, width, scheme):
    port = room
    with browser_page() as (page, log):
        page.set_viewport_size({"width": width, "height": 1080})
        page.emulate_media(color_scheme=scheme)
        page.goto(f"http://127.0.0.1:{port}/room")
        code = page.locator(".qr svg")
        code.wait_for()
        # what a phone's camera gets: the code as drawn on the screen, in either theme
        image = Image.open(io.BytesIO(code.screenshot(type="png")))
        assert [found.text for found in zxingcpp.read_barcodes(image)] == [f"http://192.0.2.10:{port}/"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        links = page.locator(".addresses a")
        assert links.all_inner_texts() == [
            f"http://192.0.2.10:{port}/",
            f"http://[2001:db8::10]:{port}/",
            f"http://workshop-laptop:{port}/",
        ]
        for text in (page.locator("h1"), page.locator("p").first, links.first):
            size = float(text.evaluate("(node) => getComputedStyle(node).fontSize").removesuffix("px"))
            assert size >= 16
            assert contrast(*text.evaluate(COLOURS)) >= 7
        assert log.blocked == [] and log.console_errors == []
