// The Inside tab's module tree (gr.HTML's js_on_load: app/tabs/inside.py): clicking a module's name selects it (its
// path goes to the server as the select event's value).
export default (element, trigger) => {
  element.addEventListener('click', (event) => {
    const mod = event.target.closest('.mod[data-path]');
    if (!mod) return;
    event.preventDefault();
    trigger('select', {index: 0, value: mod.dataset.path, selected: true});
  });
};
