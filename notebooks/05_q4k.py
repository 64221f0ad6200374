import marimo

__generated_with = "0.25.2"
app = marimo.App(
    width="medium",
    app_title="5 · Q4_K: a gain, an offset and a lane",
)


@app.cell(hide_code=True)
def _():
    import marimo as mo
    import numpy as np

    from lab import device
    from lab.formats import q4k
    from lab.teach import course
    from lab.teach.charts import difference_chart, q4k_lane_chart
    from widgets import Q4KExplorer
    from widgets.choice import outcome_panels

    return (
        Q4KExplorer,
        course,
        device,
        difference_chart,
        mo,
        np,
        outcome_panels,
        q4k,
        q4k_lane_chart,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 5 · Q4_K: integer codes with a gain and an offset

    Q4_K changes the decoding rule again. Its codes are plain unsigned integers 0…15, and each
    32-weight subblock j turns code q into a weight with a gain and an offset:

    ŵ = d × sⱼ × q − dmin × mⱼ

    d and dmin are FP16 numbers for the whole 256-weight block; sⱼ and mⱼ are 6-bit integers
    per subblock. The offset is **subtracted**: mⱼ says how far below zero the subblock reaches.

    | bytes | what |
    |---|---|
    | 0–1 | d (FP16) |
    | 2–3 | dmin (FP16) |
    | 4–15 | eight 6-bit scales and eight 6-bit mins, packed into 12 bytes |
    | 16–143 | 128 payload bytes, two codes each |

    144 bytes for 256 weights: 144 × 8 / 256 = 4.5 bits per weight.
    """)
    return


@app.cell(hide_code=True)
def _(Q4KExplorer, mo):
    # outcomes: the MLX run below follows the explorer, and is kept, dimmed, while one of its
    # fields holds an entry it refuses (a typo keeps the output: widgets/ui.js)
    explorer = mo.ui.anywidget(Q4KExplorer(outcomes="q4k-on-device"))
    explorer
    return (explorer,)


@app.cell(hide_code=True)
def _(mo, q4k):
    # The article's worked byte, in the block the explorer opens with: the explorer above follows
    # any byte clicked, live on the static page too; this text is its fixed, checkable example.
    fixture = q4k.presentation_fixture()
    traced = q4k.explain_byte(fixture, 0)
    mo.md(
        f"""
        ## The first payload byte, {traced['hex']}, by hand

        The explorer above traces any byte you click. Here is the first payload byte of the block
        it opens with, worked once by hand.

        Low nibble {traced['low']['code']}, high nibble {traced['high']['code']}; d = {traced['d']:g}, dmin = {traced['dmin']:g}.

        * low → lane **{traced['low']['lane']}**, subblock {traced['low']['subblock']}:
          gain {traced['low']['gain_formula']}, offset {traced['low']['offset_formula']},
          weight **{traced['low']['formula']}**
        * high → lane **{traced['high']['lane']}**, subblock {traced['high']['subblock']}:
          gain {traced['high']['gain_formula']}, offset {traced['high']['offset_formula']},
          weight **{traced['high']['formula']}**

        The two codes share a byte but not a lane and not their metadata: in each 64-weight chunk c,
        payload byte 32c + l sends its low code to lane 64c + l (subblock 2c) and its high code to
        lane 64c + 32 + l (subblock 2c + 1).
        """
    )
    return fixture, traced


@app.cell(hide_code=True)
def _(fixture, mo, q4k, q4k_lane_chart, traced):
    _weights = q4k.decode(fixture)
    _chart = q4k_lane_chart(_weights, highlight=(traced["low"]["lane"], traced["high"]["lane"]))
    mo.vstack([mo.md("All 256 weights of that block, the two lanes of its first payload byte marked:"), mo.as_html(_chart)])
    return


@app.cell(hide_code=True)
def _(course, fixture, mo, q4k):
    _metadata = fixture[4:16]
    _fields = [q4k.explain_metadata(_metadata, j) for j in range(8)]
    _sub = "₀₁₂₃₄₅₆₇"
    metadata_table = course.table(
        ["j", "scale", "how", "min", "how"],
        [
            [j, f"s{_sub[j]} = {f['scale']}", f["scale_formula"], f"m{_sub[j]} = {f['min']}", f["min_formula"]]
            for j, f in enumerate(_fields)
        ],
    )
    _text = mo.md(
        "## The 12-byte metadata puzzle\n\n"
        "Sixteen 6-bit fields make 96 bits. For j = 0…3 the low six bits of a byte hold the field; "
        "for j = 4…7 the low four bits come from bytes 8…11 and the top two are borrowed from the "
        "spare bits 6–7 of bytes 0…7. Reading B[4] as s₄ looks plausible and is wrong. The explorer "
        "unpacks the metadata of whatever block it shows; here is the block it opens with, field by "
        "field.\n\n" + metadata_table
    )
    _text
    return


@app.cell(hide_code=True)
def _(course, device, difference_chart, explorer, mo, np, outcome_panels):
    _block = np.array(explorer.widget.block, dtype=np.uint8)
    _x = np.random.default_rng(5).normal(0, 1, 256).astype(np.float32)
    _device_report = device.run_q4k(_block, x=_x)
    _chart = difference_chart(_device_report)
    # one panel for every value of the explorer: it always shows, and the explorer keeps it
    _run = mo.vstack([mo.md(device.report_markdown(_device_report)), *([] if _chart is None else [mo.as_html(_chart)])])
    _report = mo.vstack(
        [
            mo.md(
                "## On device: this block through MLX\n\nTwo routes: the block repacked as MLX affine "
                "(group 32, scale d·sⱼ, bias −dmin·mⱼ) through `mx.quantized_matmul`, and a real GGUF "
                "file written with gguf-py and opened with `mx.load`. The reference is gguf-py's decoder."
            ),
            mo.Html(outcome_panels("q4k-on-device", {}, {}, {(): _run})),
        ]
    )
    mo.Html(course.readout(_report))
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=5))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Click payload byte 1 (`00`). Both codes are 0: why are the weights −0.25 and −0.5, not
       0? *(Check: the offsets dmin × m₀ = 0.25 and dmin × m₁ = 0.5 remain.)*
    2. Click payload byte 2 (`FF`). Both codes are 15: why do the weights differ? *(Check:
       3.5 and 5.125, different gains and offsets.)*
    3. Click payload byte 32. Which lanes does it feed? *(Check: 64 and 96.)*
    4. In the metadata table, which bytes make s₄? *(Check: B[8]'s low four bits and B[0]'s
       top two: (33 & 15) | ((130 >> 6) << 4) = 33.)*
    5. Change d to 0.25. Which weights change, and which part of the formula did you touch?
       *(Check: every gain doubles; the offsets stay.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("05_q4k.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()
