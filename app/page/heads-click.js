// The Heads tab's atlas (gr.HTML's js_on_load: app/tabs/heads.py): clicking a cell selects its head (the head goes
// to the server as the select event's value).
export default (element, trigger) => {
  element.addEventListener('click', (event) => {
    const cell = event.target.closest('[data-head]');
    if (!cell) return;
    const value = {kind: cell.dataset.kind, layer: +cell.dataset.layer, head: +cell.dataset.head};
    trigger('select', {index: [value.layer, value.head], value, selected: true});
  });
};
