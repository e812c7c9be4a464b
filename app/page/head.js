// The script of the page's head (launch(head=...): app/i18n.py head_script). Gradio picks its locale from the
// browser's language before any script of the page runs, and draws the app right after running the head
// (app/gradio_adapter.py): so the head picks the page's language (?lang= in the address, else the learner's last
// choice, else the browser's), sets Gradio's locale to it, and keeps the app out of sight until Gradio's labels and
// the switch both show it; the first paint is in one language. `explorerLang.apply(lang)` (the switch's change)
// switches everything the browser draws: Gradio's labels, the tab buttons (Gradio writes a tab's label once, in the
// locale of the moment, and again whenever it redraws the button: an observer puts this language's label back),
// Gradio's status lines (English in every locale), plotly's toolbar (its locale, from the page's own table) and the
// page's own buttons (data-word="key": WORDS[lang][key] is their text, data-word-title their tooltip).
//
// The server's values: TABS {tab id: {lang: label}}, WORDS {lang: {word: text}}, PLOTLY {lang: {plotly's English:
// ours}}, DEFAULT (the language of last resort), STATUS_CHUNK (the statustracker chunk's file name, or null) and
// SAFETY_MS; then the functions of gradio-core.js, plotly-resize.js, plotly-lazy.js, phone-width.js and
// quiet-statuses.js.
export default ({TABS, WORDS, PLOTLY, DEFAULT, STATUS_CHUNK, SAFETY_MS},
                {gradioCore, sameSizeResize, drawWhenNear, phoneWidth, quietStatuses}) => {
  const pick = (v) => { v = String(v || ''); return v.toLowerCase().startsWith('zh') ? 'zh-CN' : (Object.hasOwn(WORDS, v) ? v : DEFAULT); };
  const stored = () => { try { return window.localStorage.getItem('explorer-lang'); } catch { return null; } };
  let lang = pick(new URLSearchParams(window.location.search).get('lang') || stored() || navigator.language);
  const word = (key) => WORDS[lang][key];
  const relabelTabs = () => {
    document.querySelectorAll('[role=tab][data-tab-id]').forEach((b) => {
      const label = TABS[b.dataset.tabId]?.[lang];
      const node = [...b.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
      if (label && node && node.nodeValue !== label) node.nodeValue = label;
    });
  };
  const relabel = () => {
    relabelTabs();
    document.querySelectorAll('[data-word]').forEach((e) => {
      if (e.textContent !== word(e.dataset.word)) e.textContent = word(e.dataset.word);
    });
    document.querySelectorAll('[data-word-title]').forEach((e) => {
      if (e.title !== word(e.dataset.wordTitle)) e.title = word(e.dataset.wordTitle);
    });
  };
  const STATUS = [[/^processing \|$/, () => word('processing')],
                  [/^queue: (\d+)\/(\d*) \|$/, (m) => word('queue').replace('{position}', m[1]).replace('{size}', m[2])]];
  // the status trackers that a batch of changes touched: a change within one, or one added to the page
  const TRACKER = '[data-testid=status-tracker]';
  const touched = (records) => {
    const found = new Set();
    for (const r of records) {
      const t = (r.target.nodeType === Node.ELEMENT_NODE ? r.target : r.target.parentElement)?.closest(TRACKER);
      if (t) { found.add(t); continue; }
      for (const n of r.addedNodes) {
        if (n.nodeType !== Node.ELEMENT_NODE) continue;
        if (n.matches(TRACKER)) found.add(n);
        else n.querySelectorAll(TRACKER).forEach((e) => found.add(e));
      }
    }
    return found;
  };
  // (a hidden one too: its words may be written before it shows, and showing it changes only its class)
  const restatus = (trackers) => trackers.forEach((t) => {
    const walk = document.createTreeWalker(t, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const [re, say] of STATUS) {
        const m = n.nodeValue.trim().match(re);
        if (m && lang !== 'en') n.nodeValue = say(m);
      }
    }
  });
  // whether a batch of changes drew a tab button or wrote in one (Gradio writes a button's label in the language
  // its config was read in, the browser's, whatever the page's language)
  const TAB = '[role=tab][data-tab-id]';
  const drewTabs = (records) => records.some((r) => {
    const at = r.target.nodeType === Node.ELEMENT_NODE ? r.target : r.target.parentElement;
    return at?.closest(TAB) || [...r.addedNodes].some((n) => n.nodeType === Node.ELEMENT_NODE &&
                                                             (n.matches(TAB) || n.querySelector(TAB)));
  });
  // the status lines and the tab buttons at once: a frame's animation callbacks draw too (Gradio lays out its tab
  // buttons in one), and a label put right in the next frame would be painted once in the wrong language; the
  // other labels once a frame at most, before it is painted (a tab's opening makes dozens of batches of changes
  // to the page, and relabelling looks through all of it)
  let queued = false;
  const fix = () => { queued = false; relabel(); };
  new MutationObserver((records) => {
    if (lang !== 'en') restatus(touched(records));
    if (drewTabs(records)) relabelTabs();
    if (!queued) { queued = true; requestAnimationFrame(fix); }
  })
    .observe(document.documentElement, {childList: true, subtree: true, characterData: true});
  // plotly arrives with the first figure (Gradio sets window.Plotly): it gets the page's locales before it draws
  let plotly = window.Plotly;
  const toolbar = () => {
    if (!plotly) return;
    plotly.setPlotConfig({locale: lang});
    const known = {};  // a title in any language -> its English
    for (const dictionary of Object.values(PLOTLY)) for (const [en, s] of Object.entries(dictionary)) known[s] = en;
    document.querySelectorAll('.modebar-btn[data-title]').forEach((b) => {
      const en = known[b.dataset.title] ?? b.dataset.title;
      b.dataset.title = PLOTLY[lang]?.[en] ?? en;
    });
  };
  const meet = (p) => {
    plotly = p;
    sameSizeResize(p);
    drawWhenNear(p);
    phoneWidth(p);  // around drawWhenNear's react: a plot has its width before it is drawn or waits
    for (const [name, dictionary] of Object.entries(PLOTLY)) p.register({moduleType: 'locale', name, dictionary});
    toolbar();
  };
  if (plotly) meet(plotly);
  else Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true, get: () => plotly,
                                                set: (p) => { try { meet(p); } catch { plotly = p; } }});
  const apply = (value) => {
    lang = pick(value);
    try { window.localStorage.setItem('explorer-lang', lang); } catch { /* private mode */ }
    gradioCore().then((core) => core?.changeLocale?.(lang)).catch(() => null);
    relabel();
    toolbar();
    return lang;
  };
  window.explorerLang = {pick, apply, word, lang: () => lang};
  // a loading status applied already is not applied again (quiet-statuses.js): the very module
  // Gradio's Blocks imports, from the same folder as the page's entry script
  const entry = document.querySelector('script[type=module][src*="/assets/"]');
  if (STATUS_CHUNK && entry) {
    import(new URL(STATUS_CHUNK, entry.src).href).then((m) => { window.__quietStatuses = quietStatuses(m); })
      .catch(() => null);
  }
  // out of sight until Gradio's locale (it sets <html lang> once loaded) and the switch are this language, however
  // long a busy server or a slow phone takes to draw the page (shown after a few seconds, a page still drawing was
  // painted in the browser's language first); only a page that never gets there, one whose script failed, is shown
  // after SAFETY_MS ms all the same, so that what went wrong can be seen
  const hold = document.createElement('style');
  hold.textContent = 'gradio-app {visibility: hidden !important}';
  document.head.appendChild(hold);
  const until = Date.now() + SAFETY_MS;
  const ready = () => document.documentElement.lang === lang && document.querySelector('#lang input:checked')?.value === lang;
  const wait = () => { if (ready() || Date.now() > until) { relabel(); hold.remove(); } else setTimeout(wait, 10); };
  gradioCore().then((core) => core?.changeLocale?.(lang)).catch(() => null).finally(wait);
};
