"""Altair charts for the course, where a picture beats a table. Each takes plain inputs and
computes nothing the codec modules do not already provide. Every chart spans its output and lays
its text out for a phone's narrowest plot (the layout, in _layout). The modules, by subject:

    _layout       the layout all charts share: palette, type sizes, theme, titles, legends, rows of
                  named bars, scatter labels placed where they fit
    codes         e2m1_ruler_chart, error_vs_scale_chart: one code, one scale (notebooks 01, 02)
    blocks        q4k_lane_chart (traced_label_layout), block_grid_chart: one block's weights
    device        difference_rows, difference_chart: the on-device pane's MLX − lab differences
    formats       bits_per_weight_chart, pareto_chart, block_outlier_chart: formats compared
    files         type_bytes_chart: where a GGUF file's bytes go, by tensor type (06)
    chat          divergence_chart: where a chat model's greedy answers depart, per format; front_chart:
                  the Pareto front with every point on it numbered (12)
    real_weights  tensor_error_chart, outlier_chart, layer_type: a real model's tensors (notebook 09)
    answers       similarity_heatmaps_chart, per_sentence_cosine_chart, retrieval_quality_chart,
                  retrieval_margins_chart: what a format does to the answers (notebook 10)
    layers        layer_errors_chart, channel_outliers_chart: inside the model's Linears (notebook 10)

Here too are the layout's measures the tests check charts against (NARROWEST_PLOT, text_px, the
legend's spacing, EMBED_OPTIONS) and the ruler's and traced lanes' placements.
"""

from lab.teach.charts._layout import EMBED_OPTIONS, LEGEND_COLUMN_GAP, LEGEND_SYMBOL_PX, NARROWEST_PLOT, text_px
from lab.teach.charts.answers import (
    per_sentence_cosine_chart,
    retrieval_margins_chart,
    retrieval_quality_chart,
    similarity_heatmaps_chart,
)
from lab.teach.charts.blocks import (
    TRACED_COLOUR,
    TRACED_LABEL_GAP,
    block_grid_chart,
    q4k_lane_chart,
    traced_label_layout,
)
from lab.teach.charts.chat import divergence_chart, front_chart
from lab.teach.charts.codes import RULER_DOMAIN, RULER_LABEL_OFFSETS, e2m1_ruler_chart, error_vs_scale_chart
from lab.teach.charts.device import difference_chart, difference_rows
from lab.teach.charts.files import type_bytes_chart
from lab.teach.charts.formats import bits_per_weight_chart, block_outlier_chart, pareto_chart
from lab.teach.charts.layers import channel_outliers_chart, layer_errors_chart
from lab.teach.charts.real_weights import layer_type, outlier_chart, tensor_error_chart

__all__ = [
    "divergence_chart",
    "front_chart",
    "type_bytes_chart",
    "EMBED_OPTIONS",
    "LEGEND_COLUMN_GAP",
    "LEGEND_SYMBOL_PX",
    "NARROWEST_PLOT",
    "RULER_DOMAIN",
    "RULER_LABEL_OFFSETS",
    "TRACED_COLOUR",
    "TRACED_LABEL_GAP",
    "bits_per_weight_chart",
    "block_grid_chart",
    "block_outlier_chart",
    "channel_outliers_chart",
    "difference_chart",
    "difference_rows",
    "e2m1_ruler_chart",
    "error_vs_scale_chart",
    "layer_errors_chart",
    "layer_type",
    "outlier_chart",
    "pareto_chart",
    "per_sentence_cosine_chart",
    "q4k_lane_chart",
    "retrieval_margins_chart",
    "retrieval_quality_chart",
    "similarity_heatmaps_chart",
    "tensor_error_chart",
    "text_px",
    "traced_label_layout",
]
