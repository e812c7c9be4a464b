// The Translate button's click (app/tabs/translate.py): where the result is off the screen (a phone, which stacks
// the columns), it is brought into view.
export default () => {
  const out = document.querySelector('#out'), r = out?.getBoundingClientRect();
  if (r && (r.top < 0 || r.bottom > window.innerHeight)) out.scrollIntoView({block: 'start', behavior: 'smooth'});
};
