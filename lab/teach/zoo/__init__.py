"""The decoder zoo: the same bytes through a correct decoder and through deliberately wrong ones.

Every wrong specimen here is a mistake that produces plausible numbers: the right shape, the
right magnitude, often the right value in most places. Each is paired with the check from the
article's list ("The checks I want before trusting an optimized decoder", items 1 to 6) that
is meant to catch it, and `zoo_table()` runs every pairing and records whether it did.

    specimens   the correct and the deliberately wrong decoders, unpackers and quantizers
    checks      the article's six checks, against gguf-py, the article's formulas and MLX
    table       every pairing run, as a table

The fixtures the checks use by default (asymmetric Q4_K blocks, metadata rows, MXFP4 weights
with planted ties, varied inputs) live in lab.formats.fixtures and are re-exported here.
"""

from lab.formats.fixtures import (
    asymmetric_blocks,
    metadata_fixture,
    mlx_check_weights,
    symmetric_blocks,
    varied_input,
)
from lab.teach.zoo.checks import (
    CHECK_TITLES,
    CheckResult,
    check_against_mlx,
    check_dot_product,
    check_individual_codes,
    check_lane_placement,
    check_metadata,
    check_nibble_extraction,
    check_weights,
)
from lab.teach.zoo.specimens import (
    METADATA_UNPACKERS,
    MXFP4_DECODERS,
    MXFP4_QUANTIZERS,
    Q4K_DECODERS,
    SPECIMENS,
    Specimen,
    decode_mxfp4,
    decode_mxfp4_int4_elements,
    decode_mxfp4_raw_scale_byte,
    quantize_mxfp4_floor_scale,
    quantize_mxfp4_mlx,
    quantize_mxfp4_ties_to_even,
    unpack_scale_min_unsplit,
)
from lab.teach.zoo.table import ZooRow, ZooTable, run_check, zoo_table

__all__ = [
    "CHECK_TITLES",
    "METADATA_UNPACKERS",
    "MXFP4_DECODERS",
    "MXFP4_QUANTIZERS",
    "Q4K_DECODERS",
    "SPECIMENS",
    "CheckResult",
    "Specimen",
    "ZooRow",
    "ZooTable",
    "asymmetric_blocks",
    "check_against_mlx",
    "check_dot_product",
    "check_individual_codes",
    "check_lane_placement",
    "check_metadata",
    "check_nibble_extraction",
    "check_weights",
    "decode_mxfp4",
    "decode_mxfp4_int4_elements",
    "decode_mxfp4_raw_scale_byte",
    "metadata_fixture",
    "mlx_check_weights",
    "quantize_mxfp4_floor_scale",
    "quantize_mxfp4_mlx",
    "quantize_mxfp4_ties_to_even",
    "run_check",
    "symmetric_blocks",
    "unpack_scale_min_unsplit",
    "varied_input",
    "zoo_table",
]
