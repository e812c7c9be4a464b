// Run by the page once it loads (launch(js=...): app/gradio_adapter.py idle_js). Once the page has been quiet (no
// status tracker on screen) for `quietMs` and the browser is idle, it imports the plot chunk `chunk` beside the
// front end's own modules (the URL of its entry script's folder), so that the first figure a tab shows does not
// wait for plotly: running it holds the browser for about two seconds here, so not while the page is still settling.
export default ({chunk, quietMs}) => () => {
  const entry = document.querySelector('script[type=module][src*="/assets/"]');
  if (window.Plotly || !chunk || !entry) return;
  const busy = () => [...document.querySelectorAll('[data-testid=status-tracker]')]
    .some((t) => !t.classList.contains('hide') && t.getClientRects().length);
  let quietSince = Date.now();
  const wait = () => {
    if (busy()) quietSince = Date.now();
    if (Date.now() - quietSince < quietMs) { setTimeout(wait, 200); return; }
    (window.requestIdleCallback ?? ((f) => setTimeout(f, 50)))(
      () => import(new URL(chunk, entry.src).href).catch(() => {}), {timeout: 1000});
  };
  wait();
};
