// Scale lab: a weight row, an input row and one scale. Shows each reconstructed weight (lab
// convention: nearest scaled E2M1 value, lowest code on a tie, clipping at ±6·scale), the
// per-weight error, y, ŷ and the signed output error, and the grid at the current scale.
// State: the synced traits w_text, x_text and scale. Arithmetic: the codec (codec/).
import { E2M1_MAX } from "./codec/codes/e2m1.js";
import { parseNumber, parseNumberRow } from "./codec/numbers.js";
import { scaleAnalyse, scaleRepresentable } from "./codec/teach/scale.js";
import { h, svg, formatNumber, mount, setTraits, checker, scrollBox } from "./ui.js";

const POWERS = [-6, -5, -4, -3, -2, -1, 0, 1, 2]; // the power-of-two scales offered as buttons

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
  return h(
    "div",
    { class: "lab-controls" },
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
      h("thead", {}, h("tr", {}, ["i", "w", "ŵ", "ŵ − w", "x", "(ŵ − w)·x", ""].map((t) => h("th", { scope: "col" }, t)))),
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
    traits: ["w_text", "x_text", "scale"],
    validate: validRow,
    controls: (ui) => controls(model, ui),
    build: (result) => [
      h("p", { class: "lab-caption" }, `scale ${formatNumber(result.scale)}: the codes reach ±${formatNumber(E2M1_MAX * result.scale)}`),
      outputs(result),
      gridPlot(result),
      resultTable(result),
    ],
  });
}

export default { render, check: checker(validRow) };
