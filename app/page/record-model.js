// After a choice of the header's model menu (app/header.py wire), given the page's own model's name: the model
// recorded in the address as ?model= (link.js), or taken out of it for the page's own.
export default (OWN) => (model) => { window.explorerLink?.set({model: model === OWN ? null : model}); };
