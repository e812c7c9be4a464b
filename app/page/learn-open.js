// The Learn path's button that opens the full tab (app/tabs/learn.py), given the step on screen as JSON, and, for
// a step whose tab reads boxes of its own rather than the page's translation (Compare's two sentences), what to
// write in them and the button that runs them (JSON, or nothing): once the tab shows the boxes, each gets its
// text as typing would give it (an input event, which the box's value follows), and the button is pressed.
export default (w, f) => {
  const o = JSON.parse(w || '{}');
  window.explorerLink?.open(o.tab || 'learn');
  const fill = f ? JSON.parse(f) : null;
  if (!fill || !fill.boxes) return;
  const box = (id) => document.querySelector(`#${CSS.escape(id)} textarea, #${CSS.escape(id)} input`);
  const until = Date.now() + 10000;
  const write = () => {
    const boxes = Object.keys(fill.boxes).map(box);
    const run = fill.run && document.getElementById(fill.run);
    if (boxes.some((b) => !b || !b.offsetParent) || (fill.run && !run)) {
      if (Date.now() < until) setTimeout(write, 50);
      return;
    }
    Object.values(fill.boxes).forEach((text, i) => {
      boxes[i].value = text;
      boxes[i].dispatchEvent(new Event('input', {bubbles: true}));
    });
    if (run) setTimeout(() => run.click(), 0);
  };
  write();
};
