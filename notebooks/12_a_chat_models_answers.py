import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="12 · What four bits do to a chat model's answers",
)


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.errors import LabError
    from lab.formats import FORMATS
    from lab.study import chat_study, shipped_gguf
    from lab.teach import charts, chat_page, course
    from lab.teach.charts.chat import front_chart
    from lab.text import shown, shown_lines

    return (
        FORMATS,
        LabError,
        charts,
        chat_page,
        chat_study,
        course,
        front_chart,
        mo,
        shipped_gguf,
        shown,
        shown_lines,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 12 · What four bits do to a chat model's answers

    Notebook 10 asked an embedding model to find passages, and every 4-bit format found them about
    as well as float32 did. A chat model is harsher: it picks one token, then builds on it, so a
    small change in one step's probabilities can send the whole answer somewhere else.

    The model is Gemma 3 270M, the real file of notebook 6, run by the lab itself in numpy: its
    architecture read from the file's metadata, its tokenizer from the file's own vocabulary. The
    **reference** is the file's own weights decoded to float32, which is a Q4_K_M file, not the
    original model: the file no longer holds the original. Each format then re-quantizes every
    Linear of the 18 blocks from that reference, and we measure what llama.cpp's perplexity tool
    measures:

    * **KL divergence**: how far each next-token distribution moved, averaged over a passage;
    * **same top token**: how often the most likely next token is still the reference's;
    * **Δ NLL**: how much less likely the passage's own words became (perplexity is e^NLL);
    * and, per prompt, the **greedy answer**, with the token where it first departs.
    """)
    return


@app.cell(hide_code=True)
def _(chat_study, shipped_gguf):
    chat_missing = None
    try:
        shipped_gguf.model_file()
    except shipped_gguf.RealFileUnavailableError as _error:
        chat_missing = f"{type(_error).__name__}: {_error}"
    # every format in the registry, unless $LAB_CHAT_FORMATS names a few (the test suite's quick run)
    study_formats = chat_study.study_formats()
    return chat_missing, study_formats


@app.cell(hide_code=True)
def _(chat_missing, chat_study, mo, shown, study_formats):
    mo.stop(
        chat_missing is not None,
        mo.callout(mo.md(f"**The chat model is not installed here.** {shown(chat_missing)}"), kind="warn"),
    )
    _names = list(study_formats)
    # The bar goes when the work is done. cache=True: each format's results are kept on disk, so
    # opening this page again reads them back without decoding a weight.
    with mo.status.progress_bar(
        total=len(_names) + 1, title="Every format on Gemma 3 270M", remove_on_exit=True
    ) as _bar:
        study = chat_study.run_study(_names, cache=True, progress=lambda done, total, name: _bar.update(subtitle=name))
    return (study,)


@app.cell(hide_code=True)
def _(chat_page, mo, study):
    _table = chat_page.study_table(study)
    # a table is a Markdown block of its own: inside an indented f-string only its first line
    # would be indented, and the dedented text would show it as code
    mo.vstack(
        [
            mo.md(
                f"""
                ## The table llama.cpp's README prints

                Over the passage's {study.passage_tokens} tokens, against the file's own
                weights. KL divergence is in nats per token. "Linears refitted" counts the Linears whose
                rows a format's blocks do not divide: a K-quant stores them in llama.cpp's fallback type
                (Q5_0 for Q4_K, as the file itself does), and any other format leaves them with the
                file's weights.
                """
            ),
            mo.md(_table),
        ]
    )
    return


@app.cell(hide_code=True)
def _(front_chart, mo, study):
    mo.vstack(
        [
            mo.md(
                """
                ## Cost against damage

                Each point is a format: its storage per weight against how far it moved the model's
                next-token distributions. The line joins the formats no other beats on both, each
                numbered along it (the key is under the title); a circle is on the front, a square
                off it, and hovering over a point names it.
                """
            ),
            front_chart(
                study.format_rows(),
                "Gemma 3 270M",
                error="kl_divergence",
                error_words="KL divergence",
                note="Mean KL divergence per token against the file's weights, in nats.",
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _(charts, chat_page, chat_study, mo, shown_lines, study):
    _sections = []
    for _index, _prompt in enumerate(chat_study.PROMPTS):
        _answers = [
            (study.reference.title, study.reference.continuations[_index]),
            *((_result.title, _result.continuations[_index]) for _result in study.formats),
        ]
        _sections.append(f"### Prompt {_index + 1}: {shown_lines(_prompt)}\n\n" + chat_page.answers_table(_answers))
    mo.vstack(
        [
            mo.md(
                "## The answers\n\nGreedy decoding, "
                f"{chat_study.GREEDY_TOKENS} tokens. The part in **⟨bold brackets⟩** is where a format's "
                "answer first leaves the reference's. An answer keeps the model's line breaks; any other "
                "character that would not show (a tab, a carriage return) is spelt out, as `\\t` or "
                "`\\r`.\n\n" + "\n\n".join(_sections)
            ),
            charts.divergence_chart(study.divergences(), chat_study.GREEDY_TOKENS, list(chat_study.PROMPTS)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(LabError, chat_page, chat_study, course, mo, shown, study):
    try:
        _pinned = chat_study.llama_cpp_pinned()
    except LabError as _error:
        mo.stop(True, mo.callout(mo.md(f"**llama.cpp's pinned run was not shown.** {shown(_error)}"), kind="warn"))
    mo.stop(
        _pinned is None,
        mo.md("*llama.cpp's pinned run (tests/data/chat_requant_reference.json) is not in this checkout.*"),
    )
    _rows = chat_study.llama_cpp_rows(study, _pinned)
    mo.stop(
        not _rows,
        mo.md("*This page studies none of the types llama.cpp re-quantized: Q8_0, Q6_K, Q4_0 and IQ4_NL.*"),
    )

    def _answers(row):
        return ", ".join(
            f"{_index + 1}: all the same" if _part is None else f"{_index + 1}: the first {_part} the same"
            for _index, _part in enumerate(row.answers_part)
        )

    _table = chat_page.llama_cpp_table(_rows)
    _agreement = course.table(
        ["format", "llama.cpp stored its Linears as", "the lab refitted", "llama.cpp's answers against the lab's"],
        [
            [
                _row.title,
                ", ".join(f"{_n} {_kind}" for _kind, _n in _row.linear_types.items()),
                str(_row.lab_refitted),
                _answers(_row),
            ]
            for _row in _rows
        ],
    )
    mo.vstack(
        [
            mo.md(
                """
                ## Beside llama.cpp's own re-quantizations

                llama.cpp was given the same float32 weights and asked to re-quantize every Linear to
                each of these types itself (`llama_model_quantize`, no importance matrix, the embedding
                left in float32), then to read the same passage and answer the same prompts. Its run is
                pinned in the repository, made by `tests/data/make_chat_requant_reference.py`; nothing
                here runs it.
                """
            ),
            mo.md(_table),
            mo.md(
                """
                llama.cpp's divergence is the larger at 8 and 6 bits: its kernels round every
                activation to 8 bits before each dot product, and that rounding is most of what remains
                when the weights are nearly exact. At 4 bits the weights' error dominates, and the two
                agree.

                Where a type's blocks do not divide a row of 640, llama.cpp stores the Linear in a
                fallback type; the lab's study refits the same Linears, in the same type. The answers
                are compared token by token, prompt by prompt ("2: the first 7 the same": prompt 2's
                answers part at their eighth token).
                """
            ),
            mo.md(_agreement),
        ]
    )
    return


@app.cell(hide_code=True)
def _(FORMATS, chat_study, course, mo):
    prompt_box = mo.ui.text_area(
        placeholder="Type a prompt of your own",
        label="your prompt",
        full_width=True,
        max_length=chat_study.PROMPT_CHAR_LIMIT,
    )
    prompt_formats = mo.ui.multiselect(
        options={fmt.title: name for name, fmt in FORMATS.items()},
        value=[FORMATS[_name].title for _name in chat_study.PROMPT_FORMATS],
        label="formats",
    )
    prompt_run = mo.ui.run_button(label="answer it")
    mo.vstack(
        [
            mo.md(
                "## Your own prompt\n\nThe model answers greedily, once with the file's weights and once "
                "per format you pick, in the order you pick them. The prompt is checked as you type, by the "
                "file's tokenizer alone, so one the model cannot read is refused before anything runs."
            ),
            mo.Html(
                course.live_only(
                    mo.vstack([prompt_box, prompt_formats, prompt_run]),
                    instead=mo.md(
                        "A prompt of your own runs the chat model, and a page without a server cannot: "
                        "on a computer with the lab, `python3 labctl.py open` answers it here. The answers "
                        "above were computed when this page was built."
                    ),
                )
            ),
        ]
    )
    return prompt_box, prompt_formats, prompt_run


@app.cell(hide_code=True)
def _(LabError, chat_page, course, mo, prompt_box, prompt_formats, shown):
    # under the box as the learner types: the tokenizer alone reads the prompt (no model is loaded),
    # so an empty or over-long prompt is refused here, and the cost follows the formats picked
    _cost = mo.md(chat_page.prompt_cost(len(prompt_formats.value)))
    if not prompt_box.value.strip():
        _reading = mo.md("*Type a prompt and press **answer it**.*")
    else:
        try:
            _reading = mo.md(chat_page.prompt_reading(prompt_box.value))
        except LabError as _error:
            _reading = mo.callout(mo.md(f"**This prompt cannot be run.** {shown(_error)}"), kind="warn")
    mo.Html(course.live_only(mo.vstack([_reading, _cost])))
    return


@app.cell(hide_code=True)
def _(
    LabError,
    chat_page,
    chat_study,
    course,
    mo,
    prompt_box,
    prompt_formats,
    prompt_run,
    shown,
):
    mo.stop(not prompt_run.value)
    try:
        # the tokenizer alone: a prompt the model cannot read is refused before the model loads
        chat_study.check_prompt(prompt_box.value)
    except LabError as _error:
        mo.stop(True, mo.callout(mo.md(f"**The prompt was not run.** {shown(_error)}"), kind="warn"))
    _chosen = list(prompt_formats.value)
    _answers = []
    # the bar from the first second: loading the model (the first prompt only), then a step an
    # answer; each answer shows under the bar as soon as it is ready
    with mo.status.progress_bar(
        total=len(_chosen) + 2,
        title="Answering your prompt",
        subtitle=chat_page.prompt_step(_chosen, 0),
        remove_on_exit=True,
    ) as _bar:
        _model = chat_study.prompt_model()
        _bar.update(subtitle=chat_page.prompt_step(_chosen, 1))
        for _title, _answer in chat_study.answer_each(prompt_box.value, _chosen, model=_model):
            _answers.append((_title, _answer))
            mo.output.replace_at_index(mo.Html(course.readout(mo.md(chat_page.answers_table(_answers)))), 1)
            _bar.update(subtitle=chat_page.prompt_step(_chosen, len(_answers) + 1))
    mo.Html(course.readout(mo.md(chat_page.answers_table(_answers))))
    return


@app.cell(hide_code=True)
def _(FORMATS, course, mo):
    from lab.device import chat as device_chat

    device_format = mo.ui.dropdown(
        options={FORMATS[name].title: name for name in device_chat.device_formats()},
        value=FORMATS["mxfp4"].title,
        label="format",
    )
    device_run = mo.ui.run_button(label="run it on MLX")
    mo.vstack(
        [
            mo.md(
                """
                ## The same bytes on a device

                The MLX guide's one must-do check: answer fixed prompts greedily with the quantized
                model and compare the token ids with the unquantized path's. Here every Linear of the
                18 blocks runs through MLX's own `mx.quantized_matmul`, on the very bytes the lab
                decoded, and the lab's float32 numpy of the same bytes is the path compared against.
                Each Linear's output is also held to the float32 accumulation bound of its inputs.
                Every MLX device present runs it (the CPU here, a GPU where there is one); it takes
                about a minute a device.
                """
            ),
            mo.Html(
                course.live_only(
                    mo.vstack([device_format, device_run]),
                    instead=mo.md(
                        "This check runs the model on MLX, which a page without a server cannot: on a "
                        "computer with the lab, `python3 labctl.py open` runs it here."
                    ),
                )
            ),
        ]
    )
    return device_chat, device_format, device_run


@app.cell(hide_code=True)
def _(course, device_chat, device_format, device_run, mo):
    mo.stop(not device_run.value, mo.Html(course.live_only(mo.md("*Pick a format and press **run it on MLX**.*"))))
    with mo.status.spinner(title="Every Linear through mx.quantized_matmul"):
        _report = device_chat.run_chat(device_format.value, cache=True)
    mo.Html(course.readout(mo.md(_report.to_markdown())))
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=12))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Why llama.cpp's own numbers differ a little

    llama.cpp runs the same file with quantized kernels that also round the *activations* to 8 bits
    before each dot product; the lab multiplies decoded float32 weights by float32 activations. On a
    float32 copy of the file the two agree to within 0.02 on every logit the oracle pinned (the 50
    most likely tokens of each prompt) and give the same 20 greedy tokens
    (tests/oracles/test_chat_oracle.py). On the file as shipped, llama.cpp's logits sit 0.4 to 1.4
    away from the lab's: that is its activation rounding, not a different model.

    ## Try this

    1. Which format at about 4.5 bits moves the distributions least? Is it the one with the fewest
       bits lost in the table of notebook 11?
    2. Find a format whose same-top-token rate is above 90 % yet whose answer to prompt 1 departs
       within a few tokens. What does that say about judging a format by one number?
    3. Prompts 1 and 2 stop mid-sentence. For how many tokens does Q4_0 finish them the way the
       reference does, and is what it writes after that still true? In the live lab, type a
       prompt of your own that stops mid-sentence and ask the same.
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("12_a_chat_models_answers.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()
