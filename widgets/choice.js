// A choice whose every outcome the notebook computed in advance (widgets/choice.py): a menu or a
// slider per control, and outcome panels elsewhere on the page, one per combination of options,
// each marked data-lab-choice="<group>" and data-lab-when='{"control": "option", ...}'. Choosing
// shows the panels whose conditions all hold and hides the rest. No kernel takes part, so the
// control works the same live and on a static page, and what it shows is the kernel's own output
// for that option, computed by the same cells at build time.
//
// The panels are ordinary notebook output in the page (not in this widget's shadow root), so the
// page's own styles draw their tables and charts; the widget finds them through the document.
import { visibleText } from "./codec/text.js";
import { followOutcomes, h, keptNote, setAttr, setText, showOutcomes, watchTheme } from "./ui.js";

/** A number field's typed text as one of its options, or null with the refusal to show, worded as
 * the lab's Python words a number field's (lab.teach.course.whole_number). */
export function typedOption(spec, typed) {
  const text = String(typed).trim();
  if (/^[0-9]{1,9}$/.test(text) && spec.options.includes(String(Number(text)))) return { option: String(Number(text)), refusal: "" };
  const wanted = `${spec.label}: type a whole number from ${spec.options[0]} to ${spec.options.at(-1)}`;
  return { option: null, refusal: text === "" ? `${wanted}; the field is empty.` : `${wanted}, not ${visibleText(text, 40)}.` };
}

function control(spec, current, choose) {
  const id = `lab-choice-${spec.name}-${Math.random().toString(36).slice(2, 8)}`;
  if (spec.kind === "number") {
    // Refused beside the field; the outcomes of the last valid entry stay, dimmed under a note,
    // until the field holds one of its options (a typo keeps the output: ui.js showOutcomes).
    const note = h("p", { class: "lab-message lab-error lab-field-message", id: `${id}-refusal`, role: "alert", hidden: true });
    const input = h("input", {
      id,
      type: "text",
      inputmode: "numeric",
      autocomplete: "off",
      "aria-describedby": `${id}-refusal`,
      onchange: () => {
        const { option, refusal } = typedOption(spec, input.value);
        setText(note, refusal);
        note.hidden = refusal === "";
        setAttr(input, "aria-invalid", refusal === "" ? null : "true");
        choose(spec.name, option);
      },
    });
    const show = (option) => {
      if (option !== null && input.value !== option) input.value = option;
    };
    show(current);
    return { node: h("div", { class: "lab-field lab-choice-control", "data-lab-control": spec.name }, h("label", { for: id }, spec.label), input, note), show };
  }
  if (spec.kind === "slider") {
    const readout = h("output", { class: "lab-choice-value", for: id });
    const input = h("input", {
      id,
      type: "range",
      min: 0,
      max: spec.options.length - 1,
      step: 1,
      oninput: () => choose(spec.name, spec.options[Number(input.value)]),
    });
    const show = (option) => {
      input.value = String(spec.options.indexOf(option));
      setAttr(input, "aria-valuetext", option);
      setText(readout, option);
    };
    show(current);
    return {
      node: h("div", { class: "lab-choice-control", "data-lab-control": spec.name }, h("label", { for: id }, spec.label), h("span", { class: "lab-row" }, input, readout)),
      show,
    };
  }
  const select = h(
    "select",
    { id, onchange: () => choose(spec.name, select.value) },
    spec.options.map((option) => h("option", { value: option }, option)),
  );
  const show = (option) => {
    if (select.value !== option) select.value = option;
  };
  show(current);
  return { node: h("div", { class: "lab-choice-control", "data-lab-control": spec.name }, h("label", { for: id }, spec.label), select), show };
}

function render({ model, el }) {
  el.classList.add("four-bit-lab", "lab-choice");
  const group = model.get("group");
  el.setAttribute("data-lab-group", group);
  const specs = model.get("controls");
  const values = { ...model.get("values") };
  const status = h("p", { class: "lab-caption", "aria-live": "polite" });
  const controls = specs.map((spec) =>
    control(spec, values[spec.name], (name, option) => {
      values[name] = option;
      model.set("values", { ...values });
      model.save_changes();
      apply();
    }),
  );

  // What the controls last held with none refused, and the note over the outcomes kept from it,
  // naming each refused control by its label (null while none is refused).
  let valid = { ...values };
  const keptNoteText = () => {
    const refused = specs.filter((spec) => values[spec.name] === null);
    return refused.length ? keptNote(refused.map((spec) => [spec.label, valid[spec.name]])) : null;
  };

  function apply() {
    if (!Object.values(values).includes(null)) valid = { ...values };
    const { shown, panels } = showOutcomes(group, values, keptNoteText());
    const refused = Object.values(values).includes(null); // a field says why, beside itself
    setText(status, panels === 0 || shown > 0 || refused ? "" : "This choice has no outcome on this page.");
  }

  function follow() {
    for (const [index, spec] of specs.entries()) controls[index].show(values[spec.name]);
  }

  model.on("change:values", () => {
    Object.assign(values, model.get("values"));
    follow();
    apply();
  });
  el.replaceChildren(h("div", { class: "lab-row lab-choice-row" }, controls.map((part) => part.node)), status);
  // marimo may draw the panels after this widget (or redraw them when their cell re-runs live).
  const stopFollowing = followOutcomes(group, () => values, keptNoteText);
  apply();
  const stopTheme = watchTheme(el, () => {});
  return () => {
    stopFollowing();
    stopTheme();
  };
}

export default { render };
