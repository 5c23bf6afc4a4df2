// The authoring pages' editor bundle (frontend/editor-core.js): Python for the package's
// .py files, Markdown for statement.md (its fenced ```python blocks highlighted as
// Python), TOML for exercise.toml (the legacy TOML mode through StreamLanguage).
import { markdown } from "@codemirror/lang-markdown";
import { python } from "@codemirror/lang-python";
import { LanguageDescription, StreamLanguage, syntaxHighlighting } from "@codemirror/language";
import { toml } from "@codemirror/legacy-modes/mode/toml";
import { tagHighlighter, tags } from "@lezer/highlight";
import { install } from "./editor-core.js";

const pythonBlocks = LanguageDescription.of({ name: "python", alias: ["py"], support: python() });
// Markdown's own tags that the common classHighlighter leaves plain: inline code and quotes.
const markdownClasses = tagHighlighter([
  { tag: tags.monospace, class: "tok-monospace" },
  { tag: tags.quote, class: "tok-quote" },
]);

install({
  python: { support: () => python(), label: "Python code" },
  markdown: {
    support: () => [markdown({ codeLanguages: [pythonBlocks] }), syntaxHighlighting(markdownClasses)],
    label: "Markdown text",
    wrap: true, // prose: long lines wrap
  },
  toml: { support: () => StreamLanguage.define(toml), label: "TOML text" },
});
