import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="10 · What four bits do to answers")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.device.model import run_model
    from lab.numbers import format_signed
    from lab.study import behaviour, real_weights
    from lab.teach import charts
    from lab.teach.prepare import FIRST_FORMAT
    from lab.text import code_name

    return (
        FIRST_FORMAT,
        behaviour,
        charts,
        code_name,
        format_signed,
        mo,
        real_weights,
        run_model,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 10 · What four bits do to answers

    Notebook 2 ended on a single row: four weights, one input, and an output error that changed
    sign when the input changed. Δy = Σ(ŵᵢ − wᵢ)xᵢ. The weights' own error told you little about
    the answer's error, because the input decides which weight errors are amplified and which
    cancel. One attractive output proves nothing; what counts is the task and the inputs the model
    really sees.

    This notebook takes that lesson to a whole model. all-MiniLM-L6-v2 turns a sentence into 384
    numbers, and sentences that mean the same thing land close together. We quantize its 36
    encoder Linears with every format in the lab and ask three questions:

    1. **Do sentences still look alike?** Cosine similarities before and after.
    2. **Does it still find the right answer?** A small retrieval task written for the lab:
       64 questions, each with one right passage among 63 distractors.
    3. **Which layers does it hurt, and why?** Each Linear's weight error beside its output error
       on real activations: the four-weight lesson, 36 times over.
    """)
    return


@app.cell(hide_code=True)
def _(mo, real_weights):
    mo.stop(
        not real_weights.real_model_available(),
        mo.md(f"**The real model is not installed.** {real_weights.INSTALL_HINT}"),
    )
    return


@app.cell(hide_code=True)
def _(behaviour, mo):
    _names = behaviour.study_formats()
    # The bar goes when the work is done: the table below is the result. cache=True: each
    # format's embeddings are kept on disk (lab.study.cache), so opening this page again reads
    # them back instead of quantizing and running the model once per format.
    with mo.status.progress_bar(
        total=len(_names), title="Embedding the retrieval task with every format", remove_on_exit=True
    ) as _bar:
        study = behaviour.retrieval_study(progress=lambda done, total, name: _bar.update(subtitle=name), cache=True)
    return (study,)


@app.cell(hide_code=True)
def _(FIRST_FORMAT, mo, study):
    format_choice = mo.ui.dropdown(
        options={row["title"]: row["format"] for row in study if row["format"] != "fp32"},
        value=next(row["title"] for row in study if row["format"] == FIRST_FORMAT),
        label="format",
    )
    format_choice
    return (format_choice,)


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## 1 · Do sentences still look alike?

    Ten sentences, five topics, two phrasings each. In float32 each pair is a bright square on the
    diagonal of the cosine matrix. A format that damages the model blurs the squares and lifts the
    dark background: unrelated sentences start to look alike. Pick a format above.
    """)
    return


@app.cell(hide_code=True)
def _(behaviour, charts, format_choice, study):
    chosen = format_choice.value
    chosen_title = next(row["title"] for row in study if row["format"] == chosen)
    similarity = behaviour.format_similarity(chosen, cache=True)
    _labels = [sentence[:28] + "…" for sentence in behaviour.SIMILARITY_SENTENCES]
    charts.similarity_heatmaps_chart(similarity.fp32, similarity.quantized, _labels, chosen_title)
    return chosen, chosen_title, similarity


@app.cell(hide_code=True)
def _(behaviour, charts, chosen_title, similarity):
    charts.per_sentence_cosine_chart(similarity.per_sentence, list(behaviour.SIMILARITY_SENTENCES), chosen_title)
    return


@app.cell(hide_code=True)
def _(format_signed, mo, study):
    _rows = "\n".join(
        f"| {row['title']} | {row['bits_per_weight']:g} | {row['top1']:.3f} | {row['mrr']:.3f} "
        f"| {format_signed(row['median_margin'], 3)} | {row['mean_cosine_to_fp32']:.4f} | {row['fallbacks']} of 36 |"
        for row in study
    )
    mo.md(
        "## 2 · Does it still find the right answer?\n\n"
        "Each question is embedded, each passage is embedded, and the passage with the highest cosine "
        "is the model's answer. **Top-1** is the share of questions answered with the right passage; "
        "**MRR** (mean reciprocal rank) also gives half credit for second place, a third for third, "
        "and so on. The **margin** of a question is the right passage's cosine minus the best "
        "distractor's: above 0 it is answered right, and the larger it is, the safer the answer. "
        "*Kept float32* counts the Linears a format could not hold (a row length that is "
        "not a multiple of its block), which stay in float32 as a converter would leave them.\n\n"
        "| format | bits/weight | top-1 | MRR | median margin | mean cosine to float32 | kept float32 |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n" + _rows
    )
    return


@app.cell(hide_code=True)
def _(charts, study):
    charts.retrieval_quality_chart(study)
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    Read the chart from the right. At eight bits nothing moves. At four bits the embeddings do move
    (the cosine column falls visibly below 1) and yet the answers hold: a
    retrieval task only needs the right passage to stay *first*, not to stay put. The cosine to
    float32 falls long before top-1 does, which is why a single summary number is a poor guide:
    measure the task.
    """)
    return


@app.cell(hide_code=True)
def _(behaviour, mo, study):
    _fp32 = next(row for row in study if row["format"] == "fp32")
    _losing = behaviour.formats_that_lose_answers(study)
    _named = ", ".join(f"{row['title']} ({row['bits_per_weight']:g} bits, top-1 {row['top1']:.3f})" for row in _losing)
    mo.md(
        f"**Plainly: this task cannot tell the 4-bit formats apart.** {len(study) - 1 - len(_losing)} of "
        f"the {len(study) - 1} formats answer as many questions right as float32 does (top-1 "
        f"{_fp32['top1']:.3f}). "
        + (f"Those that lose answers: {_named}. " if _losing else "None loses any. ")
        + f"Float32's median margin is {_fp32['median_margin']:.3f}: four-bit noise moves the margins "
        "and the cosines without lifting a distractor above the right passage. A right-or-wrong task "
        "parts formats only where its answers sit close to a decision, and there it also flips on "
        "chance. Notebook 12 grades every next-token probability of a chat model instead, and there "
        "the 4-bit formats part."
    )
    return


@app.cell(hide_code=True)
def _(behaviour, chosen):
    answers = behaviour.retrieval_answers(chosen, cache=True)
    return (answers,)


@app.cell(hide_code=True)
def _(answers, format_signed, mo):
    def _listed(indices, heading):
        if not len(indices):
            return ""
        _records = answers.records()
        _lines = "\n".join(f"- *{_records[i]['question']}* answered with: {_records[i]['picked']}" for i in indices)
        return f"\n\n**{heading}**\n\n{_lines}"

    mo.md(
        "### Behind top-1: how close each answer was\n\n"
        "Top-1 only asks whether the right passage came first. The margin says by how much, so it "
        "shows damage long before an answer flips. "
        f"With **{answers.format_title}**, {answers.closer} of {len(answers.questions)} questions came "
        f"closer to a wrong answer, and the median change of a question's margin was "
        f"{format_signed(answers.median_shift, 3, plus=True)}; "
        f"{len(answers.lost)} answers were lost and {len(answers.gained)} gained. "
        "Pick another format at the top of the page and watch the cloud sink below the diagonal."
        + _listed(answers.lost, f"Right in float32, wrong in {answers.format_title}")
        + _listed(answers.gained, f"Wrong in float32, right in {answers.format_title}")
    )
    return


@app.cell(hide_code=True)
def _(answers, charts):
    charts.retrieval_margins_chart(answers.records(), answers.format_title)
    return


@app.cell(hide_code=True)
def _(behaviour, chosen, mo):
    # Cached per format in lab.study.behaviour, in memory and (cache=True) on disk: choosing a
    # format again recomputes nothing, and neither does opening this page again.
    with mo.status.progress_bar(
        total=36, title="Weight error and output error, Linear by Linear", remove_on_exit=True
    ) as _bar:
        layers = behaviour.layer_study(
            chosen, progress=lambda done, total, name: _bar.update(subtitle=name), cache=True
        )
    return (layers,)


@app.cell(hide_code=True)
def _(code_name, format_signed, layers, mo):
    _moved = "\n".join(
        f"| {code_name(row['layer'].removeprefix('encoder.'))} | {row['weight_error']:.4f} | {int(row['weight_rank'])} "
        f"| {row['output_error']:.4f} | {int(row['output_rank'])} | {row['peak_to_median']:.1f} |"
        for row in layers.records()
        if row["disagreeing"]
    )
    _kept = f" {len(layers.kept_float)} Linears stayed float32 and are left out." if layers.kept_float else ""
    mo.md(
        "## 3 · Which layers does it hurt, and why?\n\n"
        f"Every Linear sees the same real inputs: the float32 model's activations on the 64 passages, "
        f"{layers.tokens} tokens. For each one the lab measures the weight error ‖Ŵ − W‖/‖W‖ and the "
        "output error ‖(Ŵ − W)x‖/‖Wx‖, ranks the layers by each (1 = worst), and compares the two "
        f"rankings.{_kept}\n\n"
        f"**Spearman's rank correlation between them: {format_signed(layers.spearman, 2)}.** "
        "A value near 1 would mean weight error predicts output error; here it does not. The layers "
        "whose rank moves most:\n\n"
        "| Linear | weight error | weight rank | output error | output rank | peak / median channel RMS |\n"
        "|---|---:|---:|---:|---:|---:|\n" + _moved
    )
    return


@app.cell(hide_code=True)
def _(charts, chosen_title, layers):
    charts.layer_errors_chart(layers.records(), chosen_title)
    return


@app.cell(hide_code=True)
def _(charts, layers, mo):
    outliers = layers.outliers[layers.disagreeing[0]]
    _channels = ", ".join(f"{channel} (RMS {outliers.rms[channel]:.2f})" for channel in outliers.top_channels.tolist())
    _layer = next(row for row in layers.records() if row["layer"] == outliers.layer)
    _carry = "error than of its signal" if outliers.error_share > outliers.signal_share else "signal than of its error"
    _side = "below" if _layer["output_error"] < _layer["weight_error"] else "above"
    mo.vstack(
        [
            mo.md(
                f"### The inputs of `{outliers.layer.removeprefix('encoder.')}`\n\n"
                "Each bar is one input channel's activation RMS over every token. A few channels are "
                f"far larger than the rest: the largest is {outliers.peak_to_median:.1f} × the median. "
                f"Top channels: {_channels}.\n\n"
                f"These {outliers.top_channels.size} channels are {outliers.channel_share:.1%} of the "
                f"inputs. Their terms alone make {outliers.error_share:.1%} of ‖ΔW·x‖² and "
                f"{outliers.signal_share:.1%} of ‖W·x‖²: they carry more of this layer's {_carry}. "
                f"Its relative output error, {_layer['output_error']:.4f}, is {_side} its weight error, "
                f"{_layer['weight_error']:.4f}.\n\n"
                "A few large channels do not settle that on their own. The output error weighs each "
                "weight's error by every input that meets it, so what decides is how ΔW lines up with all "
                "of the inputs: the input, not the weights alone."
            ),
            charts.channel_outliers_chart(outliers.rms, outliers.top_channels, outliers.layer),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## On the device: the same bytes through MLX's kernels

    Everything above ran in the lab's numpy. Here the same forward pass runs again on every MLX
    device present: each Linear the format quantized is computed by MLX's `mx.quantized_matmul` from
    the lab's bytes (Q4_K through its affine repack), and each one it left in float32 by `mx.matmul`.
    Per Linear the lab's product on the very same input is set beside MLX's, against the float32
    accumulation bound 2·γ(K+3)·Σ|xₖ|·mₖ derived in `lab/device/model.py`, where
    γ(n) = n·u / (1 − n·u) and u = 2⁻²⁴: two correct float32 sums of K products may differ by that
    much.
    """)
    return


@app.cell(hide_code=True)
def _(mo, run_model):
    @mo.cache
    def device_report(name):
        return run_model(name, cache=True)

    return (device_report,)


@app.cell(hide_code=True)
def _(chosen, device_report, mo):
    with mo.status.progress_bar(total=1, title="Running the model's Linears on MLX", remove_on_exit=True) as _bar:
        device = device_report(chosen)
        _bar.update()
    mo.md(device.to_markdown())
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Which is the lowest bit width where top-1 still matches float32? *(Check the table: the
       answers hold down to 3.5 bits here and break at 2.5.)* Top-1 cannot tell the 4-bit formats
       apart; which column can? *(The median margin: pick them one by one and watch the cloud.)*
    2. Compare MXFP4 and MLX affine 4-bit g128: the same 4.25 bits per weight. Which keeps the
       embeddings closer to float32? *(Check the cosine column: nearly a tie.)*
    3. Pick Q4_K. Why does it look almost perfect? *(Check "kept float32": its 256-weight blocks fit
       only the 1536-long rows, so 30 of 36 Linears never left float32.)*
    4. In the layer chart, which kind of Linear tends to sit lowest on output error for its weight
       error? *(Check the FFN output layers, `output.dense`, and their peak / median column.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("10_what_four_bits_do_to_answers.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()
