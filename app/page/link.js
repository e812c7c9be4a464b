// Run by the page once it loads (launch(js=...): app/links.py link_script), given TABS, {tab id: path of tab ids from
// the top}. It writes the address with history.replaceState (and tells a parent frame, as a Hugging Face Space
// expects); `explorerLink.open(path)` clicks the tab buttons along a path (found by their tab ids, whatever the
// language of their labels); on load it opens the linked tab once the page has settled.
export default (TABS) => () => {
  const paths = new Set(Object.values(TABS));
  // Gradio's page has <base href="./">. Where there is one, plotly writes each clip path with the address of the
  // page as it was ("url('http://host/?text=...#clip')"); once replaceState changes the address, that names
  // another document, and the browser fetches the whole page again for each plot it lays out. A base that
  // names the page's own folder changes no address: it is taken away, and plotly writes url(#clip).
  const base = document.querySelector('base[href]');
  if (base && new URL(base.getAttribute('href'), window.location.href).href === new URL('./', window.location.href).href)
    base.remove();
  // a clip path written before that (a plot drawn first) is written again as the page's own
  const ownClips = () => document.querySelectorAll('.js-plotly-plot [clip-path^=url]').forEach((e) => {
    const clip = e.getAttribute('clip-path'), at = clip.lastIndexOf('#');
    if (at > 4 && !clip.startsWith('url(#')) e.setAttribute('clip-path', 'url(' + clip.slice(at).split(/['")]/)[0] + ')');
  });
  const set = (values) => {
    const url = new URL(window.location.href);
    for (const [key, value] of Object.entries(values)) {
      if (value === null || value === undefined || value === '') url.searchParams.delete(key);
      else url.searchParams.set(key, String(value));
    }
    ownClips();
    window.history.replaceState(null, '', url);
    if (window.parent !== window) window.parent.postMessage({queryString: url.search, hash: url.hash}, '*');
  };
  const button = (id) => [...document.querySelectorAll('[role=tab][data-tab-id]')].find(b => b.dataset.tabId === id);
  // click the buttons of a path from the top, each once the one above has shown it; false for an unknown path
  const open = (path, until = Date.now() + 10000) => {
    if (!paths.has(path)) return false;
    const ids = path.split('/');
    const next = () => {
      if (!ids.length || Date.now() > until) return;
      const b = button(ids[0]);
      if (b) { if (b.getAttribute('aria-selected') !== 'true') b.click(); ids.shift(); }
      setTimeout(next, b ? 0 : 50);
    };
    next();
    return true;
  };
  window.explorerLink = {set, open};
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('[role=tab][data-tab-id]');
    const path = b && Object.hasOwn(TABS, b.dataset.tabId) ? TABS[b.dataset.tabId] : null;
    if (path) set({tab: path});
  }, true);
  const wanted = new URLSearchParams(window.location.search).get('tab');
  if (!wanted || !paths.has(wanted)) return;
  // Open it once the page shows its first translation (drawn on the Learn tab, where the page opens), as a page
  // opened without a link has it; after 30 s, open it anyway.
  const started = Date.now();
  const ready = () => document.querySelector('#learn-figure .js-plotly-plot') !== null;
  const wait = () => {
    if (ready() || Date.now() - started > 30000) open(wanted);
    else setTimeout(wait, 50);
  };
  wait();
};
