// The learner's page editor bundle: Python only (frontend/editor-core.js).
import { python } from "@codemirror/lang-python";
import { install } from "./editor-core.js";

install({ python: { support: () => python(), label: "Python code" } });
