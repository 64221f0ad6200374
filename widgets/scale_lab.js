// Scale lab: a weight row, an input row and one scale. Shows each reconstructed weight (lab
// convention: nearest scaled E2M1 value, lowest code on a tie, clipping at ±6·scale), the
// per-weight error, y, ŷ and the signed output error, and the grid at the current scale.
// A slider moves the scale (powers of two, or fine steps of 2^(1/20) on request), a chart draws the
// output error Δy against the scale, computed here from the typed w and x, and the numbers in the
// readout can be dragged (or stepped with the arrow keys) to change w and x.
// State: the synced traits w_text, x_text, scale and fine. Arithmetic: the codec (codec/).
import { E2M1_MAX } from "./codec/codes/e2m1.js";
import { parseNumber, parseNumberRow } from "./codec/numbers.js";
import { scaleAnalyse, scaleRepresentable } from "./codec/teach/scale.js";
import { h, svg, formatNumber, mount, setTraits, checker, scrollBox } from "./ui.js";

const POWERS = [-6, -5, -4, -3, -2, -1, 0, 1, 2]; // the power-of-two scales offered as buttons
// The slider and the chart span 2^-6 .. 2^2 in log2 steps of 1 (the article's lab) or 1/20.
const LOG2_LOW = POWERS[0];
const LOG2_HIGH = POWERS[POWERS.length - 1];
const FINE_STEP = 1 / 20;

// The largest scale whose codes still reach a finite ±6·scale.
const LARGEST_SCALE = Number.MAX_VALUE / E2M1_MAX;

function commitRow(name, label) {
  return (text) => {
    const parsed = parseNumberRow(text, label);
    return parsed.ok ? { ok: true, values: { [name]: text } } : { ok: false, message: parsed.message };
  };
}

function commitScale(text) {
  const parsed = parseNumber(text);
  if (!parsed.ok) return { ok: false, message: `scale: ${parsed.message}` };
  if (!(parsed.value > 0)) return { ok: false, message: "the scale must be greater than zero" };
  if (parsed.value > LARGEST_SCALE) {
    return { ok: false, message: `the scale must be at most ${formatNumber(LARGEST_SCALE)}, so that 6·scale stays a finite float64` };
  }
  return { ok: true, values: { scale: parsed.value } };
}

function controls(model, ui) {
  const scale = model.get("scale");
  const powerButtons = POWERS.map((power) =>
    h(
      "button",
      {
        type: "button",
        class: 2 ** power === scale ? "lab-chip lab-chip-on" : "lab-chip",
        "aria-pressed": 2 ** power === scale ? "true" : "false",
        "data-focus": `power-${power}`,
        onclick: () => setTraits(model, { scale: 2 ** power }),
      },
      `2^${power}`.replace("-", "−"),
    ),
  );
  const fine = model.get("fine") === true;
  const log2 = Math.log2(scale);
  const onSlider = (event) => {
    const value = Number(event.target.value);
    setTraits(model, { scale: 2 ** (fine ? Math.round(value / FINE_STEP) * FINE_STEP : Math.round(value)) });
  };
  const slider = h(
    "div",
    { class: "lab-row lab-slider-row" },
    h(
      "label",
      { class: "lab-slider-label" },
      "scale (log₂ steps)",
      h("input", {
      type: "range",
      class: "lab-slider",
      min: LOG2_LOW,
      max: LOG2_HIGH,
      step: fine ? FINE_STEP : 1,
      value: Number.isFinite(log2) ? String(Math.min(Math.max(log2, LOG2_LOW), LOG2_HIGH)) : "0",
      "aria-valuetext": `scale ${formatNumber(scale)}`,
      "data-focus": "scale-slider",
      oninput: onSlider,
      onchange: onSlider,
    }),
    ),
    h(
      "button",
      { type: "button", class: "lab-chip", "aria-pressed": fine ? "true" : "false", "data-focus": "fine", onclick: () => setTraits(model, { fine: !fine }) },
      "fine steps",
    ),
  );
  return h(
    "div",
    { class: "lab-controls" },
    slider,
    ui.field({ key: "w", label: "weights w", value: String(model.get("w_text")), commit: commitRow("w_text", "weights") }),
    ui.field({ key: "x", label: "inputs x", value: String(model.get("x_text")), commit: commitRow("x_text", "inputs") }),
    h("div", { class: "lab-row", role: "group", "aria-label": "power-of-two scales" }, h("span", {}, "scale"), powerButtons),
    ui.field({ key: "scale-entry", label: "scale, any positive number", value: String(scale), commit: commitScale }),
  );
}

function resultTable(result) {
  const rows = result.wHat.map((wHat, i) =>
    h(
      "tr",
      { class: result.clipped[i] ? "lab-clipped" : "" },
      h("td", {}, String(i + 1)),
      h("td", {}, formatNumber(result.w[i])),
      h("td", {}, formatNumber(wHat)),
      h("td", {}, formatNumber(result.weightError[i])),
      h("td", {}, formatNumber(result.x[i])),
      h("td", {}, formatNumber(result.terms[i])),
      h("td", {}, result.clipped[i] ? "clipped" : ""),
    ),
  );
  return scrollBox(
    "each weight and its reconstruction",
    h(
      "table",
      { class: "lab-table", "aria-label": "each weight and its reconstruction" },
      h("thead", {}, h("tr", {}, ["i", "w", "ŵ", "ŵ − w", "x", "(ŵ − w)·x", "beyond ±6·scale"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
  );
}

function outputs(result) {
  return h(
    "div",
    { class: "lab-readouts" },
    h("div", { class: "lab-card" }, h("h4", {}, "y = w · x"), h("p", { class: "lab-big", "data-testid": "y" }, formatNumber(result.y))),
    h("div", { class: "lab-card" }, h("h4", {}, "ŷ = ŵ · x"), h("p", { class: "lab-big", "data-testid": "y-hat" }, formatNumber(result.yHat))),
    h(
      "div",
      { class: "lab-card" },
      h("h4", {}, "Δy = Σ(ŵᵢ − wᵢ)xᵢ"),
      h("p", { class: "lab-big", "data-testid": "delta-y" }, (result.deltaY > 0 ? "+" : "") + formatNumber(result.deltaY)),
    ),
  );
}

// The representable values at this scale, each weight (circle) and where it lands (diamond).
function gridPlot(result) {
  const grid = scaleRepresentable(result.scale);
  const values = [...grid, ...result.w];
  const extent = Math.max(...values.map(Math.abs)) || 1;
  const width = 640;
  // Positions from value / extent (never value + extent), so weights near float64's limit do not
  // overflow into NaN coordinates; 0.92 leaves a margin at both ends.
  const x = (value) => 30 + ((0.92 * (value / extent) + 1) / 2) * (width - 60);
  const marks = grid.map((value) => svg("line", { x1: x(value), x2: x(value), y1: 22, y2: 38, class: "lab-mark" }));
  // Label the outermost marks and zero; the table below has every value.
  const labelled = [grid[0], 0, grid[grid.length - 1]];
  const labels = labelled.map((value) => svg("text", { x: x(value), y: 52, "text-anchor": "middle", class: "lab-tick" }, formatNumber(value)));
  const weights = result.w.map((w, i) => [
    svg("line", { x1: x(w), x2: x(result.wHat[i]), y1: 60 + i * 12, y2: 30, class: result.clipped[i] ? "lab-link lab-link-clipped" : "lab-link" }),
    svg("circle", { cx: x(w), cy: 60 + i * 12, r: 4, class: "lab-weight" }, svg("title", {}, `w${i + 1} = ${formatNumber(w)}`)),
    svg("rect", { x: x(result.wHat[i]) - 5, y: 25, width: 10, height: 10, transform: `rotate(45 ${x(result.wHat[i])} 30)`, class: "lab-recon" }, svg("title", {}, `ŵ${i + 1} = ${formatNumber(result.wHat[i])}`)),
  ]);
  const height = 84 + result.w.length * 12;
  const legend = svg("text", { x: 30, y: height - 4, class: "lab-tick" }, "● weight w   ◆ reconstruction ŵ   dashed: clipped");
  return svg(
    "svg",
    { viewBox: `0 0 ${width} ${height}`, class: "lab-grid", role: "img", "aria-label": `representable values at scale ${formatNumber(result.scale)}, each weight and its reconstruction` },
    svg("line", { x1: 30, x2: width - 30, y1: 30, y2: 30, class: "lab-axis" }),
    marks,
    labels,
    weights,
    svg("text", { x: x(E2M1_MAX * result.scale), y: 16, "text-anchor": "middle", class: "lab-tick" }, `+6·scale = ${formatNumber(E2M1_MAX * result.scale)}`),
    legend,
  );
}

// Δy at every slider position, from the typed w and x: the curve, each weight's clipping
// threshold (the scale where |w| = 6·scale) and the best of these scales (smallest |Δy|, the
// smallest scale on a tie).
function errorCurve(result) {
  const points = [];
  for (let i = 0; i <= (LOG2_HIGH - LOG2_LOW) / FINE_STEP; i += 1) {
    const log2 = LOG2_LOW + i * FINE_STEP;
    points.push({ log2, deltaY: scaleAnalyse(result.w, result.x, 2 ** log2).deltaY });
  }
  const best = points.reduce((so, point) => (Math.abs(point.deltaY) < Math.abs(so.deltaY) ? point : so));
  return { points, best };
}

function errorChart(result) {
  const { points, best } = errorCurve(result);
  const width = 640;
  const height = 274;
  const left = 56;
  const right = 20;
  const top = 44;
  const bottom = 214;
  const extent = Math.max(...points.map((point) => Math.abs(point.deltaY)), Math.abs(result.deltaY)) || 1;
  const x = (log2) => left + ((log2 - LOG2_LOW) / (LOG2_HIGH - LOG2_LOW)) * (width - left - right);
  const y = (deltaY) => (top + bottom) / 2 - (deltaY / extent) * ((bottom - top) / 2);
  const line = points.map((point) => `${x(point.log2).toFixed(1)},${y(point.deltaY).toFixed(1)}`).join(" ");
  const ticks = POWERS.map((power) => [
    svg("line", { x1: x(power), x2: x(power), y1: bottom, y2: bottom + 6, class: "lab-axis" }),
    svg("text", { x: x(power), y: bottom + 22, "text-anchor": "middle", class: "lab-tick" }, `2^${power}`.replace("-", "−")),
  ]);
  // Labels alternate between two heights, so thresholds close together stay readable.
  const mark = (kind, scale, label, className, row = 0) => {
    const at = x(Math.min(Math.max(Math.log2(scale), LOG2_LOW), LOG2_HIGH));
    return svg(
      "g",
      { "data-mark": kind, "data-scale": String(scale) },
      svg("line", { x1: at, x2: at, y1: top - 4, y2: bottom, class: className }),
      svg("text", { x: at, y: top - 8 - 16 * row, "text-anchor": "middle", class: "lab-tick lab-mark-label" }, label),
      svg("title", {}, `${label}: scale ${formatNumber(scale)}`),
    );
  };
  // Neighbouring thresholds (in order of scale) take alternate label heights.
  const order = result.w.map((w, i) => i).sort((a, b) => Math.abs(result.w[a]) - Math.abs(result.w[b]));
  const clips = result.w.map((w, i) => (w === 0 ? null : mark("clip", Math.abs(w) / E2M1_MAX, `w${i + 1}`, "lab-mark lab-clip-mark", order.indexOf(i) % 2)));
  return h(
    "figure",
    { class: "lab-figure" },
    svg(
      "svg",
      { viewBox: `0 0 ${width} ${height}`, class: "lab-error-chart", role: "img", "aria-label": `output error Δy against the scale; the best scale here is ${formatNumber(2 ** best.log2)}` },
      svg("line", { x1: left, x2: width - right, y1: y(0), y2: y(0), class: "lab-axis" }),
      svg("line", { x1: left, x2: width - right, y1: bottom, y2: bottom, class: "lab-axis lab-axis-faint" }),
      svg("text", { x: left - 6, y: y(extent) + 5, "text-anchor": "end", class: "lab-tick" }, formatNumber(extent)),
      svg("text", { x: left - 6, y: y(0) + 5, "text-anchor": "end", class: "lab-tick" }, "0"),
      svg("text", { x: left - 6, y: y(-extent) + 5, "text-anchor": "end", class: "lab-tick" }, formatNumber(-extent)),
      ticks,
      svg("polyline", { points: line, class: "lab-curve" }),
      clips,
      mark("best", 2 ** best.log2, "best", "lab-mark lab-best-mark"),
      mark("current", result.scale, "", "lab-mark lab-mark-current"),
      svg("circle", { cx: x(Math.min(Math.max(Math.log2(result.scale), LOG2_LOW), LOG2_HIGH)), cy: y(result.deltaY), r: 6, class: "lab-recon" }),
    ),
    h(
      "figcaption",
      { class: "lab-caption", "data-testid": "chart-caption" },
      `Δy against the scale (log₂ axis): now ${formatNumber(result.deltaY)} at ${formatNumber(result.scale)}; smallest |Δy| ${formatNumber(best.deltaY)} at scale ${formatNumber(2 ** best.log2)}. Lines marked w1… are where each weight starts to clip (|w| = 6·scale): to their left it clips.`,
    ),
  );
}

// A number in the readout that can be dragged sideways (0.01 per pixel) or stepped with the arrow
// keys (0.1, or 1 with Shift), distill-style; it rewrites the row's text trait.
// The drag in progress lives outside the render: each re-render hands the span fresh handlers.
let dragging = null;

function draggable(model, name, values, i, label) {
  const commit = (value) => {
    const next = [...values];
    next[i] = Math.round(value * 100) / 100;
    setTraits(model, { [name]: next.map((each) => formatNumber(each).replace("\u2212", "-")).join(", ") });
  };
  const key = `drag-${name}-${i}`;
  return h(
    "span",
    {
      class: "lab-draggable",
      role: "slider",
      tabindex: "0",
      "aria-label": label,
      "aria-valuenow": String(values[i]),
      "aria-valuetext": formatNumber(values[i]),
      "data-focus": key,
      "data-testid": key,
      onkeydown: (event) => {
        const step = { ArrowUp: 0.1, ArrowRight: 0.1, ArrowDown: -0.1, ArrowLeft: -0.1 }[event.key];
        if (step === undefined) return;
        event.preventDefault();
        commit(values[i] + step * (event.shiftKey ? 10 : 1));
      },
      onpointerdown: (event) => {
        event.target.setPointerCapture(event.pointerId);
        dragging = { key, x: event.clientX, value: values[i] };
      },
      onpointermove: (event) => {
        if (dragging?.key === key) commit(dragging.value + (event.clientX - dragging.x) * 0.01);
      },
      onpointerup: () => {
        dragging = null;
      },
    },
    formatNumber(values[i]),
  );
}

function dragRow(model, result) {
  const row = (name, values, symbol) =>
    h("p", { class: "lab-drag-row" }, `${symbol} = (`, values.map((_, i) => [i ? ", " : "", draggable(model, name, values, i, `${symbol}${i + 1}`)]), ")");
  return h(
    "div",
    { class: "lab-drag-rows" },
    h("p", { class: "lab-caption" }, "Drag a number sideways, or focus it and use the arrow keys, to change it."),
    row("w_text", result.w, "w"),
    row("x_text", result.x, "x"),
  );
}

function validRow(model) {
  const w = parseNumberRow(String(model.get("w_text")), "weights");
  const x = parseNumberRow(String(model.get("x_text")), "inputs");
  const scale = model.get("scale");
  if (!w.ok) return { problem: w.message };
  if (!x.ok) return { problem: x.message };
  if (w.values.length !== x.values.length)
    return { problem: `the weight row has ${w.values.length} numbers and the input row ${x.values.length}; they must match` };
  if (!(Number.isFinite(scale) && scale > 0 && scale <= LARGEST_SCALE)) {
    return { problem: `the scale must be a positive number no larger than ${formatNumber(LARGEST_SCALE)}` };
  }
  try {
    return { ...scaleAnalyse(w.values, x.values, scale), w: w.values, x: x.values, scale };
  } catch (error) {
    return { problem: error.message };
  }
}

function render({ model, el }) {
  return mount({
    model,
    el,
    className: "lab-scale",
    traits: ["w_text", "x_text", "scale", "fine"],
    validate: validRow,
    controls: (ui) => controls(model, ui),
    build: (result) => [
      h("p", { class: "lab-caption" }, `scale ${formatNumber(result.scale)}: the codes reach ±${formatNumber(E2M1_MAX * result.scale)}`),
      dragRow(model, result),
      outputs(result),
      errorChart(result),
      gridPlot(result),
      resultTable(result),
    ],
  });
}

export default { render, check: checker(validRow) };
