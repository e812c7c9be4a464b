// In a bertviz view's file (app/bertviz_views.py standalone_html), in place of bertviz's CDN loader, after jQuery and
// d3 are written into the page: bertviz's call of RequireJS is handed both at once.
export default function () {
  window.require = {config: function () {}};
  window.requirejs = function (deps, callback) {
    callback.apply(null, deps.map(function (d) { return d === "jquery" ? window.jQuery : window.d3; }));
  };
}
