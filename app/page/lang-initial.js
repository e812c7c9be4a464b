// The language switch's value when the page loads (a load event's js, app/i18n.py switch): the language the head
// picked (head.js), else `fallback`.
export default (fallback) => () => window.explorerLang?.lang() ?? fallback;
