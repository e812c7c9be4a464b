// Run by the page once it loads (launch(js=...): app/style.py). On a phone, a menu's chosen value (a Gradio dropdown
// writes it into an <input>, which never wraps) that is wider than its box is drawn smaller until it fits, down to
// `min` px: Inside's module paths ("decoder.layers.2.feed_forward.dropout") are wider than a 390 px phone's menu at
// the page's size. Gradio sets the value from its own code (no event tells the page), so the value's setter is
// watched, for the menus alone (`menus`, a selector).
export default ({min, menus}) => () => {
  const phone = window.matchMedia('(max-width: 640px)'), measure = document.createElement('canvas').getContext('2d');
  // the size a menu's value is drawn at: the page's own (kept as data-menu-px before any change), or smaller where
  // that does not fit; the style is written only when it changes (a write is a change the observer below sees)
  const fit = (input) => {
    let want = '';
    if (phone.matches && input.value && input.getClientRects().length) {
      const s = getComputedStyle(input);
      if (!input.style.fontSize) input.dataset.menuPx = parseFloat(s.fontSize);
      const size = parseFloat(input.dataset.menuPx);
      const room = input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      measure.font = `${s.fontStyle} ${s.fontWeight} ${size}px ${s.fontFamily}`;
      const need = measure.measureText(input.value).width;
      if (need > room) want = `${Math.max(min, Math.floor(size * room / need * 10) / 10)}px`;
    }
    if (input.style.fontSize !== want) input.style.fontSize = want;
  };
  const pending = new Set();
  let queued = false;  // once a frame at most, before the frame is painted
  const run = () => { queued = false; pending.forEach(fit); pending.clear(); };
  const ask = (inputs) => { inputs.forEach((i) => pending.add(i)); if (!queued) { queued = true; requestAnimationFrame(run); } };
  const all = () => document.querySelectorAll(menus);
  const value = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
  Object.defineProperty(HTMLInputElement.prototype, 'value', {...value, set(v) {
    value.set.call(this, v);
    if (this.matches(menus)) ask([this]);
  }});
  // a menu drawn or a tab opened (its menus get a width), the screen turned
  new MutationObserver(() => ask(all())).observe(document.body, {childList: true, subtree: true,
                                                                 attributeFilter: ['class', 'style', 'hidden']});
  window.addEventListener('resize', () => ask(all()));
  document.addEventListener('input', (e) => { if (e.target.matches?.(menus)) ask([e.target]); }, true);
  ask(all());
};
