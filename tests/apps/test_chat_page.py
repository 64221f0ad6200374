"""Notebook 12 as a learner reads it: model answers in their lines, one minus sign in every change,
every format on the Pareto front numbered, and a prompt of one's own checked as it is typed, by the
tokenizer alone, before any model is loaded.

The study shown is llama.cpp's own pinned run of the same file (tests/data/chat_requant_reference.json):
real greedy answers, with their newlines, and real measures, one of them a negative Δ NLL. So the page's
cells run as they do for a learner, without the minutes of measuring a study here."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import marimo as mo
import pytest
from support import require_shipped_gguf

from lab.errors import InputError
from lab.formats import FORMATS
from lab.formats.registry import UnknownFormatError
from lab.study import chat_study, compare
from lab.study.chat_study import ChatStudy, Continuation, FormatResult
from lab.teach import chat_page
from lab.teach.charts._layout import LINE_CHARS, NARROWEST_PLOT, pixel_position
from lab.teach.charts.chat import NUMBER_SPOTS, _domains, front_chart, front_numbers, number_box

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "12_a_chat_models_answers.py"
#: llama.cpp's types in the pinned run, by the lab's registry name
PINNED_TYPES = {"q8_0": "Q8_0", "q6_k": "Q6_K", "q4_0": "Q4_0", "iq4_nl": "IQ4_NL"}


@pytest.fixture(scope="module")
def tokenizer():
    require_shipped_gguf()
    from lab.study import chat

    return chat.load_tokenizer()


def _result(name: str, title: str, entry: dict, reference: FormatResult | None, pinned: dict, tokenizer):
    continuations = []
    for index, answer in enumerate(entry["answers"]):
        ids = tuple(answer["greedy"])
        divergence = None if reference is None else chat_study.first_divergence(ids, reference.continuations[index].ids)
        split = len(ids) if divergence is None else divergence
        agreeing, departing = tokenizer.decode(ids[:split]), tokenizer.decode(ids[split:])
        continuations.append(Continuation(answer["prompt"], ids, answer["text"], divergence, agreeing, departing))
    reference_nll = pinned["f32"]["nll"]
    return FormatResult(
        name,
        title,
        None if reference is None else FORMATS[name].bits_per_weight,
        entry.get("kl_divergence", 0.0),
        entry.get("same_top", 1.0),
        entry["nll"],
        entry["nll"] - reference_nll,
        tuple(continuations),
        (),
        len(pinned["f32"]["passage_ids"]),
    )


@pytest.fixture(scope="module")
def pinned_study(tokenizer) -> ChatStudy:
    """llama.cpp's run of the float32 weights and of four re-quantizations, as a study."""
    pinned = chat_study.llama_cpp_pinned()
    reference = _result(chat_study.REFERENCE, chat_study.REFERENCE_TITLE, pinned["f32"], None, pinned, tokenizer)
    formats = tuple(
        _result(name, FORMATS[name].title, pinned[gguf_type], reference, pinned, tokenizer)
        for name, gguf_type in PINNED_TYPES.items()
    )
    return ChatStudy(reference, formats)


def run_page(defs: dict) -> list[str]:
    """Notebook 12's cells, those that define `defs` left out, and what each shows, as HTML."""
    spec = importlib.util.spec_from_file_location("notebook_12_page", NOTEBOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    outputs, _ = module.app.run(defs={"chat_missing": None, "study_formats": list(PINNED_TYPES), **defs})
    return [mo.as_html(output).text if output is not None else "" for output in outputs]


@pytest.fixture(scope="module")
def page(pinned_study) -> str:
    return "\n".join(run_page({"study": pinned_study}))


def test_the_answers_keep_their_line_breaks(pinned_study, page):
    # the reference's answer to prompt 2 as the model wrote it, with two newlines
    water = pinned_study.reference.continuations[1].text
    assert water == " 100 degrees Celsius.\n\nThe boiling point of water is 100 degrees Celsius"
    assert "100 degrees Celsius&#46;<br><br>The boiling point of water" in page
    # no answer on the page spells a newline as a backslash and an n (shown() writes \ as &#92;),
    # and neither does the prompt over them: the chat template keeps its lines, every other
    # character of it written out
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page, flags=re.S)
    assert len(cells) > 30 and not [cell for cell in cells if "&#92;n" in cell]
    assert "&lt;start&#95;of&#95;turn&gt;user<br>Name three colours" in page
    assert not [heading for heading in re.findall(r"<h3[^>]*>(.*?)</h3>", page, flags=re.S) if "&#92;n" in heading]
    # Q4_0's answer to prompt 3 departs at its second token, a newline: its lines sit in the bold part
    name = pinned_study.formats[2].continuations[2]
    assert (name.first_divergence, name.agreeing) == (1, "Name") and name.departing.count("\n") == 10
    assert "Name<strong>⟨<br>Name<br>Name<br>" in page


def test_a_change_has_the_labs_minus_sign(pinned_study, page):
    q8_0 = pinned_study.formats[0]
    assert q8_0.nll_delta == pytest.approx(-0.00298, abs=1e-5)
    shown = html.unescape(page)
    assert '<td style="text-align: right;">−0.0030</td>' in shown  # Q8_0, in the study's table
    assert '<td style="text-align: right;">+0.2843</td>' in shown  # Q4_0
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page, flags=re.S)
    # no cell of any table starts with an ASCII hyphen before a digit
    assert not [cell for cell in cells if re.match(r"-\d", html.unescape(cell))]


def test_the_page_numbers_every_format_on_its_pareto_front(pinned_study, page):
    rows = pinned_study.format_rows()
    front = sorted((row for row in rows if row["on_front"]), key=lambda row: row["bits_per_weight"])
    assert [row["title"] for row in front] == ["IQ4_NL", "Q6_K", "Q8_0"]
    spec = front_chart(rows, "Gemma 3 270M", error="kl_divergence", error_words="KL divergence", note="").to_dict()
    assert " ".join(spec["title"]["subtitle"]).endswith("On the front: 1 IQ4_NL · 2 Q6_K · 3 Q8_0.")
    assert "On the front: 1 IQ4_NL" in page  # that chart is the page's


@pytest.mark.parametrize("source", ["N(0, 1)", "Student t, 3 d.o.f."])
def test_every_front_point_is_numbered_and_no_two_numbers_meet(source):
    # every registry format on notebook 11's synthetic weights: two dozen points, six at 4.5 bits
    weights = {name: w for name, w in compare.sources().items() if name == source}
    rows = compare.pareto_front(compare.error_rows(weights))
    measured = [row for row in rows if row["relative_error"] is not None]
    height = 360
    numbered = front_numbers(measured, "relative_error", height)
    front = [row for row in numbered if row["on_front"]]
    assert len(front) >= 5
    assert sorted(row["number"] for row in front) == list(range(1, len(front) + 1))
    assert all(row["number side"] in NUMBER_SPOTS for row in front)
    assert all(row["number"] is None and row["number side"] is None for row in numbered if not row["on_front"])
    # numbered along the front by bits
    assert [row["number"] for row in sorted(front, key=lambda row: row["bits_per_weight"])] == sorted(
        row["number"] for row in front
    )
    x_domain, y_domain = _domains(measured, "relative_error")
    ys = [height - pixel_position(row["relative_error"], y_domain, height, log=True) for row in numbered]
    # no two numbers meet on a phone's plot nor on a projector's, and none covers another point
    for width in (NARROWEST_PLOT, 1200):
        xs = [pixel_position(row["bits_per_weight"], x_domain, width) for row in numbered]
        boxes = [
            (number_box(row["number side"], x, y, row["number"]), i)
            for i, (row, x, y) in enumerate(zip(numbered, xs, ys, strict=True))
            if row["on_front"]
        ]
        for k, (a, _) in enumerate(boxes):
            for b, _ in boxes[k + 1 :]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (width, a, b)
        if width == NARROWEST_PLOT:
            for box, i in boxes:
                assert 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height, box
                assert not [
                    j
                    for j, (x, y) in enumerate(zip(xs, ys, strict=True))
                    if j != i and box[0] - 6 < x < box[2] + 6 and box[1] - 6 < y < box[3] + 6
                ], (numbered[i]["title"], box)
    # the chart draws them, the front by shape as well as colour, and says them in words
    spec = front_chart(measured, source, error="relative_error", error_words="relative error", note="").to_dict()
    layers = spec["layer"]
    texts = [layer for layer in layers if layer["mark"]["type"] == "text"]
    assert {layer["mark"]["align"] for layer in texts} == {"left", "right", "center"}
    points = next(layer for layer in layers if layer["mark"]["type"] == "point")
    assert points["encoding"]["shape"]["scale"]["range"] == ["circle", "square"]
    first = min(front, key=lambda row: row["number"])
    assert f"1, {first['title']} at" in spec["description"]
    # the key under the title: every number with its name, no name split across two lines, no
    # line wider than the narrowest plot
    subtitle = spec["title"]["subtitle"]
    key = subtitle[next(i for i, line in enumerate(subtitle) if line.startswith("On the front: ")) :]
    assert all(len(line) <= LINE_CHARS for line in key)
    entries = [entry for line in key for entry in line.removeprefix("On the front: ").rstrip(" ·.").split(" · ")]
    assert entries == [f"{row['number']} {row['title']}" for row in sorted(front, key=lambda row: row["number"])]


def test_an_empty_prompt_is_refused_before_the_tokenizer_is_read(monkeypatch):
    from lab.study import chat

    monkeypatch.setattr(chat, "load_tokenizer", lambda *a: pytest.fail("the tokenizer was read for an empty prompt"))
    monkeypatch.setattr(chat, "load", lambda *a: pytest.fail("the model was loaded for an empty prompt"))
    for empty in ("", "   \n\t"):
        with pytest.raises(InputError, match="type a prompt: it is empty"):
            chat_study.check_prompt(empty)
    with pytest.raises(InputError, match="the box takes at most 2,000"):
        chat_study.check_prompt("x" * 2001)


def test_an_over_long_prompt_is_refused_by_the_tokenizer_alone(tokenizer, monkeypatch):
    from lab.study import chat

    monkeypatch.setattr(chat, "load", lambda *a: pytest.fail("the model was loaded to check a prompt"))
    # the 402-token prompt the issue saw refused only after a run
    with pytest.raises(InputError, match="the prompt is 402 tokens; the study reads at most 256: shorten it by 146"):
        chat_study.check_prompt("word " * 400)
    ids = chat_study.check_prompt(chat_study.PROMPTS[2])
    assert (
        ids[0] == tokenizer.bos
        and ids[1] == tokenizer.encode("<start_of_turn>", add_special=False, parse_special=True)[0]
    )
    assert chat_page.prompt_reading(chat_study.PROMPTS[2]) == f"{len(ids)} of at most 256 tokens, <bos> included."


def test_the_prompt_box_refuses_as_typed_without_loading_the_model(monkeypatch, pinned_study):
    from lab.study import chat

    monkeypatch.setattr(chat, "load", lambda *a: pytest.fail("the model was loaded to check a prompt"))
    monkeypatch.setattr(chat_study, "prompt_model", lambda: pytest.fail("the model was loaded to check a prompt"))
    formats = mo.ui.multiselect(options={FORMATS[name].title: name for name in FORMATS}, value=["Q4_0", "Q8_0"])
    for typed, says in [
        ("word " * 400, "the prompt is 402 tokens; the study reads at most 256: shorten it by 146"),
        ("", "Type a prompt and press"),
        (
            "The capital of France is",
            f"{len(chat_study.check_prompt('The capital of France is'))} of at most 256 tokens",
        ),
    ]:
        shown = "\n".join(
            run_page(
                {
                    "study": pinned_study,
                    "prompt_box": mo.ui.text_area(value=typed),
                    "prompt_formats": formats,
                    "prompt_run": mo.ui.run_button(),
                }
            )
        )
        # a callout's text sits in a JSON attribute, its references escaped once more
        assert says in html.unescape(html.unescape(shown)), typed
        assert ("This prompt cannot be run." in shown) == typed.startswith("word"), typed
        # the cost of what is picked: the file's weights and two formats
        least, most = (chat_study.PROMPT_REFERENCE_SECONDS + 2 * each for each in chat_study.PROMPT_FORMAT_SECONDS)
        assert f"with 2 formats, {least} to {most} s." in html.unescape(shown)


def test_the_progress_names_each_step_with_its_cost():
    least, most = chat_study.PROMPT_FORMAT_SECONDS
    steps = [chat_page.prompt_step(["q4_0", "q8_0"], step) for step in range(5)]
    assert steps == [
        f"loading the model: about {chat_study.PROMPT_LOAD_SECONDS} s, for the first prompt only",
        f"answer 1 of 3, the file's weights: about {chat_study.PROMPT_REFERENCE_SECONDS} s",
        f"answer 2 of 3, Q4_0: {least} to {most} s",
        f"answer 3 of 3, Q8_0: {least} to {most} s",
        "done",
    ]
    assert chat_page.prompt_cost(1).endswith(
        f"with 1 format, {chat_study.PROMPT_REFERENCE_SECONDS + least} to {chat_study.PROMPT_REFERENCE_SECONDS + most} s. "
        "The answers appear one by one as they are ready."
    )


@pytest.mark.slow
def test_the_answers_come_one_by_one_in_the_order_chosen(tokenizer):
    model = chat_study.prompt_model()
    assert chat_study.prompt_model() is model  # kept for the next prompt
    each = chat_study.answer_each("The capital of France is", ["q8_0", "q4_0"], model=model, tokens=4)
    title, reference = next(each)
    # the reference's answer is out before any format's Linears are re-quantized
    assert title == "the file's weights" and reference.first_divergence is None and not model._quantized
    rest = list(each)
    assert [title for title, _ in rest] == ["Q8_0", "Q4_0"]
    assert all(len(answer.ids) == 4 for _, answer in rest)
    # a bad name is refused before any answer
    with pytest.raises(UnknownFormatError):
        next(chat_study.answer_each("The capital of France is", ["q4_zero"], model=model))
