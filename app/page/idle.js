// Run by the page once it loads (launch(js=...): app/gradio_adapter.py idle_js). Once the page has been quiet (no
// status tracker on screen) for `quietMs` and the browser is idle, it imports the plot chunk `chunk` beside the
// front end's own modules (the URL of its entry script's folder): running it holds the browser for about two
// seconds here, so not while the page is still settling. Once quiet again (`aheadQuietMs`), it clicks the button
// `aheadId` (app/views.py wire_ahead), whose event sends the views that read no sentence to their tabs, closed as
// they are (app/views.py ahead_shower): opening one of them then draws what it holds. When that event is done,
// <html> has data-drawn-ahead.
export default ({chunk, quietMs, aheadQuietMs, aheadId}) => () => {
  const name = chunk, entry = document.querySelector('script[type=module][src*="/assets/"]');
  const busy = () => [...document.querySelectorAll('[data-testid=status-tracker]')]
    .some((t) => !t.classList.contains('hide') && t.getClientRects().length);
  const whenQuiet = (ms, then) => {
    let quietSince = Date.now();
    const wait = () => {
      if (busy()) quietSince = Date.now();
      if (Date.now() - quietSince < ms) { setTimeout(wait, 200); return; }
      (window.requestIdleCallback ?? ((f) => setTimeout(f, 50)))(then, {timeout: 1000});
    };
    wait();
  };
  const ahead = () => whenQuiet(aheadQuietMs, () => document.getElementById(aheadId)?.click());
  if (window.Plotly || !name || !entry) { ahead(); return; }
  whenQuiet(quietMs, () => import(new URL(name, entry.src).href).catch(() => {}).then(ahead));
};
