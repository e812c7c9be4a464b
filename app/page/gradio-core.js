// In the page's head (head.js): resolves to Gradio's front-end core module (assets/core-<hash>.js), the very
// instance the page runs, or null; its `changeLocale` sets Gradio's locale (app/gradio_adapter.py LOCALE_JS).
export default async () => {
  const url = performance.getEntriesByType('resource').map((e) => e.name)
    .find((n) => /\/assets\/core-[\w-]+\.js$/.test(n));
  return url ? import(url) : null;
};
