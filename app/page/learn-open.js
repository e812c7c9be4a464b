// The Learn path's button that opens the full tab (app/tabs/learn.py), given the step on screen as JSON.
export default (w) => { const o = JSON.parse(w || '{}'); window.explorerLink?.open(o.tab || 'learn'); };
