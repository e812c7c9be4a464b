// After the event that sends the views drawn ahead (app/views.py wire_ahead; idle.js clicks its button): <html> is
// marked data-drawn-ahead, which the tests and the tabs benchmark wait for.
export default () => { document.documentElement.dataset.drawnAhead = ''; };
