// The code editors' common part: CodeMirror 6 mounted over a plain <textarea> (which stays
// the form field, so the page still works without JavaScript), with the highlighting of
// one of the languages its bundle brings. Two bundles (esbuild, `npm run build:editor`,
// into platform/web/static/web/vendor/codemirror/): editor.js (frontend/editor.js:
// Python, the learner's page) and authoring-editor.js (frontend/authoring-editor.js:
// Python, Markdown and TOML, the authoring pages), each setting window.gradlabEditor.
//
// Strict CSP (style-src 'self'): CodeMirror injects its styles at run time, into a
// <style> element when it lives in the document, which the policy blocks, or into a
// constructed style sheet (adoptedStyleSheets) when it lives in a shadow root, which the
// policy allows. So the editor is mounted in a shadow root, and all its styles, ours
// included, are CodeMirror themes. Highlighting uses @lezer/highlight's stable "tok-*"
// classes (tok-keyword, tok-string...).

import { closeBrackets, closeBracketsKeymap } from "@codemirror/autocomplete";
import {
  defaultKeymap,
  history,
  historyKeymap,
  indentLess,
  indentMore,
} from "@codemirror/commands";
import {
  bracketMatching,
  indentOnInput,
  indentUnit,
  syntaxHighlighting,
} from "@codemirror/language";
import {
  countColumn,
  EditorSelection,
  EditorState,
  Prec,
  StateEffect,
  StateField,
} from "@codemirror/state";
import {
  Decoration,
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";

const INDENT_WIDTH = 4;

// Colours of site.css (light theme, WCAG AA contrast on white).
const editorTheme = EditorView.theme({
  "&": {
    border: "1px solid #8c959f",
    borderRadius: "6px",
    backgroundColor: "#ffffff",
    color: "#1b1f24",
    fontSize: "0.95rem",
    maxHeight: "36rem",
  },
  "&.cm-focused": { outline: "3px solid #ffbf47", outlineOffset: "2px" },
  ".cm-scroller": {
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, monospace',
    lineHeight: "1.5",
    overflow: "auto",
  },
  ".cm-content, .cm-gutter": { minHeight: "18rem" },
  ".cm-gutters": { backgroundColor: "#f6f8fa", borderRight: "1px solid #d0d7de", color: "#57606a" },
  ".cm-activeLine": { backgroundColor: "#f1f6ff" },
  ".cm-activeLineGutter": { backgroundColor: "#e3ecfa" },
  "&.cm-focused .cm-matchingBracket": { backgroundColor: "#d7f0dd", outline: "1px solid #8fd19e" },
  "&.cm-focused .cm-nonmatchingBracket": { backgroundColor: "#fdecec" },
  ".tok-keyword": { color: "#a0176b", fontWeight: "600" },
  ".tok-string, .tok-string2": { color: "#0a5c2a" },
  ".tok-number, .tok-bool, .tok-atom": { color: "#0550ae" },
  ".tok-comment": { color: "#57606a", fontStyle: "italic" },
  ".tok-definition": { color: "#6639ba" },
  ".tok-propertyName": { color: "#8a4600" },
  ".tok-className, .tok-typeName": { color: "#8a4600" },
  ".tok-operator": { color: "#1b1f24" },
  ".tok-invalid": { color: "#a4161a", textDecoration: "underline wavy" },
  ".tok-heading": { color: "#0550ae", fontWeight: "700" },
  ".tok-emphasis": { fontStyle: "italic" },
  ".tok-strong": { fontWeight: "700" },
  ".tok-link, .tok-url": { color: "#0a5c2a", textDecoration: "underline" },
  ".tok-monospace": { color: "#8a4600" },
  ".tok-quote": { color: "#57606a", fontStyle: "italic" },
  ".tok-meta, .tok-processingInstruction": { color: "#57606a" },
  ".cm-problem-line": { backgroundColor: "#fdecec", boxShadow: "inset 3px 0 0 #a4161a" },
  // A phone zooms in on focusing text under 16 px.
  "@media (pointer: coarse)": { ".cm-scroller": { fontSize: "1rem" } },
});

// A line the server named in an error (PackageError: file and line), marked until the
// text changes.
const setProblem = StateEffect.define();
const problemLine = Decoration.line({ class: "cm-problem-line" });
const problemField = StateField.define({
  create: () => Decoration.none,
  update(marks, transaction) {
    if (transaction.docChanged) return Decoration.none;
    for (const effect of transaction.effects) {
      if (effect.is(setProblem)) {
        const line = transaction.state.doc.line(effect.value);
        return Decoration.set([problemLine.range(line.from)]);
      }
    }
    return marks;
  },
  provide: (field) => EditorView.decorations.from(field),
});

// Marks line `number` (1-based); with `show`, also puts the cursor there and scrolls it
// into view.
function markLine(view, number, show) {
  const line = view.state.doc.line(Math.min(Math.max(1, number), view.state.doc.lines));
  const effects = [setProblem.of(line.number)];
  if (!show) {
    view.dispatch({ effects });
    return;
  }
  effects.push(EditorView.scrollIntoView(line.from, { y: "center" }));
  view.dispatch({ effects, selection: { anchor: line.from } });
  view.focus();
}

// Tab: indent the selected lines, or with no selection insert spaces up to the next
// indent stop at the cursor (what the textarea version did).
function indentOrInsertSpaces({ state, dispatch }) {
  if (state.readOnly) return false;
  if (state.selection.ranges.some((range) => !range.empty)) {
    return indentMore({ state, dispatch });
  }
  const transaction = state.changeByRange((range) => {
    const line = state.doc.lineAt(range.head);
    const column = countColumn(line.text.slice(0, range.head - line.from), state.tabSize);
    const spaces = " ".repeat(INDENT_WIDTH - (column % INDENT_WIDTH));
    return {
      changes: { from: range.head, insert: spaces },
      range: EditorSelection.cursor(range.head + spaces.length),
    };
  });
  dispatch(state.update(transaction, { scrollIntoView: true, userEvent: "input" }));
  return true;
}

function pageKeys(onSubmit, onEscape) {
  const run = (action) => () => {
    action();
    return true;
  };
  // Highest precedence: the default keymap binds Mod-Enter to "insert blank line".
  return Prec.highest(
    keymap.of([
      { key: "Mod-Enter", run: run(onSubmit), preventDefault: true },
      { key: "Escape", run: run(onEscape) },
      { key: "Tab", run: indentOrInsertSpaces, shift: indentLess },
    ]),
  );
}

// Keeps the textarea's value in step and tells its listeners (the statement's live
// preview listens for "input" on it, with or without the editor).
function copyInto(textarea) {
  return EditorView.updateListener.of((update) => {
    if (!update.docChanged) return;
    textarea.value = update.state.doc.toString();
    textarea.dispatchEvent(new Event("input"));
  });
}

// An id reference (aria-describedby) cannot cross the shadow root; element reflection can.
function describeBy(view, textarea) {
  const help = document.getElementById(textarea.getAttribute("aria-describedby") || "");
  if (help && "ariaDescribedByElements" in view.contentDOM) {
    view.contentDOM.ariaDescribedByElements = [help];
  }
}

// Mounts the editor right after `textarea` (in a shadow root of its own), hides the
// textarea and keeps its value in step with the editor's text, so the form always
// sends what is on screen. `languages`: name -> {support(), label, wrap}; `language`:
// one of its names (default: the first).
function attach(languages, textarea, { onSubmit, onEscape, language }) {
  const lang = languages[language] || Object.values(languages)[0];
  const host = document.createElement("div");
  host.id = "code-editor";
  host.className = "code-editor";
  textarea.after(host);
  const root = host.attachShadow({ mode: "open" });
  const view = new EditorView({
    root,
    parent: root,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightActiveLine(),
        drawSelection(),
        history(),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        lang.support(),
        syntaxHighlighting(classHighlighter),
        indentUnit.of(" ".repeat(INDENT_WIDTH)),
        EditorState.tabSize.of(INDENT_WIDTH),
        pageKeys(onSubmit, onEscape),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap]),
        editorTheme,
        // tabindex: the content is in the tab order anyway (contenteditable); said out loud,
        // it tells checkers (axe's scrollable-region-focusable) that the keyboard reaches
        // the scrolling box around it.
        EditorView.contentAttributes.of({ "aria-label": lang.label, tabindex: "0" }),
        lang.wrap ? EditorView.lineWrapping : [],
        problemField,
        copyInto(textarea),
      ],
    }),
  });
  describeBy(view, textarea);
  textarea.hidden = true;
  return {
    view,
    value: () => view.state.doc.toString(),
    save: () => {
      textarea.value = view.state.doc.toString();
    },
    focus: () => view.focus(),
    // Replaces the whole text as one undoable change (Ctrl/Cmd+Z brings the old text back).
    setValue: (text) =>
      view.dispatch({
        changes: { from: 0, to: view.state.doc.length, insert: text },
        selection: { anchor: 0 },
        userEvent: "input.replace",
      }),
    markLine: (number, { show = false } = {}) => markLine(view, number, show),
  };
}

// window.gradlabEditor of a bundle with these languages.
export function install(languages) {
  window.gradlabEditor = {
    attach: (textarea, options) => attach(languages, textarea, options),
    languages: Object.keys(languages),
  };
}
