// The `js=` of every tab's drawing (app/views.py, Tab.wire), given the index of its `tabs` input. Gradio runs it in
// the page just before the drawing is sent, with the drawing's inputs, and sends what it returns: the same inputs,
// with `tabs` set to the ids of the tabs the page shows selected at that moment (every tab bar's, nested ones
// included). So a drawing reads which tabs are open from the page itself, at the moment it is sent; no record of
// openings kept on the server can fall behind, whatever order the page's requests reach it in. It does not wait:
// Gradio holds back a listener's next run (always_last) only once this one is sent, so a wait here would let two
// runs of one listener be in flight at once.
export default (index) => (...inputs) => {
  const selected = document.querySelectorAll('[role=tab][aria-selected=true][data-tab-id]');
  inputs[index] = JSON.stringify([...selected].map((b) => b.dataset.tabId));
  return inputs;
};
