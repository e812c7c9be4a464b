// The language switch's change (app/i18n.py switch): the page relabelled in the browser (head.js).
export default (lang) => { window.explorerLang?.apply(lang); };
