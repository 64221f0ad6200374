"""Typed errors. Each one names the problem and, where there is one, the value the lab expected.

Where the lab mirrors an MLX operation the message follows MLX 0.32.4's wording, so a
learner who later meets MLX's own error recognises it.
"""


class LabError(ValueError):
    """Base class for every error the lab raises on bad input."""


class ShapeError(LabError):
    """Wrong length, wrong number of dimensions, or a size that is not a multiple of a block."""


class GroupSizeError(LabError):
    """A group size the format does not support."""


class BitsError(LabError):
    """A bit width the format does not support."""


class DTypeError(LabError):
    """An array of a dtype the operation cannot take (for example floats where bytes are expected)."""


class NonFiniteError(LabError):
    """NaN or infinity where the operation needs finite numbers, or a finite number that becomes
    infinity in the dtype the operation computes in (1e39 is finite in float64, not in float32)."""


class ReservedCodeError(LabError):
    """A reserved encoding, such as the E8M0 NaN byte 0xFF, used where a number is required."""


class CodeRangeError(LabError):
    """A code outside the range of its field (a nibble above 15, a 6-bit field above 63)."""


class RuleError(LabError):
    """An unknown rounding rule or preset name."""


class UnsupportedTypeError(LabError):
    """A GGUF tensor type the lab does not decode."""


class GGUFFormatError(LabError):
    """A GGUF file that is malformed: truncated, inconsistent, or pointing outside itself."""


class DecodeBudgetError(LabError):
    """A tensor whose decoded float32 weights would need more memory than the decode budget allows."""


class InputError(LabError):
    """Text a learner typed that the lab cannot read as the number (or row of numbers) it needs."""


class FileReadError(LabError):
    """A file the operating system would not open or read; the message names the path and the reason."""


class ImportanceError(LabError):
    """An importance vector (an imatrix's mean of x² per column) a quantizer cannot use: a negative value."""
