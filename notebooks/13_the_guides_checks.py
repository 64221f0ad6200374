import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="13 · The guide's checks, with mlx-lm itself",
)


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.device import guide_checks, predicates, verify
    from lab.study import chat_study, kv_study, shipped_gguf
    from lab.teach import course, guide_page, kept
    from lab.text import shown

    return (
        chat_study,
        course,
        guide_checks,
        guide_page,
        kept,
        kv_study,
        mo,
        predicates,
        shipped_gguf,
        shown,
        verify,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 13 · The guide's checks, with mlx-lm itself

    Notebook 12 ran Gemma 3 270M in the lab's own numpy code. A learner who follows the MLX guide
    will not: they will load a model with **mlx-lm**, quantize it with `nn.quantize` or
    `mlx_lm.convert`, and check it with the guide's verification recipe (§10). This page runs that
    recipe as the guide writes it, with mlx-lm's own model code, on the same model.

    The bridge takes the file's weights, decoded to float32, into mlx-lm's `gemma3_text` model.
    Two details decide whether it answers as llama.cpp does. The file stores each norm weight as
    1 + w, and mlx-lm adds the one itself, so 1 is taken off. And Gemma's output layer is its token
    embedding: the file has no output tensor, so mlx-lm ties the two. With that, mlx-lm gives
    llama.cpp's greedy tokens on all three prompts, token for token (tests/oracles).

    The four checks, each on every mode this page runs:

    1. **greedy token ids** against the unquantized model, with the first token that differs;
    2. **logits** at every position: the largest and mean difference, and where the largest falls on
       the guide's bands (about 0.3 to 1.3 is quantization noise, 3.3 to 17.8 is corruption);
    3. **one-shot against chunked prefill** on the same model, which a kernel bug tells apart;
    4. **two sentinels** in MLX's memory pool, to find output rows a kernel never wrote.
    """)
    return


@app.cell(hide_code=True)
def _(guide_page, predicates, shipped_gguf):
    chat_missing = None
    try:
        shipped_gguf.model_file()
    except shipped_gguf.RealFileUnavailableError as _error:
        chat_missing = f"{type(_error).__name__}: {_error}"
    # the external check's three modes, unless $LAB_GUIDE_MODES names others (the test suite's run)
    guide_modes = guide_page.guide_modes()
    layers = predicates.linear_layers() if chat_missing is None else {}
    return chat_missing, guide_modes, layers


@app.cell(hide_code=True)
def _(chat_missing, chat_study, guide_checks, guide_modes, mo, shown):
    mo.stop(
        chat_missing is not None,
        mo.callout(mo.md(f"**The chat model is not installed here.** {shown(chat_missing)}"), kind="warn"),
    )
    # The bar goes when the work is done. Every result is kept in the result cache, so opening this
    # page again reads them back in milliseconds; a cold mode takes about 40 s on two cores.
    with mo.status.progress_bar(
        total=len(guide_modes) + 2, title="The guide's checks with mlx-lm", remove_on_exit=True
    ) as _bar:
        _bar.update(subtitle="the unquantized model's answers")
        reference = guide_checks.reference_run()
        checks = []
        for _name in guide_modes:
            _bar.update(subtitle=f"{_name}: quantized as mlx-lm quantizes it, then the four checks")
            checks.append(guide_checks.mode_checks(_name))
        _bar.update(subtitle="the lab's own numpy runs of the same modes (notebook 12's study)")
        study = chat_study.run_study(guide_modes, cache=True)
    return checks, reference, study


@app.cell(hide_code=True)
def _(checks, guide_page, layers, mo):
    mo.vstack(
        [
            mo.md(
                """
                ## What mlx-lm quantizes

                mlx-lm's default predicate quantizes every Linear whose rows the group divides
                **and the token embedding**, which on Gemma is also the output layer: each
                next-token score is a dot product with a quantized row. The lab's own study
                (notebook 12) leaves the embedding in float32, so the two quantize different
                things at the same bits per weight. The second column is the accounting of
                lab.study.accounting; the third is read off the arrays mlx-lm holds.
                """
            ),
            mo.md(guide_page.quantized_table(checks, layers)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(checks, guide_page, mo, reference):
    mo.vstack(
        [
            mo.md(
                """
                ## Check 1: greedy token ids

                Twenty greedy tokens after each prompt, against the unquantized model's. The guide
                reads a departure in the first six tokens as a red flag: those tokens are usually
                decided by a wide margin, so a change there points to something structural.
                """
            ),
            mo.md(guide_page.greedy_table(reference, checks)),
            mo.md(guide_page.greedy_readings(reference)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(checks, guide_modes):
    from widgets.choice import Control, PrecomputedChoice

    # Every mode's answers are computed for the static page, so the menu works there too.
    mode_choice = PrecomputedChoice("guide-answers", [Control("mode", "mode", list(guide_modes), guide_modes[0])])
    checks_by_name = {_checked.name: _checked for _checked in checks}
    return checks_by_name, mode_choice


@app.cell(hide_code=True)
def _(checks_by_name, guide_page, mo, mode_choice, reference):
    def _view(name):
        return mo.md(guide_page.answers_view(reference, checks_by_name[name]))

    mo.vstack(
        [
            mo.md(
                "### The answers themselves\n\nPick a mode to read its three answers beside the unquantized model's."
            ),
            mo.ui.anywidget(mode_choice),
            mo.Html(mode_choice.outcomes(["mode"], _view)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(checks, guide_page, mo):
    mo.vstack(
        [
            mo.md(
                """
                ## Check 2: logits, on the guide's bands

                Every position of each prompt, quantized against unquantized. The KL divergence and
                same-top share come from the same logits, as notebook 12 measures them on its
                passage.
                """
            ),
            mo.md(guide_page.logits_table(checks)),
            mo.md(guide_page.bands_table(checks)),
            mo.md(guide_page.bands_reading(checks)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(checks, guide_page, mo):
    mo.vstack(
        [
            mo.md(
                """
                ## Checks 3 and 4: the kernels themselves

                Check 3 prefills the chat prompt in one pass and in pieces through mlx-lm's prompt
                cache; the last position's logits must agree. Check 4 fills MLX's memory pool with one
                sentinel, runs a quantized product, repeats with another sentinel, and counts the
                output rows that changed: rows the kernel never wrote.
                """
            ),
            mo.md(guide_page.kernels_table(checks)),
            mo.md(guide_page.sentinel_note()),
        ]
    )
    return


@app.cell(hide_code=True)
def _(chat_study, checks, guide_checks, guide_page, mo, reference, study):
    _rows = guide_checks.three_implementations(
        study, reference, {_checked.name: _checked for _checked in checks}, chat_study.llama_cpp_pinned()
    )
    mo.vstack(
        [
            mo.md(
                """
                ## Three implementations, one table

                The lab's numpy forward pass (notebook 12), mlx-lm's model, and llama.cpp's pinned run
                (tests/data/chat_requant_reference.json, made with llama-cpp-python outside the lab):
                per prompt, where each one's quantized answer leaves its own unquantized answer, and
                where the lab's and mlx-lm's answers part from each other.
                """
            ),
            mo.md(guide_page.implementations_table(_rows)),
            mo.md(guide_page.implementations_reading(_rows)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(guide_modes, guide_page, kv_study, mo, verify):
    _weights = guide_page.kv_weights(guide_modes)
    with mo.status.progress_bar(total=2, title="The KV cache, quantized", remove_on_exit=True) as _bar:
        _bar.update(subtitle="the lab's numpy model")
        _ours = kv_study.run_study(weights=_weights, cache=True)
        _bar.update(subtitle="mlx-lm's model and its QuantizedKVCache")
        _theirs = verify.kv_study(weights=_weights, cache=True)
    kv_rows = kv_study.side_by_side(_ours, _theirs)
    mo.vstack(
        [
            mo.md(
                f"""
                ## The KV cache (§11)

                A long conversation's keys and values can outgrow the weights, so mlx-lm can store
                them quantized (`kv_bits`): MLX's affine codes with a scale and a bias per
                {kv_study.KV_GROUP_SIZE} lanes. Here the same prompts run with a float cache, an
                8-bit one and a 4-bit one, on the float weights and on 4-bit weights, each run
                forced along the float model's greedy path for {_ours.tokens} steps so every KL is
                measured at the same positions; "departs at" is the first step whose most likely
                token differs. The lab's numpy cache quantizes by the same rule, its codes, scales
                and biases equal to `mx.quantize`'s.

                mlx-lm 0.32.2 cannot quantize Gemma's own cache (its sliding-window layers keep a
                `RotatingKVCache`, which it does not quantize), so it is given a plain cache per
                layer, which holds the same keys while a conversation stays within the 512-position
                window, and mlx-lm's own `generate_step` quantizes those.
                """
            ),
            mo.md(guide_page.kv_table(kv_rows)),
            mo.md(guide_page.kv_reading(kv_rows)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(guide_page, kept, mo):
    rules_box = mo.ui.text_area(
        value=guide_page.DEFAULT_RULES,
        label="rows: a pattern, the layers (all, 5 or 0-5) and a format",
        max_length=guide_page.RULES_CHAR_LIMIT,
        rows=8,
        full_width=True,
    )
    rules_kept = kept.KeptOutput()
    return rules_box, rules_kept


@app.cell(hide_code=True)
def _(course, guide_page, kept, layers, mo, rules_box, rules_kept):
    def _draw():
        return kept.Drawn(mo.md(guide_page.predicate_report(rules_box.value, layers)), "the rows before your last edit")

    mo.vstack(
        [
            mo.md(
                """
                ## A predicate of your own, as rows

                `nn.quantize` decides layer by layer through a predicate, a Python function. Here
                you write rows instead, one per line: a **pattern** over mlx-lm's layer paths (`*`
                stands for any part between dots, and a pattern matches the end of a path), the
                **layers** it covers, and a **format**, or `float` to leave them alone. The first
                row that matches a layer decides it. The starting rows give the value and down
                projections of the first and last three layers 8 bits, as mlx-lm's `mixed_4_6`
                recipe does, and the embedding 8 bits. Nothing you type runs: the rows are read as
                data, and the predicate below is text for your own script.
                """
            ),
            mo.Html(
                course.live_only(
                    rules_box,
                    instead=mo.md(
                        "*A page without a server cannot read new rows: the ones below are the starting "
                        "rows. On a computer with the lab, `python3 labctl.py open` lets you edit them.*"
                    ),
                )
            ),
            mo.Html(rules_kept.show(_draw)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Your own model folder

    The same four checks run on any MLX model folder that mlx-lm can load, against a reference folder:

    ```
    python3 labctl.py verify CANDIDATE_FOLDER --reference REFERENCE_FOLDER
    ```

    The lab loads a folder with mlx-lm's `trust_remote_code` off, and refuses, before loading
    anything, a config that names a `model_file`, an unknown `model_type`, or a tokenizer that would
    need remote code.

    ## Try this

    1. Which prompt leaves the unquantized answer first in every mode, and is that departure within
       the guide's red-flag tokens?
    2. Compare check 2's largest |Δ logit| with the lab-and-mlx-lm column of the last table. What
       does quantizing the embedding cost this model?
    3. In the live lab, leave the embedding in float (`model.embed_tokens all float` as the first
       row). How far do the bits per weight rise, and why does one matrix move them so much?
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("13_the_guides_checks.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()
