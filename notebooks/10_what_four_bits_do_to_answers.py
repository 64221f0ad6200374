import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="10 · What four bits do to answers")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.device.model import run_model
    from lab.numbers import format_signed
    from lab.study import accounting, behaviour, real_weights
    from lab.teach import charts
    from lab.teach.prepare import COMPARED_FORMATS, FIRST_FORMAT
    from lab.text import code_name

    return (
        COMPARED_FORMATS,
        FIRST_FORMAT,
        accounting,
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
def _(COMPARED_FORMATS, FIRST_FORMAT, mo, study):
    from widgets.choice import Control, PrecomputedChoice

    # Each format this menu offers has its outcome all the way down the page, so the menu works on
    # the static page too (lab.teach.prepare fills the cache for them). A live page computes only
    # the format shown, and each other one when it is picked (widgets/choice.py): all nine made
    # its first render wait 9.8 s.
    title_of = {row["format"]: row["title"] for row in study}
    format_choice = PrecomputedChoice(
        "answers", [Control("format", "format", [title_of[name] for name in COMPARED_FORMATS], title_of[FIRST_FORMAT])]
    )
    compared = {title_of[name]: name for name in COMPARED_FORMATS}  # menu option -> format name
    chosen = FIRST_FORMAT  # what the page shows first
    format_menu = mo.ui.anywidget(format_choice)
    return chosen, compared, format_menu


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
def _(behaviour, charts, chosen, compared, format_menu, mo):
    similarity = behaviour.format_similarity(chosen, cache=True)  # the one shown first


    def _similarity(title):
        _similarity = behaviour.format_similarity(compared[title], cache=True)
        _labels = [sentence[:28] + "…" for sentence in behaviour.SIMILARITY_SENTENCES]
        return mo.vstack(
            [
                charts.similarity_heatmaps_chart(_similarity.fp32, _similarity.quantized, _labels, title),
                charts.per_sentence_cosine_chart(_similarity.per_sentence, list(behaviour.SIMILARITY_SENTENCES), title),
            ]
        )


    mo.vstack([format_menu, mo.Html(format_menu.outcomes(["format"], _similarity))])
    return


@app.cell(hide_code=True)
def _(accounting, format_signed, mo, study):
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
        "**Bits per weight** are what each format stores for this model. Its weights are float32, and "
        "MLX's affine mode keeps each group's scale and bias in the weights' own dtype: 4-bit g128 "
        f"stores {accounting.bits_per_weight('affine4_g128', accounting.FLOAT32):g} bits per weight here, "
        "as notebook 9 measures. The other formats fix their scales' type, so the model's dtype does not "
        "change theirs.\n\n"
        "| format | bits/weight (float32 scales) | top-1 | MRR | median margin | mean cosine to float32 | kept float32 |\n"
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
def _(behaviour, charts, chosen, compared, format_menu, format_signed, mo):
    answers = behaviour.retrieval_answers(chosen, cache=True)  # the margins shown first


    def _answers(title):
        _shown = behaviour.retrieval_answers(compared[title], cache=True)

        def _listed(indices, heading):
            if not len(indices):
                return ""
            _records = _shown.records()
            _lines = "\n".join(f"- *{_records[i]['question']}* answered with: {_records[i]['picked']}" for i in indices)
            return f"\n\n**{heading}**\n\n{_lines}"

        return mo.vstack(
            [
                mo.md(
                    f"With **{_shown.format_title}**, {_shown.closer} of {len(_shown.questions)} questions came "
                    f"closer to a wrong answer, and the median change of a question's margin was "
                    f"{format_signed(_shown.median_shift, 3, plus=True)}; "
                    f"{len(_shown.lost)} answers were lost and {len(_shown.gained)} gained. "
                    "Pick another format at the top of the page and watch the cloud sink below the diagonal."
                    + _listed(_shown.lost, f"Right in float32, wrong in {_shown.format_title}")
                    + _listed(_shown.gained, f"Wrong in float32, right in {_shown.format_title}")
                ),
                charts.retrieval_margins_chart(_shown.records(), _shown.format_title),
            ]
        )


    mo.vstack(
        [
            mo.md(
                "### Behind top-1: how close each answer was\n\n"
                "Top-1 only asks whether the right passage came first. The margin says by how much, so it "
                "shows damage long before an answer flips."
            ),
            mo.Html(format_menu.outcomes(["format"], _answers)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(behaviour, chosen, mo):
    # Cached per format in lab.study.behaviour, in memory and (cache=True) on disk: opening this
    # page again recomputes nothing, and `labctl.py open` computes it first (lab.teach.prepare).
    # Without the cache it takes a while, so the page says what it is doing.
    with mo.status.spinner(title="Weight error and output error, Linear by Linear", remove_on_exit=True):
        layers = behaviour.layer_study(chosen, cache=True)  # the study shown first
    return (layers,)


@app.cell(hide_code=True)
def _(behaviour, charts, code_name, compared, format_menu, format_signed, mo):
    def _layers(title):
        layers = behaviour.layer_study(compared[title], cache=True)
        _moved = "\n".join(
            f"| {code_name(row['layer'].removeprefix('encoder.'))} | {row['weight_error']:.4f} | {int(row['weight_rank'])} "
            f"| {row['output_error']:.4f} | {int(row['output_rank'])} | {row['peak_to_median']:.1f} |"
            for row in layers.records()
            if row["disagreeing"]
        )
        _kept = f" {len(layers.kept_float)} Linears stayed float32 and are left out." if layers.kept_float else ""
        return mo.vstack(
            [
                mo.md(
                    f"**{title}.** Every Linear sees the same real inputs: the float32 model's activations on the 64 passages, "
                    f"{layers.tokens} tokens. For each one the lab measures the weight error ‖Ŵ − W‖/‖W‖ and the "
                    "output error ‖(Ŵ − W)x‖/‖Wx‖, ranks the layers by each (1 = worst), and compares the two "
                    f"rankings.{_kept}\n\n"
                    f"**Spearman's rank correlation between them: {format_signed(layers.spearman, 2)}.** "
                    "A value near 1 would mean weight error predicts output error; here it does not. The layers "
                    "whose rank moves most:\n\n"
                    "| Linear | weight error | weight rank | output error | output rank | peak / median channel RMS |\n"
                    "|---|---:|---:|---:|---:|---:|\n" + _moved
                ),
                charts.layer_errors_chart(layers.records(), title),
            ]
        )


    mo.vstack(
        [
            mo.md("## 3 · Which layers does it hurt, and why?"),
            mo.Html(format_menu.outcomes(["format"], _layers)),
        ]
    )
    return


@app.cell(hide_code=True)
def _(behaviour, charts, code_name, compared, format_menu, layers, mo):
    outliers = layers.outliers[layers.disagreeing[0]]  # the layer shown first


    def _inputs(title):
        _layers = behaviour.layer_study(compared[title], cache=True)
        _outliers = _layers.outliers[_layers.disagreeing[0]]
        _channels = ", ".join(f"{channel} (RMS {_outliers.rms[channel]:.2f})" for channel in _outliers.top_channels.tolist())
        _layer = next(row for row in _layers.records() if row["layer"] == _outliers.layer)
        _carry = "error than of its signal" if _outliers.error_share > _outliers.signal_share else "signal than of its error"
        _side = "below" if _layer["output_error"] < _layer["weight_error"] else "above"
        return mo.vstack(
            [
                mo.md(
                    f"**The inputs of {code_name(_outliers.layer.removeprefix('encoder.'))},** the Linear whose rank moves most "
                    f"under {title}. Each bar is one input channel's activation RMS over every token. A few channels are "
                    f"far larger than the rest: the largest is {_outliers.peak_to_median:.1f} × the median. "
                    f"Top channels: {_channels}.\n\n"
                    f"These {_outliers.top_channels.size} channels are {_outliers.channel_share:.1%} of the "
                    f"inputs. Their terms alone make {_outliers.error_share:.1%} of ‖ΔW·x‖² and "
                    f"{_outliers.signal_share:.1%} of ‖W·x‖²: they carry more of this layer's {_carry}. "
                    f"Its relative output error, {_layer['output_error']:.4f}, is {_side} its weight error, "
                    f"{_layer['weight_error']:.4f}.\n\n"
                    "A few large channels do not settle that on their own. The output error weighs each "
                    "weight's error by every input that meets it, so what decides is how ΔW lines up with all "
                    "of the inputs: the input, not the weights alone."
                ),
                charts.channel_outliers_chart(_outliers.rms, _outliers.top_channels, _outliers.layer),
            ]
        )


    mo.vstack(
        [
            mo.md("### Where the output error comes from: the inputs"),
            mo.Html(format_menu.outcomes(["format"], _inputs)),
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
def _(chosen, compared, format_menu, mo, run_model):
    with mo.status.spinner(title="Running the model's Linears on MLX", remove_on_exit=True):
        device = run_model(chosen, cache=True)  # the one shown first
    mo.Html(format_menu.outcomes(["format"], lambda title: mo.md(run_model(compared[title], cache=True).to_markdown())))
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=10))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(accounting, mo):
    _float32 = accounting.FLOAT32
    mo.md(f"""
    ## Try this

    1. Which is the lowest bit width where top-1 still matches float32? *(Check the table, with its
       "kept float32" column: Q3_K and Q2_K hold only because their 256-weight blocks leave 30 of 36
       Linears in float32. Of the formats that quantize every Linear, MLX affine 3-bit g64
       ({accounting.bits_per_weight("affine3_g64", _float32):g} bits per weight with this model's
       float32 scales) still answers as float32 does; 2-bit g64
       ({accounting.bits_per_weight("affine2_g64", _float32):g} with them) does not.)* Top-1 cannot
       tell the 4-bit formats apart; which column can? *(The median margin: pick them one by one and
       watch the cloud.)*
    2. Compare MXFP4 ({accounting.bits_per_weight("mxfp4", _float32):g} bits per weight) and MLX
       affine 4-bit g128. With this model's float32 scale and bias the affine format stores
       {accounting.bits_per_weight("affine4_g128", _float32):g} bits per weight; in a bfloat16
       checkpoint it would store {accounting.bits_per_weight("affine4_g128", accounting.BFLOAT16):g},
       as MXFP4 does. Which keeps the embeddings closer to float32? *(Check the cosine column:
       nearly a tie.)*
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
