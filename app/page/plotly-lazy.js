// In the page's head (head.js), given the plotly Gradio sets as window.Plotly. Two things are put off here.
//
// A figure for an element that is gone. Gradio's plot component mounts its plotly component anew for every figure
// it is given (a `{#key}` block on a count of its values), and the old one's effect sees the new figure first: it
// drew it into the old element, which the new mounting takes out of the page in a microtask, then the new one drew
// it again (every update of every plot drawn twice, once for nothing). So a figure is drawn in a microtask, not at
// once: by then an element taken out of the page is not drawn at all, and an element given several figures meanwhile
// is drawn once, with the newest. Until then it has `__queued` (plotly-resize.js leaves it alone). An element not yet
// in the page (in a fragment that Svelte puts in it later) waits as a plot off screen does.
//
// Figures nobody sees yet. Gradio draws every figure of an event's outputs at once, those below the fold of a tall
// tab too (the Training tab's five, a phone's every one), before the reader sees the first. A figure for a plot
// that is not within `near` px of the screen waits, and is drawn when it comes near the screen (an
// IntersectionObserver), with the newest figure it was given. Meanwhile a plot never drawn holds a block of the
// figure's height and has the class `plot-waiting`, which gives it the strips a drawn plot has (style.css): the page
// keeps its layout when it is drawn. A plot in a closed tab has no box, and is drawn when its tab opens.
export default ({near: NEAR}) => (plotly) => {
  const react = plotly.react;
  const near = (el) => { const r = el.getBoundingClientRect();
    return (r.width || r.height) && r.bottom > -NEAR && r.top < innerHeight + NEAR; };
  const done = (el) => {
    seen.unobserve(el);
    delete el.__waiting;
    el.classList.remove('plot-waiting');
    el.querySelector(':scope > .plot-hold')?.remove();
  };
  const seen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const el = e.target, args = el.__waiting;
      if (!e.isIntersecting || !args) continue;
      done(el);
      react.apply(plotly, [el, ...args]);
    }
  }, {rootMargin: `${NEAR}px 0px`});
  const wait = (el, args) => {
    el.__waiting = args;
    if (!el._fullLayout) {  // never drawn: it holds the figure's height (a drawn one keeps its drawing meanwhile)
      const height = args[1]?.height, hold = el.querySelector(':scope > .plot-hold')
        ?? el.appendChild(Object.assign(document.createElement('div'), {className: 'plot-hold'}));
      hold.style.height = `${typeof height === 'number' ? height : 450}px`;
      el.classList.add('plot-waiting');
    }
    seen.observe(el);
    return el;
  };
  // the newest figure an element was given, once the microtask comes
  const draw = (el) => {
    const args = el.__queued;
    delete el.__queued;
    if (!el.isConnected) {
      // held in a fragment (Svelte mounts a branch there while an update of the page is still to be committed,
      // then moves it in): drawn when it comes near the screen
      if (el.getRootNode() instanceof DocumentFragment) return wait(el, args);
      if (el.__waiting) done(el);  // taken out of the page for good (a new plot component in its place)
      return el;
    }
    if (!near(el)) return wait(el, args);
    if (el.__waiting) done(el);
    return react.call(plotly, el, ...args);
  };
  plotly.react = function (gd, ...args) {
    const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
    if (!(el instanceof HTMLElement)) return react.call(this, gd, ...args);
    const first = !el.__queued;
    el.__queued = args;
    if (first) el.__drawn = Promise.resolve(el).then(draw);
    return el.__drawn;
  };
};
