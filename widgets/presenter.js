// The course-wide presenter toggle every course page carries at its foot: one button that turns
// the whole page (prose, tables, charts and every widget) large enough for a projector, and
// remembers the choice for the next page (ui.js, startCoursePresenter). It has no traits: the
// mode is the page's own state, not the notebook's, so a static page toggles it with no kernel.
// Being on every course page, it also fits the page's text and tables to the screen (page_fit.js).
import { startPageFit } from "./page_fit.js";
import { h, setAttr, setText, watchTheme, coursePresenter, setCoursePresenter, startCoursePresenter } from "./ui.js";

function render({ el }) {
  el.classList.add("four-bit-lab", "lab-presenter-switch");
  startCoursePresenter();
  startPageFit();
  const note = h("span", { class: "lab-caption" });
  const button = h(
    "button",
    {
      type: "button",
      class: "lab-chip lab-course-presenter-toggle",
      onclick: () => {
        setCoursePresenter(!coursePresenter());
        // The page grows or shrinks around the button; keep it where the keyboard left it.
        button.scrollIntoView({ block: "nearest" });
      },
    },
    "Presenter mode",
  );
  function follow() {
    const on = coursePresenter();
    setAttr(button, "aria-pressed", on ? "true" : "false");
    setText(note, on ? "The whole page is enlarged for a projector; press again to leave." : "Enlarges the whole page for a projector; a link with ?present opens a page so.");
  }
  el.replaceChildren(h("div", { class: "lab-row" }, button, note));
  follow();
  return watchTheme(el, follow);
}

export default { render };
