// eslint's configuration (flat config): every .js file of the repository, which are the page's scripts
// (app/page/) and this file. Each script is an ES module whose default export is what the page runs
// (app/page/__init__.py hands it to Gradio); they run in the browser.
import js from "@eslint/js";
import globals from "globals";

export default [
  {ignores: ["node_modules/", ".gradio/", "runs/"]},
  js.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: {ecmaVersion: "latest", sourceType: "module", globals: {...globals.browser}},
    linterOptions: {reportUnusedDisableDirectives: "error"},
  },
];
