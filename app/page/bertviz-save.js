// In a bertviz view's page (app/bertviz_views.py _page: the frame's and the file's), after the button above the view
// that saves its SVG: bertviz draws each view into one <svg> under #vis, saved as `name`.svg.
export default function (name) {
  document.getElementById("save-svg").addEventListener("click", function () {
    var svg = document.querySelector("#vis svg");
    if (!svg) return;
    svg.setAttribute("xmlns", "http://www.w3.org/2000/svg");
    var text = new XMLSerializer().serializeToString(svg);
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], {type: "image/svg+xml"}));
    a.download = name + ".svg";
    document.body.appendChild(a); a.click(); a.remove();
  });
}
