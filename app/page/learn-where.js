// Run when the Learn path's step on screen changes (Next, Back, a circle, the page's first step: app/tabs/learn.py),
// given the step as JSON: the address records it, and once the new step is drawn (the path and heading show it, no
// event is pending on its heading or figure) its heading is brought to the top of the screen. The page may still
// move as it settles (labels switched to the page's language, fonts, a figure drawn, a link's sentence shown
// above), so the heading is held there until the page's height has stayed the same, with no event pending on
// anything shown, for a moment, or the reader scrolls or touches.
export default (w) => {
  const o = JSON.parse(w || '{}');
  if (!o.step) return;
  window.explorerLink?.set({learn: o.step});
  const el = s => document.querySelector(s);
  const settled = id => el(`#${id} [data-testid=status-tracker]`)?.classList.contains('hide') ?? true;
  const head = el('#learn-head');
  const busy = () => [...document.querySelectorAll('[data-testid=status-tracker]')]
    .some((t) => !t.classList.contains('hide') && t.getClientRects().length);
  // the step's figure drawn by plotly (or waiting, off screen, to be: plotly-lazy.js); until
  // plotly has loaded, the figure's box holds a placeholder of another height
  const plotted = () => !!el('#learn-figure .js-plotly-plot, #learn-figure .plot-waiting');
  const drawn = () => +el('#learn-path .learn-path')?.dataset.step === o.step && settled('learn-head')
    && settled('learn-figure') && plotted() && head.offsetParent !== null;
  // one placing at a time: a newer step change takes over, the reader's own scroll or touch ends it
  const me = window.learnPlacing = (window.learnPlacing || 0) + 1;
  // the reader's own move: a touch, a click, a key, the wheel, or a scroll to anywhere but where this put the page
  let moved = false, placed = null;
  // (a scroll while the page's height changes is the page's own: the browser keeping the position in range)
  let height = 0;
  const stop = (e) => {
    if (e.type !== 'scroll') { moved = true; return; }
    if (placed !== null && Math.abs(window.scrollY - placed) > 2
        && document.documentElement.scrollHeight === height) moved = true;
  };
  const inputs = ['wheel', 'touchstart', 'pointerdown', 'keydown', 'scroll'];
  inputs.forEach(e => window.addEventListener(e, stop, {passive: true}));
  const done = () => inputs.forEach(e => window.removeEventListener(e, stop));
  const start = Date.now();
  let shown = 0;
  const place = () => {
    if (moved || me !== window.learnPlacing || Date.now() - start > 60000) { done(); return; }
    if (!drawn()) { setTimeout(place, 40); return; }
    const top = head.getBoundingClientRect().top;
    if (Math.abs(top - 8) > 2) window.scrollTo({top: window.scrollY + top - 8, behavior: 'instant'});
    placed = window.scrollY;
    // held until the page has kept its height for a moment with no event pending on anything shown: a figure drawn
    // later (plotly still loading) makes room below the heading that the page could not scroll into before, and a
    // line filled above it (a link's sentence, translated under load) would push it down
    const h = document.documentElement.scrollHeight;
    if (h !== height || busy() || !plotted()) { height = h; shown = Date.now(); }
    if (Date.now() - shown < 1200) requestAnimationFrame(place);
    else done();
  };
  place();
};
