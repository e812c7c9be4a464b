// The German boxes' sentence when the page loads (a load event's js, run in the page before the reader can type:
// app/links.py wire): the link's, read as read_link reads it (trimmed, cut to `cap` characters), else the boxes'
// own. The server's load translates the same sentence; were it to write the boxes when it answers, it would
// replace what the reader typed meanwhile.
export default (cap) => (translateBox, learnBox) => {
  const text = [...(new URLSearchParams(window.location.search).get('text') ?? '').trim()].slice(0, cap).join('');
  return text ? [text, text] : [translateBox, learnBox];
};
