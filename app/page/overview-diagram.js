// The Overview tab's diagram (gr.HTML's js_on_load: app/tabs/overview.py): clicking a block opens the tab whose
// path is its data-tab attribute (link.js's explorerLink.open).
export default (element) => {
  element.addEventListener('click', (event) => {
    const block = event.target.closest('[data-tab]');
    if (block) window.explorerLink?.open(block.dataset.tab);
  });
};
