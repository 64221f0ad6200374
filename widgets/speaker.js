// The speaker view of serve --class (classroom/teacher_view.py inlines this bundle): the note for
// the slide a course page shows as slides (NN_name.html?slides) in another tab of this browser,
// followed live, and every note of every notebook to read ahead. The slides tab says which slide
// is showing on a BroadcastChannel (publish/site.py's slide follower); the notes come from
// the server for the teacher's token, the link's fragment, and never reach a student's page.
const view = document.getElementById("class-page");
const notesPath = view.dataset.source;
const speakerToken = location.hash.slice(1);
const SLIDES_CHANNEL = "four-bit-lab:slides";

function part(name, attributes = {}, ...children) {
  const node = document.createElement(name);
  for (const [attribute, value] of Object.entries(attributes)) node.setAttribute(attribute, value);
  node.append(...children);
  return node;
}

const where = part("p", { class: "slide", role: "status", "data-testid": "speaker-slide" }, "No slides open yet.");
const heading = part("h2", { "data-testid": "speaker-heading" });
const note = part("p", { class: "note", "data-testid": "speaker-note" });
const next = part("p", { class: "muted", "data-testid": "speaker-next" });
const problem = part("p", { class: "error", role: "alert", "data-testid": "teacher-problem", hidden: "" });
const library = part("div", {});
let notebooks = []; // [{page, number, title, notes: [[heading, note], …]}]
let showing = null; // the last slide a slides tab told of

function showSlide() {
  if (showing === null) return;
  const notebook = notebooks.find((entry) => entry.page === showing.page);
  const name = notebook ? `${notebook.number} · ${notebook.title}` : showing.page;
  where.textContent = `Notebook ${name}: slide ${showing.slide} of ${showing.of}`;
  heading.textContent = showing.heading || "(a slide before the first heading)";
  const found = notebook?.notes.find(([title]) => title === showing.heading);
  note.textContent = found ? found[1] : "No note for this part of the notebook.";
  next.textContent = showing.next ? `Next: ${showing.next}` : "This is the last part of the notebook.";
}

function showLibrary() {
  library.replaceChildren(
    part("h2", {}, "Open a notebook as slides"),
    part("p", { class: "muted" }, "Each link opens a course page as slides in a new tab of this browser; put that tab on the projector, and this page follows its slides."),
    ...notebooks.map((notebook) => {
      const link = part("a", { href: `/${notebook.page}?slides&present`, target: "_blank", rel: "noopener" }, `${notebook.number} · ${notebook.title}`);
      const all = part("details", {}, part("summary", {}, `its ${notebook.notes.length} notes`), ...notebook.notes.map(([title, text]) => part("p", {}, part("strong", {}, title), ` ${text}`)));
      return part("section", { "data-notebook": notebook.page }, part("p", {}, link), all);
    }),
  );
}

const back = part("p", {}, part("a", { href: `/class#${speakerToken}` }, "The room's answers"));
view.replaceChildren(where, heading, note, next, problem, library, back);

async function loadNotes() {
  try {
    const reply = await fetch(notesPath, { headers: speakerToken ? { Authorization: `Bearer ${speakerToken}` } : {}, cache: "no-store" });
    const body = await reply.json();
    if (!reply.ok) {
      problem.textContent = `The server refused: ${String(body.error)}.`;
      problem.hidden = false;
      where.textContent = "";
      return;
    }
    notebooks = body.notebooks;
    showLibrary();
    showSlide();
    if ("BroadcastChannel" in window) {
      const channel = new BroadcastChannel(SLIDES_CHANNEL);
      channel.onmessage = (event) => {
        const told = event.data;
        if (told && typeof told.page === "string" && Number.isInteger(told.slide)) {
          showing = told;
          showSlide();
        }
      };
      channel.postMessage({ ask: true }); // a slides tab opened before this page says where it is
    }
  } catch {
    problem.textContent = "The server did not answer (has serve stopped?); reload this page once it runs.";
    problem.hidden = false;
  }
}

loadNotes();
