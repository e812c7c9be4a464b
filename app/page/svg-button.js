// Run by the page once it loads (launch(js=...): app/style.py): beside the PNG button of each plotly figure's
// toolbar, a "Save SVG" button that saves the figure as SVG through the page's own plotly (window.Plotly), named
// after the figure's element id. Figures drawn later are found as they appear (looked for once a frame at most).
// Gradio may draw a figure anew in the same place (a new plot element in the same parent), so the button belongs
// to the place: one per parent, which saves whatever figure is there when clicked. Its words are the page's
// (data-word: head.js keeps them in the page's language).
export default () => {
  const add = (gd) => {
    const place = gd.parentElement;
    if (!place || !window.Plotly || place.querySelector(':scope > .save-svg')) return;
    const b = document.createElement('button');
    b.type = 'button'; b.className = 'save-svg';
    b.dataset.word = 'svg'; b.dataset.wordTitle = 'svg_title';
    b.textContent = window.explorerLang?.word('svg') ?? 'Save SVG';
    b.title = window.explorerLang?.word('svg_title') ?? 'Save this figure as SVG';
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      const plot = place.querySelector(':scope > .js-plotly-plot');
      if (!plot) return;
      const name = (plot.closest('[id]')?.id || 'figure').replace(/[^A-Za-z0-9_-]/g, '');
      window.Plotly.downloadImage(plot, {format: 'svg', filename: name});
    });
    place.style.position = 'relative';
    place.appendChild(b);
  };
  let queued = false;  // a scan is asked for: it runs once a frame at most, before the frame is painted
  const scan = () => { queued = false; document.querySelectorAll('.js-plotly-plot').forEach(add); };
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(scan); } })
    .observe(document.body, {childList: true, subtree: true});
  scan();
};
