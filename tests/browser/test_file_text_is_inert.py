"""Nothing read from a file ever runs: notebook 6, live in marimo's app view and in its editor,
opens a GGUF file whose every text (metadata keys, values, string-array elements, general.name,
tensor names, an uploaded file's name, an error that quotes a name) is an HTML or Markdown
payload. No element of any payload may reach the DOM (shadow roots and frames included), no
script may run, and each text must read back literally.

Before lab.text.shown() stood between the file and mo.md, the first payload below set
window.__xss in the lab's own origin, and under the editor a tensor name could post Python to
the kernel."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest
from chromium import browser_page, open_standalone

from lab.text import visible
from labctl import marimo_server

pytestmark = pytest.mark.browser

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "06_files_and_recipes.py"

#: every payload sets window.__xss (or its parent's) if it runs, and carries the class or text
#: "pwn" if any element of it is created; each fits in the 60 characters a metadata value shows
PAYLOADS = [
    '<iframe class=pwn srcdoc="<script>parent.__xss=1</script>">',
    "<script class=pwn>window.__xss=2</script>",
    '<img class=pwn src=x onerror="window.__xss=3">',
    '<svg class=pwn onload="window.__xss=4"></svg>',
    "<style class=pwn>*{color:red!important}</style>",
    '<base class=pwn href="javascript:window.__xss=6//">',
    '<meta class=pwn http-equiv="refresh" content="0;url=/pwn">',
    '<form class=pwn action="javascript:window.__xss=8"><button>',
    "<details class=pwn open ontoggle=window.__xss=9>x</details>",
    "<object class=pwn data=javascript:window.__xss=10></object>",
    '<embed class=pwn src="javascript:window.__xss=11">',
    "[pwn](javascript:window.__xss=12)",
    "![pwn](data:image/svg+xml,<svg onload=window.__xss=13>)",
    "[pwn](data:text/html,<script>window.__xss=14</script>)",
    "<javascript:window.__xss=15>",
    "<https://example.invalid/pwn> www.example.invalid/pwn",
    "**pwn** _pwn_ `pwn` $pwn$ :smile: ~~pwn~~ | pwn |",
    "right\u202eto left, zero\u200bwidth, nl\nhere",
]
#: a real vocabulary's special tokens, which used to render as empty HTML elements
TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]

#: GGUF value types: a string, and an array of them
STRING, ARRAY = 8, 9
F32, IQ2_XXS = 0, 16  # IQ2_XXS: a type the lab lists but does not decode, so picking it is refused


def _text(value: str) -> bytes:
    data = value.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def payload_gguf(path: Path) -> Path:
    """A GGUF v3 file whose texts are PAYLOADS: as keys, as values, in a string array, as
    general.name, and as tensor names (the first one of a type the lab refuses to decode)."""
    kv = [(b"general.name", STRING, _text(PAYLOADS[0]))]
    kv += [(f"x.key.{i}.{payload}".encode(), STRING, _text("value")) for i, payload in enumerate(PAYLOADS)]
    kv += [(f"x.value.{i}".encode(), STRING, _text(payload)) for i, payload in enumerate(PAYLOADS)]
    strings = [*PAYLOADS, *TOKENS]
    kv.append((b"x.array", ARRAY, struct.pack("<IQ", STRING, len(strings)) + b"".join(map(_text, strings))))
    kv.append((b"tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, len(TOKENS)) + b"".join(map(_text, TOKENS))))
    tensors = [(f"{PAYLOADS[2]}.weight", IQ2_XXS, 256, 66)]
    tensors += [(f"t{i}.{payload}", F32, 8, 32) for i, payload in enumerate(PAYLOADS)]
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    header += b"".join(struct.pack("<Q", len(key)) + key + struct.pack("<I", kind) + value for key, kind, value in kv)
    offset, data = 0, b""
    for name, kind, weights, n_bytes in tensors:
        header += _text(name) + struct.pack("<IQIQ", 1, weights, kind, offset)
        block = bytes(range(n_bytes)) if kind != F32 else struct.pack("<8f", *range(8))
        data += block + bytes(-len(block) % 32)
        offset = len(data)
    header += bytes(-len(header) % 32)
    path.write_bytes(header + data)
    return path


# Run in the page: every element of the document, of each open shadow root and of each same-origin
# frame, and what would show that a payload ran or became an element.
PROBE = r"""() => {
  const ACTIVE = ["href", "src", "srcdoc", "action", "formaction", "data", "content", "xlink:href", "style", "background", "poster"];
  const found = { pwn: [], ran: [], links: [] };
  const ranIn = (win) => { try { return win.__xss; } catch { return undefined; } };
  const walk = (root) => {
    for (const node of root.querySelectorAll("*")) {
      if (node.classList && node.classList.contains("pwn")) found.pwn.push(node.outerHTML.slice(0, 120));
      for (const attr of node.attributes || []) {
        // an attribute that runs or fetches what it names; a payload's text in a value or data
        // attribute (a dropdown's option) is inert
        const active = attr.name.startsWith("on") || ACTIVE.includes(attr.name);
        if (active && /__xss|example\.invalid|pwn/.test(attr.value)) found.links.push(`${node.tagName} ${attr.name}=${attr.value.slice(0, 80)}`);
      }
      if (["STRONG", "EM", "DEL"].includes(node.tagName) && node.textContent === "pwn") found.pwn.push(node.outerHTML);
      if (node.shadowRoot) walk(node.shadowRoot);
      if (node.tagName === "IFRAME") {
        try { if (node.contentDocument) walk(node.contentDocument); } catch {}
        const value = node.contentWindow && ranIn(node.contentWindow);
        if (value !== undefined) found.ran.push(value);
      }
    }
  };
  walk(document);
  if (ranIn(window) !== undefined) found.ran.push(ranIn(window));
  return found;
}"""

# Run in the page: all the text a reader sees, shadow roots included.
DEEP_TEXT = """() => {
  const parts = [];
  const walk = (root) => {
    parts.push(root.body ? root.body.innerText : root.textContent);
    for (const node of root.querySelectorAll("*")) if (node.shadowRoot) walk(node.shadowRoot);
  };
  walk(document);
  return parts.join("\\n");
}"""


def assert_inert(page, log) -> str:
    """No payload became an element or ran; returns the page's text for the literal checks."""
    found = page.evaluate(PROBE)
    assert found == {"pwn": [], "ran": [], "links": []}
    assert log.blocked == []
    text = page.evaluate(DEEP_TEXT)
    assert "\u202e" not in text and "\u200b" not in text, "a bidi or zero-width mark reached the page unspelt"
    return text


def open_notebook_six(page, url: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(url)
    page.get_by_text("Open a file").first.wait_for(timeout=90000)


@pytest.mark.parametrize("mode", ["run", "edit"])
def test_a_file_full_of_payloads_shows_every_text_literally(mode, tmp_path):
    path = payload_gguf(tmp_path / "payloads.gguf")
    with (
        marimo_server(Path(sys.executable), mode, NOTEBOOK, quiet=True, start_s=90) as server,
        browser_page() as (page, log),
    ):
        open_notebook_six(page, server.url())
        field = page.get_by_role("textbox", name="or type the path of a GGUF file on this machine")
        field.fill(str(path))
        field.press("Enter")
        # the metadata table is the last thing the opened file's cell writes
        heading = page.get_by_role("heading", name="payloads.gguf")
        heading.wait_for(timeout=60000)
        # the first tensor's type is refused beside the block (lab.teach.kept: nothing valid drawn yet);
        # the refusal quotes its name, which is a payload too
        page.locator('[data-lab-kept="refused"] [role="alert"]').wait_for(timeout=60000)
        text = assert_inert(page, log)
        for i, payload in enumerate(PAYLOADS):
            shown = visible(payload)
            assert f"x.value.{i}" in text and f"'{shown}'" in text, f"metadata value {i} not shown literally"
            assert f"x.key.{i}.{shown}" in text, f"metadata key {i} not shown literally"
            assert f"t{i}.{shown}" in text, f"tensor name {i} not shown literally"
        assert "['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', … 1 more]" in text
        assert f"'{visible(PAYLOADS[2])}.weight' has type IQ2_XXS" in text  # the refusal's quote
        # the picker lists the same names as text
        picker = page.get_by_role("combobox", name="tensor")
        assert visible(PAYLOADS[1]) in picker.inner_text()

        # an upload whose file name is a payload: the label repeats the name as text
        upload_name = '<img class=pwn src=x onerror="window.__xss=99">.gguf'
        page.locator("input[type=file]").first.set_input_files(
            files=[{"name": upload_name, "mimeType": "application/octet-stream", "buffer": path.read_bytes()}]
        )
        # the typed path still wins, and the page names the upload it set aside, as text
        page.get_by_text(f"Your upload {upload_name} is not open", exact=False).wait_for(timeout=60000)
        assert_inert(page, log)
        field.fill("")
        field.press("Enter")
        page.get_by_role("heading", name=f"upload {upload_name}").wait_for(timeout=60000)
        assert_inert(page, log)
        assert log.console_errors == []


def test_an_upload_too_large_quotes_its_name_literally(tmp_path):
    """The refusal of an upload over the cap names the upload, and that name is text."""
    from lab.teach import gguf_browser

    name = "<svg class=pwn onload=window.__xss=1>\u202e.gguf"
    with pytest.raises(gguf_browser.UploadTooLargeError) as refused:
        gguf_browser.open_upload(b"x" * 11, name, limit=10)
    assert str(refused.value).startswith(f"'{visible(name)}' is 11 bytes")


#: each explainer's text inputs, which a link may set to anything
TEXT_INPUTS = {"scale-lab": ["w_text", "x_text"], "code-explorer": ["format", "value_text"]}
EXPLAINERS = ["nibble-decoder", "scale-lab", "ownership", "q4k-explorer", "code-explorer", "exercises"]


@pytest.mark.parametrize("slug", EXPLAINERS)
def test_a_link_full_of_payloads_stays_text_in_every_explainer(slug, pages):
    """The standalone explainers read their state from the link's #fragment: names the page does
    not know are listed as text, and text inputs hold the payload as text."""
    unknown = {payload: 1 for payload in PAYLOADS}
    with browser_page() as (page, log):
        open_standalone(page, pages, slug, fragment=unknown)
        text = assert_inert(page, log)
        note = page.locator("#link-note")
        assert note.inner_text().startswith("Ignored from the link: ")
        for payload in PAYLOADS:
            assert visible(payload, 40) in text, f"the ignored name {payload!r} is not shown literally"
        for name in TEXT_INPUTS.get(slug, []):
            for payload in PAYLOADS:
                page.goto("about:blank")
                open_standalone(page, pages, slug, fragment={name: payload})
                assert_inert(page, log)
        assert log.console_errors == []
