// Run by the page once it loads (launch(js=...): app/style.py). On a phone, a table (or a grid of heads) wider than
// its box scrolls sideways inside it, which nothing else on the screen shows: each such box among `boxes` (a
// selector) is marked data-swipe, and the page's style writes a line above it that says so, in the page's
// language, held at the box's left edge as it scrolls (as the wide figures' line is).
export default (boxes) => () => {
  const phone = window.matchMedia('(max-width: 640px)');
  const mark = (el) => {
    const wide = phone.matches && el.getClientRects().length > 0 && el.scrollWidth > el.clientWidth + 2;
    if (wide !== el.hasAttribute('data-swipe')) el.toggleAttribute('data-swipe', wide);
  };
  let queued = false;  // once a frame at most, before the frame is painted
  const scan = () => { queued = false; document.querySelectorAll(boxes).forEach(mark); };
  const ask = () => { if (!queued) { queued = true; requestAnimationFrame(scan); } };
  // a table drawn, or a tab opened (its boxes get a size): the marks follow (the mark itself is an attribute, which
  // this does not watch)
  new MutationObserver(ask).observe(document.body, {childList: true, subtree: true, characterData: true,
                                                    attributeFilter: ['class', 'style', 'hidden']});
  window.addEventListener('resize', ask);
  scan();
};
