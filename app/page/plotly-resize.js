// In the page's head (head.js), given the plotly Gradio sets as window.Plotly. Gradio's plot component follows
// every Plotly.react with Plotly.Plots.resize, and plotly's resize lays the plot out again 100 ms later whatever
// its size: every figure was drawn twice, the second time after the tab looked open (about 50 ms a figure here).
// A resize of a plot on screen whose container has the size it was drawn at is answered at once; any other (a
// window that changed size, a plot drawn while hidden) goes to plotly's own. A plot whose figure is still to be
// drawn (plotly-lazy.js: `__queued` until the microtask after Gradio's react, `__waiting` while far off screen) is
// answered at once too: its drawing takes its container's size then (else plotly's own would lay it out again
// 100 ms after it is drawn).
export default (plotly) => {
  const resize = plotly.Plots.resize;
  plotly.Plots.resize = function (gd) {
    const el = typeof gd === 'string' ? document.getElementById(gd) : gd, full = el && el._fullLayout;
    if (el?.__queued || el?.__waiting) return Promise.resolve(el);  // not drawn yet: nothing to resize
    if (full && el.layout && el.getClientRects().length) {
      const style = window.getComputedStyle(el);
      if (Math.round(parseFloat(style.width)) === full.width
          && (el.layout.height || Math.round(parseFloat(style.height)) === full.height)) return Promise.resolve(el);
    }
    return resize.apply(this, arguments);
  };
};
