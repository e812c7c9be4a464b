// After a move of the Attention tab's controls (app/links.py wire): the kind, layer and head, recorded in the
// address (link.js).
export default (kind, layer, head) => { window.explorerLink?.set({kind, layer, head}); };
