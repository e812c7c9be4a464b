// Run once when the page loads (app/tabs/timelapse.py now_js), given FRACTIONS: the chosen point's line over the
// Time-lapse tab's curves, drawn by the page so that a move of the scrubber sends no figure. FRACTIONS says where
// each point stands across the step axis (0..1, app/figures/timelapse.py point_fractions); the line spans the plot
// areas that plotly draws (its drag rectangles, one a subplot), and is drawn again whenever the figure is (a new
// language, the tab's first opening) or the window changes size.
export default (FRACTIONS) => () => {
  let chosen = FRACTIONS.length - 1, queued = false;
  const place = () => {
    queued = false;
    const plot = document.querySelector('#tl-curves .js-plotly-plot');
    const areas = plot ? [...plot.querySelectorAll('.nsewdrag')] : [];
    if (!areas.length || FRACTIONS[chosen] === undefined) return;
    const box = plot.getBoundingClientRect(), first = areas[0].getBoundingClientRect();
    const top = Math.min(...areas.map(a => a.getBoundingClientRect().top));
    const bottom = Math.max(...areas.map(a => a.getBoundingClientRect().bottom));
    let line = plot.querySelector('#tl-now-line');
    if (!line) {
      line = document.createElement('div');
      line.id = 'tl-now-line';
      line.style.cssText = 'position:absolute;width:2px;background:#e4572e;pointer-events:none;z-index:5';
      if (getComputedStyle(plot).position === 'static') plot.style.position = 'relative';
      plot.appendChild(line);
    }
    line.style.left = (first.left - box.left + FRACTIONS[chosen] * first.width - 1) + 'px';
    line.style.top = (top - box.top) + 'px';
    line.style.height = (bottom - top) + 'px';
  };
  const later = () => { if (!queued) { queued = true; requestAnimationFrame(place); } };
  window.explorerTimelapse = {place: (i) => { chosen = Number(i); later(); }};
  new MutationObserver((records) => {
    if (records.some(r => r.target.closest && r.target.closest('#tl-curves') && r.target.id !== 'tl-now-line')) later();
  }).observe(document.body, {childList: true, subtree: true});
  window.addEventListener('resize', later);
};
