"""Learned (data-aware) quantization of one Linear: the weights chosen to keep the Linear's outputs
on calibration inputs close, not each weight close to itself (the MLX guide, §8).

    gptq(weight, inputs, *, bits, group_size)   GPTQ, as mlx_lm.quant.gptq 0.32.2 (bits 2, 4, 8)
    awq(weight, inputs, *, bits, group_size)    AWQ, as mlx_lm.quant.awq 0.32.2 (MLX affine's bits)

Both take a weight [out, in] and calibration inputs [n, in] and return the decoded float32 weights
[out, in], in MLX's affine format at those bits and group size. gptq_tensor gives GPTQ's codes,
scales and biases; awq_search what AWQ's search tried and kept. Bad input raises a LabError.
"""

from lab.study.learned._awq import AWQResult, awq, awq_search
from lab.study.learned._gptq import GPTQ_BITS, gptq, gptq_tensor
from lab.study.learned._inputs import CalibrationError

__all__ = ["AWQResult", "CalibrationError", "GPTQ_BITS", "awq", "awq_search", "gptq", "gptq_tensor"]
