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
import { h, svg, formatNumber, mountInPlace, setTraits, setText, setAttr, setAttrs, resize, checker, stackingTable, watchSize, svgWidth, textWidth, labelRows, DRAWN_WIDTH } from "./ui.js";

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

// The controls, built once; `update` writes what the traits say into them on every change.
function controls(model, ui) {
  const powerButtons = POWERS.map((power) =>
    h("button", { type: "button", "data-focus": `power-${power}`, onclick: () => setTraits(model, { scale: 2 ** power }) }, `2^${power}`.replace("-", "−")),
  );
  const onSlider = (event) => {
    const value = Number(event.target.value);
    const fine = model.get("fine") === true;
    setTraits(model, { scale: 2 ** (fine ? Math.round(value / FINE_STEP) * FINE_STEP : Math.round(value)) });
  };
  const slider = h("input", { type: "range", class: "lab-slider", min: LOG2_LOW, max: LOG2_HIGH, "data-focus": "scale-slider", oninput: onSlider, onchange: onSlider });
  const fineButton = h("button", { type: "button", class: "lab-chip", "data-focus": "fine", onclick: () => setTraits(model, { fine: model.get("fine") !== true }) }, "fine steps");
  const node = h(
    "div",
    { class: "lab-controls" },
    h("div", { class: "lab-row lab-slider-row" }, h("label", { class: "lab-slider-label" }, "scale (log₂ steps)", slider), fineButton),
    ui.field({ key: "w", label: "weights w", value: () => String(model.get("w_text")), commit: commitRow("w_text", "weights") }),
    ui.field({ key: "x", label: "inputs x", value: () => String(model.get("x_text")), commit: commitRow("x_text", "inputs") }),
    h("div", { class: "lab-row", role: "group", "aria-label": "power-of-two scales" }, h("span", {}, "scale"), powerButtons),
    ui.field({ key: "scale-entry", label: "scale, any positive number", name: "scale", value: () => String(model.get("scale")), commit: commitScale }),
  );
  return {
    node,
    update() {
      const scale = model.get("scale");
      const fine = model.get("fine") === true;
      POWERS.forEach((power, index) => {
        const on = 2 ** power === scale;
        setAttrs(powerButtons[index], { class: on ? "lab-chip lab-chip-on" : "lab-chip", "aria-pressed": on ? "true" : "false" });
      });
      const log2 = Math.log2(scale);
      // The step first: the value is then rounded to it, as the browser does for a new slider.
      setAttrs(slider, { step: fine ? FINE_STEP : 1, "aria-valuetext": `scale ${formatNumber(scale)}` });
      const value = Number.isFinite(log2) ? String(Math.min(Math.max(log2, LOG2_LOW), LOG2_HIGH)) : "0";
      if (slider.value !== value) slider.value = value;
      setAttr(fineButton, "aria-pressed", fine ? "true" : "false");
    },
  };
}

// One row per weight: i, w, ŵ, the error, x, its share of Δy and whether it clipped. Where the
// columns do not fit (a phone), each row is a block of named values (ui.js stackingTable).
function resultTable() {
  const body = h("tbody", { role: "rowgroup" });
  const rows = [];
  const makeRow = () => {
    const cells = Array.from({ length: 7 }, () => h("td", { role: "cell" }));
    return { nodes: [h("tr", { role: "row" }, cells)], cells };
  };
  const table = stackingTable(
    "each weight and its reconstruction",
    h(
      "table",
      { class: "lab-table", role: "table", "aria-label": "each weight and its reconstruction" },
      h("thead", { role: "rowgroup" }, h("tr", { role: "row" }, ["i", "w", "ŵ", "ŵ − w", "x", "(ŵ − w)·x", "beyond ±6·scale"].map((t) => h("th", { scope: "col", role: "columnheader" }, t)))),
      body,
    ),
  );
  return {
    node: table.node,
    patch(result) {
      resize(body, rows, result.wHat.length, makeRow);
      rows.forEach(({ nodes: [row], cells }, i) => {
        setAttr(row, "class", result.clipped[i] ? "lab-clipped" : "");
        const texts = [
          String(i + 1),
          formatNumber(result.w[i]),
          formatNumber(result.wHat[i]),
          formatNumber(result.weightError[i]),
          formatNumber(result.x[i]),
          formatNumber(result.terms[i]),
          result.clipped[i] ? "clipped" : "",
        ];
        cells.forEach((cell, column) => setText(cell, texts[column]));
      });
      table.fit();
    },
  };
}

function outputs() {
  const y = h("p", { class: "lab-big", "data-testid": "y" });
  const yHat = h("p", { class: "lab-big", "data-testid": "y-hat" });
  const deltaY = h("p", { class: "lab-big", "data-testid": "delta-y" });
  return {
    node: h(
      "div",
      { class: "lab-readouts" },
      h("div", { class: "lab-card" }, h("h4", {}, "y = w · x"), y),
      h("div", { class: "lab-card" }, h("h4", {}, "ŷ = ŵ · x"), yHat),
      h("div", { class: "lab-card" }, h("h4", {}, "Δy = Σ(ŵᵢ − wᵢ)xᵢ"), deltaY),
    ),
    patch(result) {
      setText(y, formatNumber(result.y));
      setText(yHat, formatNumber(result.yHat));
      setText(deltaY, (result.deltaY > 0 ? "+" : "") + formatNumber(result.deltaY));
    },
  };
}

// The representable values at this scale, each weight (circle) and where it lands (diamond).
// Drawn to its width on screen like the error chart; where labels would touch, zero's goes first,
// then the lowest value's, and the legend takes two lines.
function gridPlot() {
  let width = DRAWN_WIDTH;
  const node = svg("svg", { class: "lab-grid", role: "img" });
  const labels = [0, 1, 2].map(() => svg("text", { y: 52, "text-anchor": "middle", class: "lab-tick" }));
  const reach = svg("text", { y: 16, "text-anchor": "middle", class: "lab-tick" });
  const legend = [svg("text", { class: "lab-tick" }, "● weight w   ◆ reconstruction ŵ"), svg("text", { class: "lab-tick" }, "dashed: clipped")];
  const axis = svg("line", { x1: 30, y1: 30, y2: 30, class: "lab-axis" });
  node.append(axis, ...labels, reach, ...legend);
  const marks = [];
  const weights = [];
  const makeMark = () => ({ nodes: [svg("line", { y1: 22, y2: 38, class: "lab-mark" })] });
  const makeWeight = (i) => {
    const circleTitle = svg("title", {});
    const reconTitle = svg("title", {});
    return {
      nodes: [
        svg("line", { y1: 60 + i * 12, y2: 30 }),
        svg("circle", { cy: 60 + i * 12, r: 4, class: "lab-weight" }, circleTitle),
        svg("rect", { y: 25, width: 10, height: 10, class: "lab-recon" }, reconTitle),
      ],
      circleTitle,
      reconTitle,
    };
  };
  let result = null;
  let grid = [];

  // Everything placed along x, for this width.
  function layout() {
    const values = [...grid, ...result.w];
    const extent = Math.max(...values.map(Math.abs)) || 1;
    // Positions from value / extent (never value + extent), so weights near float64's limit do not
    // overflow into NaN coordinates; 0.92 leaves a margin at both ends.
    const x = (value) => 30 + ((0.92 * (value / extent) + 1) / 2) * (width - 60);
    const [legendFirst, legendSecond] = legend;
    const oneLegendLine = 30 + textWidth(legendFirst) + 24 + textWidth(legendSecond) <= width;
    const height = 84 + result.w.length * 12 + (oneLegendLine ? 0 : 20);
    setAttr(node, "viewBox", `0 0 ${width} ${height}`);
    setAttr(axis, "x2", width - 30);
    marks.forEach(({ nodes: [mark] }, i) => setAttrs(mark, { x1: x(grid[i]), x2: x(grid[i]) }));
    // Label the outermost marks and zero (the table below has every value), leaving out zero's
    // label, then the lowest's, where they would touch.
    const labelled = [grid[0], 0, grid[grid.length - 1]];
    const spans = labels.map((label, i) => [x(labelled[i]) - textWidth(label) / 2, x(labelled[i]) + textWidth(label) / 2]);
    const apart = (a, b) => spans[a][1] + 6 <= spans[b][0];
    const shown = apart(0, 1) && apart(1, 2) ? [true, true, true] : [!(spans[0][1] + 6 > spans[2][0]), false, true];
    labels.forEach((label, i) => setAttrs(label, { x: x(labelled[i]), visibility: shown[i] ? null : "hidden" }));
    weights.forEach(({ nodes: [link, circle, recon] }, i) => {
      const w = result.w[i];
      const wHat = result.wHat[i];
      setAttrs(link, { x1: x(w), x2: x(wHat) });
      setAttr(circle, "cx", x(w));
      setAttrs(recon, { x: x(wHat) - 5, transform: `rotate(45 ${x(wHat)} 30)` });
    });
    const half = textWidth(reach) / 2;
    setAttr(reach, "x", Math.min(Math.max(x(E2M1_MAX * result.scale), half), width - half));
    setAttrs(legendFirst, { x: 30, y: height - (oneLegendLine ? 4 : 24) });
    setAttrs(legendSecond, { x: oneLegendLine ? 30 + textWidth(legendFirst) + 24 : 30, y: height - 4 });
  }

  // Laid out again on the page (its labels measured, not estimated) and at every new width; the
  // frame is HTML, since the sentinel that watches it cannot sit in an SVG.
  const frame = h("div", {}, node);
  watchSize(frame, () => {
    width = svgWidth(node);
    if (result !== null) layout();
  });
  return {
    node: frame,
    patch(next) {
      result = next;
      grid = scaleRepresentable(result.scale);
      setAttr(node, "aria-label", `representable values at scale ${formatNumber(result.scale)}, each weight and its reconstruction`);
      resize(node, marks, grid.length, makeMark, labels[0]);
      [grid[0], 0, grid[grid.length - 1]].forEach((value, i) => setText(labels[i], formatNumber(value)));
      resize(node, weights, result.w.length, makeWeight, reach);
      weights.forEach(({ nodes: [link], circleTitle, reconTitle }, i) => {
        setAttr(link, "class", result.clipped[i] ? "lab-link lab-link-clipped" : "lab-link");
        setText(circleTitle, `w${i + 1} = ${formatNumber(result.w[i])}`);
        setText(reconTitle, `ŵ${i + 1} = ${formatNumber(result.wHat[i])}`);
      });
      setText(reach, `+6·scale = ${formatNumber(E2M1_MAX * result.scale)}`);
      layout();
    },
  };
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
  return { points, best, largest: Math.max(...points.map((point) => Math.abs(point.deltaY))) };
}

// The curve depends on w and x only: it is computed again when they change, and redrawn when the
// vertical range changes (a current Δy off the curve can widen it); a new scale moves the marker.
// The chart is drawn to its width on screen (svgWidth), so its labels keep their size on a phone;
// tick labels thin out where they would touch, and the labels above the plot (each weight's
// clipping threshold, the best scale) take the lowest of three rows where they do not touch
// another. One that fits no row is left out; its line and its title (a tooltip) remain.
function errorChart() {
  const height = 302;
  const right = 20;
  const top = 72; // room for three rows of labels, 20 apart: 16 px type is about 19 px from top to bottom
  const bottom = 242;
  const rowsAbove = 3;
  let width = DRAWN_WIDTH;
  let left = 56; // room for the y axis's labels, widened to fit them
  const x = (log2) => left + ((log2 - LOG2_LOW) / (LOG2_HIGH - LOG2_LOW)) * (width - left - right);
  const at = (scale) => x(Math.min(Math.max(Math.log2(scale), LOG2_LOW), LOG2_HIGH));
  const makeMark = (kind, className) => {
    const line = svg("line", { y1: top - 4, y2: bottom, class: className });
    const text = svg("text", { "text-anchor": "middle", class: "lab-tick lab-mark-label" });
    const title = svg("title", {});
    return { nodes: [svg("g", { "data-mark": kind }, line, text, title)], line, text, title, scale: 1 };
  };
  const place = (mark, scale, label) => {
    mark.scale = scale;
    setAttr(mark.nodes[0], "data-scale", String(scale));
    setText(mark.text, label);
    setText(mark.title, `${label}: scale ${formatNumber(scale)}`);
  };
  const highest = svg("text", { "text-anchor": "end", class: "lab-tick" });
  const lowest = svg("text", { "text-anchor": "end", class: "lab-tick" });
  const zero = svg("line", { class: "lab-axis" });
  const zeroLabel = svg("text", { "text-anchor": "end", class: "lab-tick" }, "0");
  const floor = svg("line", { y1: bottom, y2: bottom, class: "lab-axis lab-axis-faint" });
  const curveLine = svg("polyline", { class: "lab-curve" });
  const best = makeMark("best", "lab-mark lab-best-mark");
  const current = makeMark("current", "lab-mark lab-mark-current");
  const dot = svg("circle", { r: 6, class: "lab-recon" });
  const ticks = POWERS.map((power) => ({
    power,
    line: svg("line", { y1: bottom, y2: bottom + 6, class: "lab-axis" }),
    label: svg("text", { y: bottom + 24, "text-anchor": "middle", class: "lab-tick" }, `2^${power}`.replace("-", "−")),
  }));
  const chart = svg(
    "svg",
    { class: "lab-error-chart", role: "img" },
    zero,
    floor,
    highest,
    zeroLabel,
    lowest,
    ticks.map((tick) => [tick.line, tick.label]),
    curveLine,
    best.nodes,
    current.nodes,
    dot,
  );
  const caption = h("figcaption", { class: "lab-caption", "data-testid": "chart-caption" });
  const node = h("figure", { class: "lab-figure" }, chart, caption);
  // Laid out again on the page (its labels measured, not estimated) and at every new width.
  watchSize(node, () => {
    width = svgWidth(chart);
    if (result !== null) layout();
  });
  const clips = [];
  let curve = null;
  let result = null;
  let extent = 1;
  const y = (deltaY) => (top + bottom) / 2 - (deltaY / extent) * ((bottom - top) / 2);

  // Everything placed along x, for this width: the axis and its labels, the curve and the marks.
  function layout() {
    left = Math.max(56, Math.ceil(Math.max(textWidth(highest), textWidth(lowest))) + 10);
    setAttr(chart, "viewBox", `0 0 ${width} ${height}`);
    setAttrs(zero, { x1: left, x2: width - right });
    setAttrs(floor, { x1: left, x2: width - right });
    for (const label of [highest, zeroLabel, lowest]) setAttr(label, "x", left - 6);
    const spacing = x(1) - x(0);
    const widest = Math.max(...ticks.map((tick) => textWidth(tick.label)));
    let every = 1; // label every tick, or every second or fourth, so that neighbours never touch
    while (every < 8 && spacing * every < widest + 8) every *= 2;
    ticks.forEach((tick, i) => {
      setAttrs(tick.line, { x1: x(tick.power), x2: x(tick.power) });
      setAttrs(tick.label, { x: x(tick.power), visibility: i % every === 0 ? null : "hidden" });
    });
    setAttr(curveLine, "points", curve.points.map((point) => `${x(point.log2).toFixed(1)},${y(point.deltaY).toFixed(1)}`).join(" "));
    for (const mark of [best, current, ...clips]) setAttrs(mark.line, { x1: at(mark.scale), x2: at(mark.scale) });
    setAttrs(dot, { cx: at(result.scale), cy: y(result.deltaY) });
    // Labels above the plot, left to right, each in the lowest row where it clears the one before
    // (ui.js labelRows).
    const labelled = [best, ...clips].sort((a, b) => at(a.scale) - at(b.scale));
    const halves = labelled.map((mark) => textWidth(mark.text) / 2);
    const centres = labelled.map((mark, i) => Math.min(Math.max(at(mark.scale), halves[i]), width - halves[i])); // kept inside the chart
    const rowOf = labelRows(centres.map((centre, i) => [centre - halves[i], centre + halves[i]]), rowsAbove);
    labelled.forEach((mark, i) => setAttrs(mark.text, { x: centres[i], y: top - 14 - 20 * Math.max(rowOf[i], 0), visibility: rowOf[i] < 0 ? "hidden" : null }));
  }

  return {
    node,
    patch(next, changed) {
      result = next;
      const rows = changed.has("w_text") || changed.has("x_text");
      if (rows) {
        curve = errorCurve(result);
        setAttr(chart, "aria-label", `output error Δy against the scale; the best scale here is ${formatNumber(2 ** curve.best.log2)}`);
        place(best, 2 ** curve.best.log2, "best");
      }
      if (changed.has("w_text")) {
        const thresholds = [];
        result.w.forEach((w, i) => {
          if (w !== 0) thresholds.push({ scale: Math.abs(w) / E2M1_MAX, label: `w${i + 1}` });
        });
        resize(chart, clips, thresholds.length, () => makeMark("clip", "lab-mark lab-clip-mark"), best.nodes[0]);
        clips.forEach((mark, i) => place(mark, thresholds[i].scale, thresholds[i].label));
      }
      extent = Math.max(curve.largest, Math.abs(result.deltaY)) || 1;
      setAttrs(zero, { y1: y(0), y2: y(0) });
      setAttrs(highest, { y: y(extent) + 5 });
      setText(highest, formatNumber(extent));
      setAttr(zeroLabel, "y", y(0) + 5);
      setAttrs(lowest, { y: y(-extent) + 5 });
      setText(lowest, formatNumber(-extent));
      place(current, result.scale, "");
      layout();
      setText(
        caption,
        `Δy against the scale (log₂ axis): now ${formatNumber(result.deltaY)} at ${formatNumber(result.scale)}; smallest |Δy| ${formatNumber(curve.best.deltaY)} at scale ${formatNumber(2 ** curve.best.log2)}. Lines marked w1… are where each weight starts to clip (|w| = 6·scale): to their left it clips.`,
      );
    },
  };
}

// A number in the readout that can be dragged sideways (0.01 per pixel) or stepped with the arrow
// keys (0.1, or 1 with Shift), distill-style; it rewrites the row's text trait. The span stays
// while it is dragged; the drag in progress is kept here.
let dragging = null;

// `values()` is the row as the figure shows it now, read when a key or the pointer moves.
function draggable(model, name, values, i, label) {
  const commit = (value) => {
    const next = [...values()];
    next[i] = Math.round(value * 100) / 100;
    setTraits(model, { [name]: next.map((each) => formatNumber(each).replace("\u2212", "-")).join(", ") });
  };
  const key = `drag-${name}-${i}`;
  return h("span", {
    class: "lab-draggable",
    role: "slider",
    tabindex: "0",
    "aria-label": label,
    "data-focus": key,
    "data-testid": key,
    onkeydown: (event) => {
      const step = { ArrowUp: 0.1, ArrowRight: 0.1, ArrowDown: -0.1, ArrowLeft: -0.1 }[event.key];
      if (step === undefined) return;
      event.preventDefault();
      commit(values()[i] + step * (event.shiftKey ? 10 : 1));
    },
    onpointerdown: (event) => {
      event.target.setPointerCapture(event.pointerId);
      dragging = { key, x: event.clientX, value: values()[i] };
    },
    onpointermove: (event) => {
      if (dragging?.key === key) commit(dragging.value + (event.clientX - dragging.x) * 0.01);
    },
    onpointerup: () => {
      dragging = null;
    },
  });
}

function dragRow(model, name, symbol) {
  let values = [];
  const close = document.createTextNode(")");
  const node = h("p", { class: "lab-drag-row" }, `${symbol} = (`, close);
  const numbers = [];
  const make = (i) => {
    const span = draggable(model, name, () => values, i, `${symbol}${i + 1}`);
    return { nodes: i ? [document.createTextNode(", "), span] : [span], span };
  };
  return {
    node,
    patch(row) {
      values = row;
      resize(node, numbers, row.length, make, close);
      numbers.forEach(({ span }, i) => {
        setAttrs(span, { "aria-valuenow": String(row[i]), "aria-valuetext": formatNumber(row[i]) });
        setText(span, formatNumber(row[i]));
      });
    },
  };
}

function figure(model, first) {
  const caption = h("p", { class: "lab-caption" });
  const wRow = dragRow(model, "w_text", "w");
  const xRow = dragRow(model, "x_text", "x");
  const readouts = outputs();
  const chart = errorChart();
  const grid = gridPlot();
  const table = resultTable();
  // What each part depends on: the caption on the scale, each draggable row on its own text, the
  // grid on the scale and the weights; the readouts, chart and table on all three.
  function update(result, changed) {
    if (changed.has("scale")) {
      setText(caption, `scale ${formatNumber(result.scale)}: the codes reach ±${formatNumber(E2M1_MAX * result.scale)}`);
    }
    if (changed.has("w_text")) wRow.patch(result.w);
    if (changed.has("x_text")) xRow.patch(result.x);
    if (!(changed.has("w_text") || changed.has("x_text") || changed.has("scale"))) return; // only `fine`
    readouts.patch(result);
    chart.patch(result, changed);
    if (changed.has("w_text") || changed.has("scale")) grid.patch(result);
    table.patch(result);
  }
  update(first, new Set(TRAITS));
  return {
    nodes: [
      caption,
      h("div", { class: "lab-drag-rows" }, h("p", { class: "lab-caption" }, "Drag a number sideways, or focus it and use the arrow keys, to change it."), wRow.node, xRow.node),
      readouts.node,
      chart.node,
      grid.node,
      table.node,
    ],
    update,
  };
}

function validRow(model) {
  const w = parseNumberRow(String(model.get("w_text")), "weights");
  const x = parseNumberRow(String(model.get("x_text")), "inputs");
  const scale = model.get("scale");
  if (!w.ok) return { problem: w.message };
  if (!x.ok) return { problem: x.message };
  if (w.values.length !== x.values.length) {
    const count = (n) => `${n} number${n === 1 ? "" : "s"}`;
    return { problem: `the weight row has ${count(w.values.length)} and the input row ${count(x.values.length)}; they must match` };
  }
  if (!(Number.isFinite(scale) && scale > 0 && scale <= LARGEST_SCALE)) {
    return { problem: `the scale must be a positive number no larger than ${formatNumber(LARGEST_SCALE)}` };
  }
  try {
    return { ...scaleAnalyse(w.values, x.values, scale), w: w.values, x: x.values, scale };
  } catch (error) {
    return { problem: error.message };
  }
}

const TRAITS = ["w_text", "x_text", "scale", "fine"];

function render({ model, el }) {
  return mountInPlace({
    model,
    el,
    className: "lab-scale",
    traits: TRAITS,
    validate: validRow,
    controls: (ui) => controls(model, ui),
    figure: (result) => figure(model, result),
  });
}

export default { render, check: checker(validRow) };
