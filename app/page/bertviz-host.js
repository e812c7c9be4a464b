// In the page, once a bertviz view's box is on screen (gr.HTML's js_on_load: app/bertviz_views.py host_js), given the
// view ("head" or "model") and its frame's page. Both views draw the same data, so what either is sent (view_data's
// JSON) is the page's `current` and is posted to both frames: a view opened after the other finds it drawn already.
// A view's value turned "" (its translation is gone) clears `current` if it showed it, then each frame still showing
// that; a frame is put into its box at its first data. Each frame is posted its data once it says it is ready, and
// only what it does not show already, with whether the page is a phone's (640 px or less, as the page's style
// says: the frame, sized by its box, cannot tell). From a frame, only its own messages are read: that it is ready,
// and its height.
export default ({view: VIEW, page: PAGE}) => (element, trigger, props, server, upload, watch) => {
  const box = element.querySelector('.bertviz-box');
  const page = (window.bertvizViews ??= {hosts: [], current: null, read: {}});
  const read = (value) => page.read.value === value ? page.read.data : (page.read = {value, data: JSON.parse(value)}).data;
  let frame = null, ready = false, want = null, posted = null;
  const post = () => {
    if (!ready || want === posted) return;
    posted = want;
    const touch = window.matchMedia('(max-width: 640px)').matches;
    frame.contentWindow.postMessage(want ? {...read(want), touch} : {bertviz: 'clear'}, '*');
  };
  const host = {draw(value) {
    want = value;
    if (value && !frame) {
      frame = document.createElement('iframe');
      frame.setAttribute('sandbox', 'allow-scripts allow-downloads');
      frame.setAttribute('referrerpolicy', 'no-referrer');
      frame.style.cssText = 'width:100%;border:1px solid #ddd;border-radius:8px;background:#fff';
      frame.style.height = read(value).height[VIEW] + 'px';
      frame.srcdoc = PAGE;
      box.appendChild(frame);
    }
    if (value && frame) frame.title = read(value).words[VIEW];
    if (frame) post();
  }, get shows() { return want; }};
  page.hosts.push(host);
  const show = () => {
    const value = props.value || null;
    if (value) {
      page.current = value;
      page.hosts.forEach((h) => h.draw(value));
    } else if (want !== null && want === page.current) {
      const gone = page.current;
      page.current = null;
      page.hosts.forEach((h) => { if (h.shows === gone) h.draw(null); });
    } else host.draw(page.current);
  };
  window.addEventListener('message', (e) => {
    if (!frame || e.source !== frame.contentWindow || !e.data) return;
    if (e.data.bertviz === 'ready') { ready = true; post(); }
    if (e.data.bertviz === 'height' && Number.isFinite(e.data.height))
      frame.style.height = Math.min(Math.max(e.data.height + 2, 60), 50000) + 'px';
  });
  watch('value', show);
  show();
};
