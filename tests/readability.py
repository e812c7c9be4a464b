"""Can a region of the page be read? Checks run in a Playwright page, each returning human-readable problems.

`problems(page, selector)` runs them all on the region `selector` (the first element it matches); each check is
also a function of its own. Only what is on screen counts: an element that is hidden (display, visibility,
opacity 0, or a closed accordion) or has no text is skipped. Sizes are CSS px as drawn, whatever the device's
pixel ratio. The checks, and how each measures:

- small_text: text drawn under `min_px` tall. SVG text (plotly's, the Overview diagram's, any inline SVG): its
  computed font-size times the scale of its screen transform (so a viewBox shrunk to a phone counts); HTML text:
  its computed font-size.
- overlapping_text: two texts of one figure drawing over each other, each text taken as its box turned with it
  (a 45 degree tick label is a turned rectangle, not its upright bounding box), and plotly's toolbar buttons,
  the page's SVG button or Gradio's label of the figure ("Plot") covering a text of their figure. The toolbar counts while hidden until hover: a tap or a
  hover shows it.
- cut_boxes: a slider's number box or reset button clipped by a container (compared with the part of its
  ancestors that is not cut away by overflow) or by the screen's edge, or a number box too narrow for its value.
- cut_text: HTML text cut by a container that does not scroll (its overflow hidden) or by the screen's edge
  (text an element cuts itself, an ellipsis, is not counted), and figure text running off its SVG.
- broken_numbers: a number in a table cell drawn across two lines.
- escaped_markup: `&lt;`, `&gt;`, `&amp;`, `&quot;` or `&#39;` shown as text.
- sideways_scroll: the page wider than the screen.
- cut_menus: a menu's (a Gradio dropdown's) chosen value wider than the room its box leaves it: running under the
  box's arrow or cut at its edge (its natural width, measured with the box's font, against the box's content width
  up to the arrow), so that an ellipsis counts as cut too: a menu's value is all a reader sees of the choice.
- hidden_legend: a figure's legend that starts beyond the right edge of the block it scrolls sideways in, so that
  a reader sees the lines first without what they are (a legend that starts on screen and runs on is fine).
- unsaid_scroll: a table or grid (app/style.py SWIPE_BOXES) that scrolls sideways in its box with no line above it
  saying so (app/style.py SWIPE_JS).
"""

MIN_PX = 9
TOLERANCE = 1.5  # px: two boxes that touch or overlap by less than this do not count (anti-aliased edges)

# helpers in scope of every check: `region`, `visible(e)`, `ownText(e)` and `label(e)`
PRELUDE = """
const region = document.querySelector(arg.selector);
if (!region) return [`no element matches ${arg.selector}`];
const visible = (e) => {
  if (!e.isConnected || !e.checkVisibility({opacityProperty: true, visibilityProperty: true})) return false;
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};
const ownText = (e) => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
// the part of the screen an element may show in: its ancestors' boxes where they cut their overflow, and the
// screen's width; null when an ancestor scrolls sideways (what it cuts can be scrolled to)
const clip = (e) => {
  let c = {left: 0, top: -Infinity, right: window.innerWidth, bottom: Infinity};
  for (let a = e.parentElement; a && a !== document.documentElement; a = a.parentElement) {
    const s = getComputedStyle(a);
    const r = a.getBoundingClientRect();
    if (s.overflowX !== 'visible') {
      if (['auto', 'scroll'].includes(s.overflowX) && a.scrollWidth > a.clientWidth) return null;
      c.left = Math.max(c.left, r.left); c.right = Math.min(c.right, r.right);
    }
    if (s.overflowY !== 'visible' && !['auto', 'scroll'].includes(s.overflowY)) {
      c.top = Math.max(c.top, r.top); c.bottom = Math.min(c.bottom, r.bottom);
    }
  }
  return c;
};
const outside = (r, c) => c && (r.left < c.left - arg.tolerance || r.right > c.right + arg.tolerance ||
                                 r.top < c.top - arg.tolerance || r.bottom > c.bottom + arg.tolerance);
const where = (r, c) => `x ${Math.round(r.left)}-${Math.round(r.right)}, y ${Math.round(r.top)}-` +
  `${Math.round(r.bottom)} shown in x ${Math.round(c.left)}-${Math.round(c.right)}, y ${Math.round(c.top)}-` +
  `${Math.round(c.bottom)}`;
const label = (e) => {
  const t = (e.textContent || e.value || e.getAttribute('aria-label') || '').trim().replace(/\\s+/g, ' ');
  const home = e.closest('[id]:not([id=""])');
  return `"${t.slice(0, 40)}"` + (home ? ` in #${home.id}` : '');
};
"""

SMALL_TEXT = """
const out = [];
for (const e of region.querySelectorAll('*')) {
  if (['SCRIPT', 'STYLE', 'TEXTAREA', 'OPTION'].includes(e.tagName) || !ownText(e) || !visible(e)) continue;
  let px = parseFloat(getComputedStyle(e).fontSize);
  if (e instanceof SVGElement) {
    const m = e.getScreenCTM();
    if (!m) continue;
    px *= Math.sqrt(m.a * m.a + m.b * m.b);
  }
  if (px < arg.min_px - 0.05) out.push(`text drawn ${px.toFixed(1)} px tall (under ${arg.min_px}): ${label(e)}`);
}
return out;
"""

OVERLAPPING_TEXT = """
// a text's four corners on screen: its own box through its transform (turned text stays a turned rectangle)
const corners = (e) => {
  if (e instanceof SVGGraphicsElement && e.getScreenCTM()) {
    const b = e.getBBox(), m = e.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  }
  const r = e.getBoundingClientRect();
  return [[r.left, r.top], [r.right, r.top], [r.right, r.bottom], [r.left, r.bottom]];
};
// two convex quadrilaterals overlap by more than the tolerance on every separating axis
const overlap = (p, q) => {
  for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
    const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
    let nx = y1 - y2, ny = x2 - x1;
    const len = Math.hypot(nx, ny);
    if (!len) continue;
    nx /= len; ny /= len;
    const proj = pts => pts.map(([x, y]) => x * nx + y * ny);
    const a = proj(p), b = proj(q);
    const depth = Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b));
    if (depth < arg.tolerance) return false;
  }
  return true;
};
const figures = new Set();
for (const s of region.querySelectorAll('svg')) figures.add(s.closest('.js-plotly-plot') || s.closest('svg:not(svg svg)') || s);
const out = [];
for (const fig of figures) {
  const texts = [...fig.querySelectorAll('text')].filter(t => t.textContent.trim() && visible(t))
    .map(t => [t, corners(t)]);
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
    if (overlap(texts[i][1], texts[j][1]))
      out.push(`texts overlap: ${label(texts[i][0])} and ${label(texts[j][0])}`);
  // the toolbar (shown on hover or tap) and the SVG button, over any text of the figure
  const home = fig.parentElement || fig;
  const badge = fig.closest('.block')?.querySelector(':scope > label[data-testid=block-label]');
  const buttons = [...fig.querySelectorAll('.modebar-btn'), ...home.querySelectorAll(':scope > .save-svg'),
                   ...(badge ? [badge] : [])]
    .filter(b => b.checkVisibility({visibilityProperty: true}) && b.getBoundingClientRect().width > 0);
  for (const b of buttons) for (const [t, c] of texts)
    if (overlap(corners(b), c)) {
      const name = b === badge ? "the figure's label" : b.classList.contains('save-svg') ? 'the SVG button'
        : "plotly's toolbar";
      out.push(`${name} covers ${label(t)}`);
    }
}
return [...new Set(out)];
"""

CUT_BOXES = """
const out = [];
const boxes = [...region.querySelectorAll('input[type=number]')];
for (const range of region.querySelectorAll('input[type=range]')) {
  const block = range.closest('.block') || range.parentElement;
  boxes.push(...block.querySelectorAll('button'));
}
for (const b of new Set(boxes)) {
  if (!visible(b)) continue;
  const r = b.getBoundingClientRect(), c = clip(b);
  if (outside(r, c)) out.push(`${b.tagName === 'INPUT' ? 'number box' : 'button'} cut: ${where(r, c)}: ${label(b)}`);
  else if (b.tagName === 'INPUT' && b.scrollWidth > b.clientWidth + 1)
    out.push(`number box too narrow for its value (${b.scrollWidth} px in ${b.clientWidth}): ${label(b)}`);
}
return out;
"""

CUT_TEXT = """
const out = [];
for (const e of region.querySelectorAll('*')) {
  if (e instanceof SVGElement || ['SCRIPT', 'STYLE', 'TEXTAREA', 'OPTION'].includes(e.tagName) || !ownText(e)
      || !visible(e)) continue;
  const range = document.createRange();
  range.selectNodeContents(e);
  let r = range.getBoundingClientRect();
  if (getComputedStyle(e).overflowX !== 'visible') r = e.getBoundingClientRect();  // it cuts (or scrolls) its own
  const c = clip(e);
  if (outside(r, c)) out.push(`text cut: ${where(r, c)}: ${label(e)}`);
}
// a figure's text past the edge of its drawing (its outermost svg, which cuts it)
for (const t of region.querySelectorAll('svg text')) {
  if (!t.textContent.trim() || !visible(t)) continue;
  let svg = t.ownerSVGElement;
  while (svg?.ownerSVGElement) svg = svg.ownerSVGElement;
  const r = t.getBoundingClientRect(), c = svg.getBoundingClientRect();
  if (outside(r, c)) out.push(`text runs off its figure: ${where(r, c)}: ${label(t)}`);
}
return out;
"""

BROKEN_NUMBERS = """
const out = [];
const number = /[-+\\u2212]?\\d[\\d.,]*(?:e[-+]?\\d+)?%?/gi;
for (const cell of region.querySelectorAll('td, th')) {
  if (!visible(cell)) continue;
  const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) for (const m of n.textContent.matchAll(number)) {
    const range = document.createRange();
    range.setStart(n, m.index); range.setEnd(n, m.index + m[0].length);
    const tops = [...range.getClientRects()].filter(r => r.width > 0).map(r => r.top);
    if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 2)
      out.push(`number broken across lines: "${m[0]}" in ${label(cell)}`);
  }
}
return out;
"""

ESCAPED_MARKUP = """
const out = [];
for (const m of new Set(region.innerText.match(/&(lt|gt|amp|quot|#39);/g) || [])) {
  const at = region.innerText.indexOf(m);
  out.push(`escaped markup shown: ${m} in "${region.innerText.slice(Math.max(0, at - 20), at + 20).replace(/\\s+/g, ' ')}"`);
}
return out;
"""

SIDEWAYS_SCROLL = """
const wide = document.documentElement.scrollWidth - window.innerWidth;
return wide > 0 ? [`the page scrolls ${wide} px sideways`] : [];
"""


# a box the page lets scroll sideways (app/style.py SWIPE_BOXES) that does, with no line above it saying so
UNSAID_SCROLL = """
const out = [];
for (const e of region.querySelectorAll(arg.boxes)) {
  if (!visible(e) || e.scrollWidth <= e.clientWidth + 2) continue;
  const hint = getComputedStyle(e, '::before').content;
  if (!hint || hint === 'none' || hint === 'normal')
    out.push(`${label(e)} scrolls ${e.scrollWidth - e.clientWidth} px sideways and nothing says so`);
}
return out;
"""


# a dropdown's input (Gradio writes the chosen value into it) beside its arrow
CUT_MENUS = """
const out = [], canvas = document.createElement('canvas').getContext('2d');
for (const input of region.querySelectorAll('input:is([role=listbox], [role=combobox])')) {
  if (!visible(input) || !input.value) continue;
  const s = getComputedStyle(input);
  canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
  const r = input.getBoundingClientRect();
  const start = r.left + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft);
  let end = r.right - parseFloat(s.borderRightWidth) - parseFloat(s.paddingRight);
  const arrow = input.closest('.wrap')?.querySelector('.icon-wrap');
  if (arrow && visible(arrow)) {
    const a = arrow.getBoundingClientRect();
    if (a.left < end && a.right > start) end = Math.min(end, a.left);
  }
  const c = clip(input);
  if (c) end = Math.min(end, c.right);
  const width = canvas.measureText(input.value).width;
  if (start + width > end + arg.tolerance)
    out.push(`a menu's value needs ${Math.round(width)} px and has ${Math.round(end - start)}: ${label(input)}`);
}
return out;
"""


HIDDEN_LEGEND = """
const out = [];
for (const legend of region.querySelectorAll('.js-plotly-plot g.legend')) {
  if (!visible(legend)) continue;
  let box = legend.closest('.js-plotly-plot').parentElement;
  while (box && !(['auto', 'scroll'].includes(getComputedStyle(box).overflowX) && box.scrollWidth > box.clientWidth))
    box = box.parentElement;
  if (!box || box === document.documentElement) continue;
  const shown = box.getBoundingClientRect(), r = legend.getBoundingClientRect();
  const left = r.left + box.scrollLeft;  // where it is with the block scrolled to its start
  if (left > shown.right - arg.tolerance)
    out.push(`a legend starts ${Math.round(left - shown.right)} px past the right edge of its block: ${label(legend)}`);
}
return out;
"""


def _run(page, body, selector, **values):
    return page.evaluate(f"(arg) => {{ {PRELUDE}\n{body} }}",
                         {"selector": selector, "min_px": MIN_PX, "tolerance": TOLERANCE, **values})


def small_text(page, selector, min_px=MIN_PX):
    """Text in the region drawn under `min_px` CSS px tall."""
    return _run(page, SMALL_TEXT, selector, min_px=min_px)


def overlapping_text(page, selector):
    """Texts of one figure drawn over each other, or under plotly's toolbar or the SVG button."""
    return _run(page, OVERLAPPING_TEXT, selector)


def cut_boxes(page, selector):
    """Slider number boxes and reset buttons clipped by a container or the screen, or too narrow for their value."""
    return _run(page, CUT_BOXES, selector)


def cut_text(page, selector):
    """HTML text cut by a container that does not scroll, or by the screen's edge."""
    return _run(page, CUT_TEXT, selector)


def broken_numbers(page, selector):
    """Numbers in table cells drawn across two lines."""
    return _run(page, BROKEN_NUMBERS, selector)


def escaped_markup(page, selector):
    """HTML entities shown as text instead of the characters they stand for."""
    return _run(page, ESCAPED_MARKUP, selector)


def sideways_scroll(page, selector="body"):
    """The page wider than the screen."""
    return _run(page, SIDEWAYS_SCROLL, selector)


def cut_menus(page, selector):
    """A menu's chosen value that runs under its arrow or is cut at its box's edge."""
    return _run(page, CUT_MENUS, selector)


def hidden_legend(page, selector):
    """A legend that starts beyond the right edge of the block its figure scrolls sideways in."""
    return _run(page, HIDDEN_LEGEND, selector)


def unsaid_scroll(page, selector):
    """A table or grid that scrolls sideways inside its box with no hint above it that it does."""
    from app.style import SWIPE_BOXES
    return _run(page, UNSAID_SCROLL, selector, boxes=SWIPE_BOXES)


CHECKS = (small_text, overlapping_text, cut_boxes, cut_text, broken_numbers, escaped_markup, sideways_scroll,
          cut_menus, hidden_legend, unsaid_scroll)


def problems(page, selector):
    """Every check on the region `selector`: a list of problems, empty when it reads well."""
    return [p for check in CHECKS for p in check(page, selector)]
