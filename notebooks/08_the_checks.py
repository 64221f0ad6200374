import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="8 · The checks")


@app.cell(hide_code=True)
def _():
    import marimo as mo

    from lab import device
    from lab.formats import q4k
    from lab.formats.q4k import misreadings
    from lab.teach import zoo

    return device, misreadings, mo, q4k, zoo


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    # 8 · The checks before trusting an optimized decoder

    A decoder that looks right can still put a value in the wrong lane, read the wrong
    metadata field, or round a tie the other way. The article ends with a short list of
    checks; here they run live, first against the correct decoders, then against a **zoo of
    deliberately broken ones**: each bug in the zoo is one a plausible implementation could make,
    and each is paired with the check that catches it.

    Two rules make the checks worth running. The data must be **asymmetric**: different values
    in the two nibbles, a different scale and minimum in every subblock. And the reference must
    be **independent**: gguf-py's decoder, MLX's kernels, ml_dtypes, arithmetic done by hand.
    Two copies of the same bug agree perfectly.
    """)
    return


@app.cell(hide_code=True)
def _(mo, q4k, zoo):
    _battery = [
        ("1. Decode individual codes (E2M1, both zeros)", zoo.check_individual_codes(zoo.decode_mxfp4)),
        ("1. Integer nibble extraction (Q4_K)", zoo.check_nibble_extraction(q4k.decode)),
        ("2. Metadata, all eight pairs", zoo.check_metadata(q4k.unpack_scale_min)),
        ("3. Lane placement, all 256 destinations", zoo.check_lane_placement(q4k.decode)),
        ("4. Reconstructed weights vs gguf-py", zoo.check_weights(q4k.decode)),
        ("5. Dot product, varied inputs", zoo.check_dot_product(q4k.decode)),
        ("6. The actual path: the lab's MXFP4 bytes vs MLX", zoo.check_against_mlx(zoo.quantize_mxfp4_mlx)),
    ]
    battery = {name: result for name, result in _battery}
    _rows = "\n".join(
        f"| {name} | {'passed' if result.passed else 'FAILED'} | {result.compared} |" for name, result in _battery
    )
    mo.md(
        "## The battery, on the lab's own decoders\n\n| check | result | compared against |\n|---|---|---|\n"
        + _rows
        + "\n\nCheck 7, *measure the real workload*, is not a unit test: `python3 labctl.py bench` "
        "times the lab against gguf-py, MLX and ml_dtypes on the same data and records the machine, "
        "thread settings and workload next to the numbers."
    )
    return


@app.cell(hide_code=True)
def _(mo, zoo):
    zoo_table = zoo.zoo_table()
    mo.md("## The decoder zoo\n\nEvery row ran the claimed check on the broken decoder and on the correct one.\n\n" + zoo_table.to_markdown())
    return


@app.cell(hide_code=True)
def _(misreadings, mo, zoo):
    _symmetric = zoo.check_weights(misreadings.decode_shared_metadata, blocks=zoo.symmetric_blocks())
    _asymmetric = zoo.check_weights(misreadings.decode_shared_metadata, blocks=zoo.asymmetric_blocks())
    mo.md(
        f"""
        ## Why asymmetric data

        The "one subblock's metadata for both nibbles" bug, checked against gguf-py:

        * on blocks where every subblock shares one scale and minimum: **{'passed' if _symmetric.passed else 'caught'}**
          ({_symmetric.detail or _symmetric.compared});
        * on blocks with different metadata per subblock: **{'passed' if _asymmetric.passed else 'caught'}**.

        A fixture where everything shares one scale hides exactly the bug it should catch.
        """
    )
    return


@app.cell(hide_code=True)
def _(device, mo, q4k):
    mo.vstack(
        [
            mo.md(
                "## On device: the presentation block through MLX\n\nThe same checks, aimed at a real "
                "kernel library. Whatever MLX returns is compared with gguf-py's decoder; the lab does "
                "not adjust itself to match."
            ),
            mo.md(device.report_markdown(device.run_q4k(q4k.presentation_fixture()))),
        ]
    )
    return


@app.cell(hide_code=True)
def _(mo):
    from widgets import Exercises

    exercises = mo.ui.anywidget(Exercises(topic=8))
    mo.vstack([mo.md("## Check yourself"), exercises])
    return


@app.cell(hide_code=True)
def _(mo):
    mo.md(r"""
    ## Try this

    1. Which check catches reading B[4] as s₄, and which metadata row shows it first?
       *(Check the zoo table: check 2, s₄ of row 0: expected 33, got 4.)*
    2. Why does check 1 use every code under several scale bytes, not just one?
       *(Hint: a raw byte used as the scale agrees with 2^(byte − 127) nowhere except by luck.)*
    3. In the on-device report, which subblocks does MLX's GGUF loader get wrong, and which
       broken decoder in the zoo does it match? *(Check the report's note.)*
    """)
    return


@app.cell(hide_code=True)
def _(mo):
    from lab.teach import course as _course
    from widgets.presenter import PresenterToggle as _PresenterToggle

    mo.vstack([mo.md(_course.navigation("08_the_checks.py")), mo.ui.anywidget(_PresenterToggle())])
    return


if __name__ == "__main__":
    app.run()
