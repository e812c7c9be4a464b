// In the page's head (head.js), given the plotly Gradio sets as window.Plotly, wrapped around plotly-lazy.js's
// react so that a plot has its width before it is drawn or waits. A figure whose layout asks for a phone width
// (`meta.phone_width`, app/common.py phone_width: a long sentence's heatmap) is given that width as its plot's least
// width on a screen of 640 px or less, and its block the class `wide-sentence`, which scrolls sideways with a line
// above that says so (app/style.py); another figure in the same place, or a wider screen, takes both back. A figure
// with `meta.phone_hover` false (its text says what its hover would) shows no hover label on such a screen. A figure
// with `meta.phone_layout` (Attention's layers x heads: its panels in fewer columns) is drawn on such a screen with
// that layout laid over its own: each key replaced, an axis' keys laid over the axis'.
export default (plotly) => {
  const react = plotly.react;
  plotly.react = function (gd, ...args) {
    const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
    if (el instanceof HTMLElement) {
      const want = args[1]?.meta?.phone_width, phone = window.matchMedia('(max-width: 640px)').matches;
      el.style.minWidth = '';
      const base = parseFloat(getComputedStyle(el).minWidth) || 0;
      const wide = typeof want === 'number' && phone && want > base;
      if (wide) el.style.minWidth = `${want}px`;
      el.closest('.block')?.classList.toggle('wide-sentence', wide);
      // a figure that writes what its hover says (meta.phone_hover false): no hover label on a phone
      if (phone && args[1]?.meta?.phone_hover === false && Array.isArray(args[0]))
        args[0] = args[0].map((t) => ({...t, hoverinfo: 'none'}));
      const patch = phone && args[1]?.meta?.phone_layout;
      if (patch) {
        const layout = {...args[1]};
        for (const [k, v] of Object.entries(patch))
          layout[k] = /^[xy]axis\d*$/.test(k) && layout[k] ? {...layout[k], ...v} : v;
        args[1] = layout;
      }
    }
    return react.call(this, gd, ...args);
  };
};
