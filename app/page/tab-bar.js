// Run by the page once it loads (launch(js=...): app/style.py). On a phone the top tab bar is one line that scrolls
// sideways (style.css): the open tab is brought into the bar's view whenever it changes (a link that opens the
// Time-lapse, a Learn step's button that opens its tab), the bar alone scrolled, never the page.
export default (bar) => () => {
  const phone = window.matchMedia('(max-width: 640px)');
  let shown = null;
  const show = () => {
    const strip = document.querySelector(`${bar} > .tab-wrapper > .tab-container`);
    const open = strip?.querySelector(':scope > [role=tab][aria-selected=true]');
    if (!phone.matches || !open || open === shown) return;
    shown = open;
    const s = strip.getBoundingClientRect(), b = open.getBoundingClientRect();
    if (b.left < s.left) strip.scrollBy({left: b.left - s.left - 8});
    else if (b.right > s.right) strip.scrollBy({left: b.right - s.right + 8});
  };
  new MutationObserver(show).observe(document.body, {subtree: true, attributeFilter: ['aria-selected']});
  show();
};
