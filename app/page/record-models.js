// After a choice of the Compare tab's models (app/tabs/compare.py): A and B, recorded in the address (link.js).
export default (a, b) => { window.explorerLink?.set({a, b}); };
