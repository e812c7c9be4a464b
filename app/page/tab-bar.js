// Run by the page once it loads (launch(js=...): app/style.py). On a phone each tab bar that `strips` names (the top
// bar and the tabs' own sub-tabs) is one line that scrolls sideways (style.css): the open tab of each bar on screen is
// brought into the bar's view whenever it changes (a link that opens the Time-lapse or a bertviz view, a Learn
// step's button that opens its tab), the bar alone scrolled, never the page. A bar not on screen (its tab closed) is
// left until it is.
export default (strips) => () => {
  const phone = window.matchMedia('(max-width: 640px)');
  const shown = new WeakMap();  // each bar: the tab last brought into its view
  const show = () => {
    if (!phone.matches) return;
    for (const strip of document.querySelectorAll(strips)) {
      const open = strip.querySelector(':scope > [role=tab][aria-selected=true]');
      if (!open || shown.get(strip) === open || !strip.getClientRects().length) continue;
      shown.set(strip, open);
      const s = strip.getBoundingClientRect(), b = open.getBoundingClientRect();
      if (b.left < s.left) strip.scrollBy({left: b.left - s.left - 8});
      else if (b.right > s.right) strip.scrollBy({left: b.right - s.right + 8});
    }
  };
  new MutationObserver(show).observe(document.body, {subtree: true, attributeFilter: ['aria-selected']});
  show();
};
