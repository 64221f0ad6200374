import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="1 · One nibble, six decoders")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab.codes import e2m1, nibble
    from lab.formats import iq4_nl, nf4, q4_0
    from lab.numbers import format_float32, format_number
    from lab.teach.charts import e2m1_ruler_chart
    from widgets import NibbleDecoder
    from widgets.choice import outcome_panels

    return (
        NibbleDecoder,
        e2m1,
        e2m1_ruler_chart,
        format_float32,
        format_number,
        iq4_nl,
        mo,
        nf4,
        nibble,
        outcome_panels,
        q4_0,
    )


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 1 · One nibble, six decoders

    Four bits say how much room a code takes up. They say nothing about which number it
    stands for: that is the decoder's job. Hand the bits `0101` to six decoders and you get
    six answers, and the ones that agree do so only by luck.

    Click the bits of the figure that follows (or focus them and use the arrow keys). Watch
    the same pattern read as an **E2M1** float (the element of MXFP4 and NVFP4), as an unsigned **UINT4** (the code
    Q4_K and Q4_1 store before their gain and offset) and as a two's-complement **INT4**, and
    then by three more 4-bit decoders met in the wild: GGUF's **Q4_0** (the code minus 8),
    QLoRA's **NF4** (sixteen quantiles of the normal distribution) and GGUF's **IQ4_NL** (a
    fixed sixteen-entry codebook). Each reading is what the code stands for before its block's
    scale.
    """)
    return


@app.cell(hide_code=True)
def _(NibbleDecoder, mo):
    # outcomes: the by-hand working below is written for all sixteen codes and follows the widget,
    # live and on the static page alike
    decoder = mo.ui.anywidget(NibbleDecoder(code=0b0101, outcomes="nibble-by-hand"))
    decoder
    return (decoder,)


@app.cell(hide_code=True)
def _(
    decoder,
    e2m1,
    format_float32,
    format_number,
    iq4_nl,
    mo,
    nf4,
    nibble,
    outcome_panels,
    q4_0,
):
    def _by_hand(code):
        parts = e2m1.explain(code)
        readings = nibble.three_decoders(code)
        return mo.md(
            f"""
            ### Doing `{parts['bits']}` by hand

            | field | bits | value |
            |---|---|---|
            | sign | `{parts['bits'][0]}` | {parts['sign']} |
            | exponent | `{parts['bits'][1:3]}` | {parts['exponent_field']} (bias 1) |
            | fraction | `{parts['bits'][3]}` | {parts['fraction']} |

            This code is **{parts['kind']}**, so the rule is
            `{parts['formula']}`.

            Read as UINT4 it is **{format_number(readings['uint4'])}**; as INT4 it is
            **{format_number(readings['int4'])}**; as Q4_0 it is {code} − {q4_0.CODE_OFFSET} =
            **{format_number(code - q4_0.CODE_OFFSET)}**; as NF4 it is level {code},
            **{format_float32(nf4.LEVELS[code])}**; as IQ4_NL it is codebook entry {code},
            **{format_number(int(iq4_nl.KVALUES[code]))}**.
            """
        )


    mo.Html(
        outcome_panels(
            "nibble-by-hand",
            {"code": [str(_code) for _code in range(16)]},
            {"code": str(decoder.widget.code)},
            {(str(_code),): _by_hand(_code) for _code in range(16)},
        )
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## The normal rule and the exception

    For a normal E2M1 code, value = (−1)^sign × 2^(exponent − 1) × (1 + fraction/2). The
    leading 1 is implied by the rule, not stored. When the exponent field is `00` the code is
    not normal: it is either zero or the subnormal 0.5, value = (−1)^sign × 0.5 × fraction.

    That gives eight magnitudes, and a sign for each: **0, 0.5, 1, 1.5, 2, 3, 4, 6**. Code
    `0111` is +6; code `1000` is **−0**, a zero that remembers its sign. An INT4 reader would
    call `1000` minus eight, which is why "supports four bits" is not yet a decoder contract.
    """)
    return


@app.cell(hide_code=True)
def _(e2m1_ruler_chart, mo):
    mo.vstack(
        [
            mo.md(
                "## A ruler with uneven marks\n\nNear zero the marks sit 0.5 apart; between 4 and 6 "
                "the gap is 2. Same number of bits, very different spacing: a float ruler, not an "
                "integer one. Both zeros sit on the same spot."
            ),
            e2m1_ruler_chart(),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Three kinds of spacing

    The widget's middle figure puts each decoder's sixteen levels on one line, divided by the
    row's largest magnitude so that every row reaches 1 and zero sits in one place. UINT4, INT4
    and Q4_0 are **uniform**: equal gaps, a ruler with integer marks (INT4 and Q4_0 hold the
    same sixteen values, −8 to 7, but give them to different codes). E2M1 is **floating
    point**: gaps that double with each power of two. NF4 and IQ4_NL are **quantile-like**:
    marks crowd near zero, where most weights of a block sit, and spread towards the ends,
    where few do. NF4 is symmetric apart from the one extra positive level that buys an exact
    zero; IQ4_NL is lopsided, −127 against 113, and has no zero at all.
    """)
    return


@app.cell(hide_code=True)
def _(e2m1, format_float32, format_number, iq4_nl, mo, nf4, nibble, q4_0):
    import numpy as _np

    _codes = _np.arange(16)
    _rows = "\n".join(
        f"| `{code:04b}` | {code} | {format_number(float(e2m1.decode(code)))} | {int(nibble.as_uint4(code))} "
        f"| {format_number(int(nibble.as_int4(code)))} | {format_number(int(code) - q4_0.CODE_OFFSET)} "
        f"| {format_float32(nf4.LEVELS[code])} | {format_number(int(iq4_nl.KVALUES[code]))} |"
        for code in _codes
    )
    mo.md(
        "## All sixteen codes\n\n| bits | code | E2M1 | UINT4 | INT4 | Q4_0 | NF4 | IQ4_NL |\n"
        "|---|---|---|---|---|---|---|---|\n" + _rows
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import CodeExplorer

    code_explorer = mo.ui.anywidget(CodeExplorer(format="E2M1", code=5, value_text="2.5"))
    mo.vstack([mo.md("## Every code, clickable: E2M1, E8M0 and E4M3"), code_explorer])
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=1))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Set the bits to `0111`, then `1000`. What are the E2M1 values? *(Check: the readout
       shows 6, then −0; the table agrees.)*
    2. Which codes give the same answer under UINT4 and INT4? *(Check in the table: 0000
       through 0111, the codes whose top bit is 0.)*
    3. Find the two codes whose E2M1 magnitudes are 4 and 6. How far apart are they, and how
       far apart are the codes for 0 and 0.5? *(Check on the ruler: 2 and 0.5.)*
    4. Which E2M1 code is subnormal and positive? *(Check: `0001`, the readout says
       "subnormal".)*
    5. Which code is zero under NF4, and which under Q4_0? Is any code zero under IQ4_NL?
       *(Check in the table: `0111` and `1000`; no, its two nearest entries are −10 and 1.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("01_one_nibble.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()
