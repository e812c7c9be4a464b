// In the page's head (head.js), given the plotly Gradio sets as window.Plotly. Gradio draws every figure of an
// event's outputs at once, those below the fold of a tall tab too (the Training tab's five, a phone's every one),
// before the reader sees the first. A figure for a plot that is not within `near` px of the screen waits, and is
// drawn when it comes near the screen (an IntersectionObserver), with the newest figure it was given. Meanwhile a
// plot never drawn holds a block of the figure's height and has the class `plot-waiting`, which gives it the strips
// a drawn plot has (style.css): the page keeps its layout when it is drawn. A plot in a closed tab has no box, and
// is drawn when its tab opens.
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
  plotly.react = function (gd, ...args) {
    const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
    if (!(el instanceof HTMLElement) || near(el)) {
      if (el?.__waiting) done(el);
      return react.call(this, gd, ...args);
    }
    el.__waiting = args;
    if (!el._fullLayout) {  // never drawn: it holds the figure's height (a drawn one keeps its drawing meanwhile)
      const height = args[1]?.height, hold = el.querySelector(':scope > .plot-hold')
        ?? el.appendChild(Object.assign(document.createElement('div'), {className: 'plot-hold'}));
      hold.style.height = `${typeof height === 'number' ? height : 450}px`;
      el.classList.add('plot-waiting');
    }
    seen.observe(el);
    return Promise.resolve(el);
  };
};
