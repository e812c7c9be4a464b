// The German boxes' sentence when the page loads (a load event's js: app/links.py wire): the link's, read as
// read_link reads it (trimmed, cut to `cap` characters). A page without one leaves the boxes alone (an output given
// `undefined` is skipped). Gradio keeps an update for a component not drawn yet (the Translate tab's box, until the
// tab opens) and gives it to the component as it is drawn: on a busy machine that came after the reader had typed,
// and the example written then replaced the reader's German. The server's load translates the same sentence and
// never writes the boxes, for the same reason.
export default (cap) => () => {
  const text = [...(new URLSearchParams(window.location.search).get('text') ?? '').trim()].slice(0, cap).join('');
  return text ? [text, text] : [undefined, undefined];
};
