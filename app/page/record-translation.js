// After a translation (app/links.py wire): the sentence and its settings, recorded in the address (link.js).
export default (text, method, beam, alpha, temperature, top_k, max_len) => {
  window.explorerLink?.set({text, method, beam, alpha, temperature, top_k, max_len});
};
