// The Learn path's circles (gr.HTML's js_on_load: app/tabs/learn.py): a click on one asks for its step (its number,
// from the button's own data); the current step's own circle has nothing to draw, and brings its heading back to
// the top of the screen.
export default (element, trigger) => {
  element.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('button[data-step]');
    if (!b) return;
    if (!b.hasAttribute('aria-current')) { trigger('click', {step: Number(b.dataset.step)}); return; }
    const top = document.querySelector('#learn-head').getBoundingClientRect().top;
    window.scrollTo({top: window.scrollY + top - 8, behavior: 'instant'});
  });
};
