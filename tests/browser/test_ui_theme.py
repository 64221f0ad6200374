"""The lab palette's WCAG 2.2 contrast, light and dark, read straight from widgets/lab.css:
text at least 4.5:1 against what it sits on, borders, marks and bars at least 3:1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = (Path(__file__).resolve().parents[2] / "widgets" / "lab.css").read_text(encoding="utf-8")


def _block(selector_pattern: str) -> dict[str, str]:
    match = re.search(selector_pattern + r"\s*\{([^}]*)\}", CSS)
    assert match, selector_pattern
    return dict(re.findall(r"(--lab-[\w-]+):\s*(#[0-9a-fA-F]{6})", match.group(1)))


LIGHT = _block(r"\.four-bit-lab, \.lab-page")
DARK_MEDIA = _block(r'\.four-bit-lab:not\(\[data-lab-theme="light"\]\), \.lab-page')
DARK_CLASS = _block(r'\.four-bit-lab\[data-lab-theme="dark"\]')


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_formula_matches_known_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


TEXT = [  # (foreground, background): text and its background
    ("ink", "paper"),
    ("muted", "paper"),
    ("accent", "paper"),
    ("on-accent", "accent"),
    ("on-sign", "sign"),
    ("on-exponent", "exponent"),
    ("on-fraction", "fraction"),
    *[
        ("ink", fill)
        for fill in (
            "surface",
            "owner-a",
            "owner-b",
            "owner-all",
            "region-dmin",
            "current-row",
            "clipped-row",
            "error-bg",
            "note-bg",
            "field-low-scale",
            "field-low-min",
            "field-high-scale",
            "field-high-min",
        )
    ],
]
NON_TEXT = [  # borders, focus rings, marks and bars against the background
    ("rule", "paper"),
    ("accent", "paper"),
    ("vermillion", "paper"),
    ("ink", "paper"),
    ("lane", "paper"),
    ("lane-odd", "paper"),
    ("lane-current", "paper"),
    ("vermillion", "owner-a"),
    ("vermillion", "owner-all"),
]


@pytest.mark.parametrize("name, palette", [("light", LIGHT), ("dark", DARK_MEDIA)])
def test_palette_contrast(name, palette):
    colour = {key.removeprefix("--lab-"): value for key, value in palette.items()}
    for foreground, background in TEXT:
        ratio = contrast(colour[foreground], colour[background])
        assert ratio >= 4.5, f"{name}: text {foreground} on {background} is {ratio:.2f}:1"
    for foreground, background in NON_TEXT:
        ratio = contrast(colour[foreground], colour[background])
        assert ratio >= 3, f"{name}: {foreground} against {background} is {ratio:.2f}:1"


def test_both_dark_selectors_carry_the_same_complete_palette():
    assert DARK_MEDIA == DARK_CLASS
    assert set(DARK_MEDIA) == set(LIGHT)


def test_every_colour_in_the_stylesheet_is_a_custom_property():
    outside = re.sub(r"--lab-[\w-]+:\s*#[0-9a-fA-F]{6}", "", CSS)
    assert re.findall(r"#[0-9a-fA-F]{3,8}\b", outside) == []


def _hex(rgb: str) -> str:
    """A computed `rgb(r, g, b)` colour as #rrggbb."""
    red, green, blue = (int(part) for part in re.findall(r"\d+", rgb)[:3])
    return f"#{red:02x}{green:02x}{blue:02x}"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_index_follows_the_readers_theme_above_7_to_1(theme):
    """The site's index page is not a marimo page: its own stylesheet follows the reader's theme."""
    from chromium import browser_page

    from publish import site as sitebuild

    with browser_page() as (page, log):
        page.emulate_media(color_scheme=theme)
        page.set_content(sitebuild.index_page())
        colours = page.evaluate(
            """() => {
              const style = (element) => getComputedStyle(element);
              const body = style(document.body), link = style(document.querySelector("a"));
              return {background: body.backgroundColor, text: body.color, link: link.color};
            }"""
        )
        assert log.console_errors == []
    background, text, link = (_hex(colours[key]) for key in ("background", "text", "link"))
    # dark means a dark background, not a light page with light text
    assert (_luminance(background) < 0.05) == (theme == "dark"), colours
    assert contrast(text, background) >= 7 and contrast(link, background) >= 7, colours
