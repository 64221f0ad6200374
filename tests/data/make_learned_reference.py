"""Pins what mlx-lm's own GPTQ and AWQ make of two small Linears, for tests/oracles/test_learned_gptq.py and
tests/oracles/test_learned_awq.py to hold lab.study.learned to.

Nothing of the lab is imported. The Linears come from `linears()`, seeded: weights N(0, 1/in), and
calibration and evaluation inputs drawn alike, heavy-tailed (Student's t, 3 degrees of freedom),
with 8 input channels 20 times larger than the rest, the salient channels AWQ exists for:
  - "independent", 192 x 512: every input channel drawn on its own, so the inputs' Hessian has
    nothing off its diagonal but sampling noise;
  - "correlated", 64 x 256: the inputs mix 32 shared heavy-tailed sources plus a little noise of
    their own, as a model's activations share directions; that is what GPTQ's error feedback uses.
There are four calibration rows per input, so the Hessian is well determined. The tests make the
same arrays with `linears()` and check them against the sha256 pinned here; the arrays themselves
are not stored. Run outside CI (about a minute):

    .venv/bin/python tests/data/make_learned_reference.py

with mlx[cpu]==0.32.4 and mlx-lm==0.32.2. It writes tests/data/learned_reference.npz:

    {name}/sha256: the digest of the Linear's weight, calibration and evaluation float32 bytes
    gptq/{name}/{bits}_g{group}/{packed,scales,biases}: mlx_lm.quant.gptq.gptq_quantize on a one-Linear
        model fed the calibration rows; `packed` is the uint32 weight MLX stores
    awq/{name}/{bits}_g{group}/{ratio,scales,packed,q_scales,q_biases,fell_back}: mlx_lm.quant.awq's
        search_best_scale (20 ratios), then its search_best_clip on the scaled Linear, then its
        quantize-and-compare fall back, as awq_quantize runs them for one Linear whose scale has no
        operation before it to fold into; decoded = (q_scales * codes + q_biases) / scales, or plain
        round-to-nearest where fell_back
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "learned_reference.npz"
SEED = 39
SALIENT_CHANNELS = 8
SALIENT_FACTOR = 20.0
#: name: (out, in, calibration rows, evaluation rows, shared sources or None for independent channels)
LINEARS = {"independent": (192, 512, 2048, 512, None), "correlated": (64, 256, 1024, 256, 32)}
#: the weight of each channel's own noise beside the shared sources, in the correlated Linear
OWN_NOISE = 0.3
#: (bits, group size) per Linear
GPTQ_SETTINGS = [(4, 64), (4, 32), (2, 64), (8, 64)]
AWQ_SETTINGS = [(4, 64), (3, 64)]
N_GRID = 20


def linears() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """{name: (weight [out, in], calibration [n, in], evaluation [m, in], salient channel indices)},
    the arrays float32."""
    rng = np.random.default_rng(SEED)
    made = {}
    for name, (n_out, n_in, n_calibration, n_evaluation, sources) in LINEARS.items():
        salient = np.sort(rng.choice(n_in, SALIENT_CHANNELS, replace=False))
        channel = np.ones(n_in)
        channel[salient] = SALIENT_FACTOR
        weight = rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)
        mixing = None if sources is None else rng.standard_normal((sources, n_in)) / np.sqrt(sources)
        calibration, evaluation = (_inputs(rng, rows, n_in, mixing) * channel for rows in (n_calibration, n_evaluation))
        made[name] = (*(a.astype(np.float32) for a in (weight, calibration, evaluation)), salient)
    return made


def _inputs(rng, rows, n_in, mixing):
    """Heavy-tailed inputs [rows, n_in]: independent channels, or shared sources through `mixing` plus
    a little noise of each channel's own."""
    if mixing is None:
        return rng.standard_t(3, (rows, n_in))
    return rng.standard_t(3, (rows, mixing.shape[0])) @ mixing + OWN_NOISE * rng.standard_t(3, (rows, n_in))


def digest(weight, calibration, evaluation) -> str:
    return hashlib.sha256(b"".join(a.tobytes() for a in (weight, calibration, evaluation))).hexdigest()


def codes(packed: np.ndarray, bits: int) -> np.ndarray:
    """The codes of MLX's packed uint32 weight: each row one little-endian bit stream, `bits` per code."""
    stream = np.unpackbits(packed.astype("<u4").view(np.uint8), axis=-1, bitorder="little")
    return (stream.reshape(*packed.shape[:-1], -1, bits).astype(np.int64) << np.arange(bits)).sum(axis=-1)


def pinned_decode(pinned, key: str, bits: int, group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """mlx-lm's decoded weights [out, in] for a pinned result, and the size of a code step [out, in]
    (its scale, divided by AWQ's input scale where it has one)."""
    q_codes = codes(pinned[f"{key}/packed"], bits)
    scales, biases = (
        pinned[f"{key}/{part}"]
        for part in (("scales", "biases") if key.startswith("gptq") else ("q_scales", "q_biases"))
    )
    step = np.repeat(scales, group_size, axis=-1).astype(np.float64)
    decoded = step * q_codes + np.repeat(biases, group_size, axis=-1)
    if key.startswith("awq"):
        step, decoded = step / pinned[f"{key}/scales"], decoded / pinned[f"{key}/scales"]
    return decoded, np.abs(step)


def relative_output_error(weight, decoded, inputs) -> float:
    """‖x (W - Q)ᵀ‖ / ‖x Wᵀ‖ over the rows of `inputs`, in float64."""
    x, w = inputs.astype(np.float64), weight.astype(np.float64)
    return float(np.linalg.norm(x @ (w - decoded).T) / np.linalg.norm(x @ w.T))


def mlx_gptq(weight, calibration, bits, group_size):
    import mlx.core as mx
    import mlx.nn as nn
    from mlx_lm.quant.gptq import gptq_quantize

    class OneLinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
            self.linear.weight = mx.array(weight)

        def __call__(self, x):
            return self.linear(x)

    model = OneLinear()
    data = mx.array(calibration).reshape(-1, 8, calibration.shape[1])
    model, _ = gptq_quantize(model, data, bits, group_size, fallback_bits=8, fallback_group_size=64)
    layer = model.linear
    assert isinstance(layer, nn.QuantizedLinear) and layer.bits == bits and layer.group_size == group_size
    return {
        "packed": np.array(layer.weight),
        "scales": np.array(layer.scales),
        "biases": np.array(layer.biases),
    }


def mlx_awq(weight, calibration, bits, group_size):
    import mlx.core as mx
    import mlx.nn as nn
    from mlx_lm.quant.awq import mse, search_best_clip, search_best_scale

    def quantize_func(w):
        return mx.dequantize(*mx.quantize(w, bits=bits, group_size=group_size), bits=bits, group_size=group_size)

    x = mx.array(calibration)[None]  # [batch 1, rows, in], as the block captures it
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    layer.weight = mx.array(weight)
    layer.input_feat = x
    original = layer.weight
    out = layer(x)
    before = (mse(out, x @ quantize_func(original).T).sum() / out.size).item()
    scales = search_best_scale([layer], quantize_func, block=None, layer_kwargs={}, n_grid=N_GRID)
    x_max = x.abs().mean(axis=(0, 1))
    candidates = []
    for ratio in range(N_GRID):
        candidate = mx.maximum(x_max ** (ratio / N_GRID), 1e-4).reshape(-1)
        candidates.append(candidate / (candidate.max() * candidate.min()).sqrt())
    (ratio,) = [i / N_GRID for i, c in enumerate(candidates) if mx.array_equal(c, scales).item()]
    # apply_scale with nothing before the Linear to fold 1/s into: it goes to the inputs
    layer.weight = original * scales
    layer.input_feat = x / scales
    clipped = search_best_clip(layer, quantize_func, group_size=group_size, n_grid=N_GRID)
    codes, q_scales, q_biases = mx.quantize(clipped, bits=bits, group_size=group_size)
    decoded = mx.dequantize(codes, q_scales, q_biases, bits=bits, group_size=group_size)
    after = (mse(out, (x / scales) @ decoded.T).sum() / out.size).item()
    return {
        "ratio": np.float64(ratio),
        "scales": np.array(scales),
        "packed": np.array(codes),
        "q_scales": np.array(q_scales),
        "q_biases": np.array(q_biases),
        "fell_back": np.bool_(after > before),
    }


def main():
    pinned = {}
    for name, (weight, calibration, evaluation, _) in linears().items():
        pinned[f"{name}/sha256"] = np.str_(digest(weight, calibration, evaluation))
        for bits, group_size in GPTQ_SETTINGS:
            result = mlx_gptq(weight, calibration, bits, group_size)
            pinned |= {f"gptq/{name}/{bits}_g{group_size}/{key}": value for key, value in result.items()}
        for bits, group_size in AWQ_SETTINGS:
            result = mlx_awq(weight, calibration, bits, group_size)
            pinned |= {f"awq/{name}/{bits}_g{group_size}/{key}": value for key, value in result.items()}
            print(name, bits, group_size, "ratio", result["ratio"], "fell back", result["fell_back"])
    np.savez_compressed(OUT, **pinned)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
