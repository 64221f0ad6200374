// The course page's own text (marimo's Markdown: .markdown.prose, in the page and in a precomputed
// choice's panels) fitted to the screen, once per page, by the presenter toggle every course page
// carries at its foot (presenter.js):
//
// - a number keeps what belongs to it on its line: "= 0.25", "256 × 512", "3.71875 GB" are joined
//   by no-break spaces, so a line breaks before an "=" or a "×", never between it and its number.
// - a short table cell (a number and its unit, a shape, "s₄ = 33", a type, a tensor's name) is
//   kept on one line: a table squeezed into a phone or a medium column wraps its columns at every
//   space and every dot it may. A long cell (a sentence) still wraps between its words.
//   notebooks/course.css draws the mark (.lab-cell-whole).
// - a table wider than its box scrolls sideways and says, above itself, which columns are out of
//   view and on which side (data-lab-hidden, drawn by course.css), so a column behind the edge's
//   fade is never one the reader does not know of.
//
// Only text, classes and attributes change, never nodes added or moved: marimo's React owns them,
// and when it draws a cell again its new text and tables are fitted in turn.

// the longest cell kept whole, in characters: every short cell of the course (a shape, a number
// and its unit, a type, a formula of one field, a tensor's name) fits a 390 px phone at 16 px
export const WHOLE_CELL_CHARS = 24;
export const WHOLE_CELL_CLASS = "lab-cell-whole";
export const HIDDEN_COLUMNS_ATTRIBUTE = "data-lab-hidden";
const FITTED_TEXT = ".markdown.prose";
const FITTED_TABLES = ".markdown.prose table";
const NO_BREAK = "\u00a0";
// an operator and the number after it: "= 0.25", "× 512", "− 0.5", "<< 4", "≈ −3"
const OPERATOR_AND_NUMBER = /([=≈≤≥<>×+−]) (?=[−+-]?[\d.(])/gu;
// a number and the "×" after it: "256 × 512"
const NUMBER_AND_TIMES = /(\d) ×/gu;
// a number and its unit: "3.71875 GB", "12.5 %", "253,113,024 bytes"
const NUMBER_AND_UNIT = /(\d) (?=(?:%|[KMGT]i?B|bytes|bits)(?![\p{L}\d]))/gu;

/** Text whose numbers keep their operators, "×" and units on their line (no-break spaces). */
export function joinedNumbers(text) {
  if (!/\d/.test(text)) return text;
  return text
    .replace(OPERATOR_AND_NUMBER, `$1${NO_BREAK}`)
    .replace(NUMBER_AND_TIMES, `$1${NO_BREAK}×`)
    .replace(NUMBER_AND_UNIT, `$1${NO_BREAK}`);
}

/** Whether a cell's text is short enough to be kept on one line. */
export function keptWhole(text) {
  const words = text.replace(/\s+/g, " ").trim();
  return words.length > 0 && [...words].length <= WHOLE_CELL_CHARS;
}

/** What the line above a table says of the columns out of view: their names, left and right. */
export function hiddenColumnsText(left, right) {
  const list = (names) => names.map((name) => name || "(unnamed)").join(", ");
  const parts = [];
  if (left.length) parts.push(`← ${left.length === 1 ? "1 column" : `${left.length} columns`} to the left: ${list(left)}`);
  if (right.length) parts.push(`${right.length === 1 ? "1 more column" : `${right.length} more columns`} to the right: ${list(right)} →`);
  return parts.join(" · ");
}

function joinNumbersIn(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement?.closest("pre")) continue; // a code block keeps its text as written
    const joined = joinedNumbers(node.data);
    if (joined !== node.data) node.data = joined;
  }
}

// A column counts as out of view when any of it is (a cut column's last digits may be what matters).
function columnsOutOfView(table) {
  const header = table.tHead?.rows[0] ?? table.rows[0];
  if (!header || table.scrollWidth <= table.clientWidth + 1) return { left: [], right: [] };
  const box = table.getBoundingClientRect();
  const left = [];
  const right = [];
  for (const cell of header.cells) {
    const edges = cell.getBoundingClientRect();
    if (edges.left >= box.left - 1 && edges.right <= box.right + 1) continue;
    (edges.left < box.left ? left : right).push(cell.textContent.replace(/\s+/g, " ").trim());
  }
  return { left, right };
}

function tellHiddenColumns(table) {
  if (!table.isConnected || table.clientWidth === 0) return; // hidden: told again when it shows
  const { left, right } = columnsOutOfView(table);
  const text = hiddenColumnsText(left, right);
  if (!text) table.removeAttribute(HIDDEN_COLUMNS_ATTRIBUTE);
  else if (table.getAttribute(HIDDEN_COLUMNS_ATTRIBUTE) !== text) table.setAttribute(HIDDEN_COLUMNS_ATTRIBUTE, text);
}

const tablesFollowed = new WeakSet();
let tableSizes = null;

function fitTable(table) {
  for (const cell of table.querySelectorAll(":scope > * > tr > :is(td, th)")) {
    const whole = keptWhole(cell.textContent);
    if (cell.classList.contains(WHOLE_CELL_CLASS) !== whole) cell.classList.toggle(WHOLE_CELL_CLASS, whole);
  }
  if (tablesFollowed.has(table)) return tellHiddenColumns(table);
  tablesFollowed.add(table);
  let due = false;
  const scrolled = () => {
    if (due) return;
    due = true;
    requestAnimationFrame(() => {
      due = false;
      tellHiddenColumns(table);
    });
  };
  table.addEventListener("scroll", scrolled, { passive: true });
  tableSizes.observe(table); // a new width, a panel shown, a font loaded: told again
}

let pageFitStarted = false;

/** Fit the page's text and tables now and whenever marimo draws more; once per page. */
export function startPageFit() {
  if (pageFitStarted || typeof document === "undefined") return;
  pageFitStarted = true;
  tableSizes = new ResizeObserver((entries) => {
    for (const entry of entries) tellHiddenColumns(entry.target);
  });
  let due = false;
  const fitAll = () => {
    due = false;
    for (const prose of document.querySelectorAll(FITTED_TEXT)) joinNumbersIn(prose);
    for (const table of document.querySelectorAll(FITTED_TABLES)) fitTable(table);
  };
  // a timer, not an animation frame: a page drawn in a tab behind another is fitted too
  new MutationObserver(() => {
    if (!due) {
      due = true;
      setTimeout(fitAll, 30);
    }
  }).observe(document.documentElement, { childList: true, subtree: true, characterData: true });
  fitAll();
}
