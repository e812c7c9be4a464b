// A pair of the Score tab opened (app/tabs/score.py): once the Translate tab shows its English, where that is off
// the screen (a phone, which stacks the columns), it is brought into view with the reference under it.
export default () => {
  let tries = 0;
  const look = () => {
    const out = document.querySelector('#out'), r = out?.getBoundingClientRect();
    if (!r || r.height === 0) {
      if (++tries < 40) setTimeout(look, 50);  // the tab not drawn yet: look again, for two seconds at most
      return;
    }
    if (r.top < 0 || r.bottom > window.innerHeight) out.scrollIntoView({block: 'start', behavior: 'smooth'});
  };
  look();
};
