// The browser's half of a move of the Time-lapse tab's scrubber (app/tabs/timelapse.py record_point_js), given the
// points' labels: the chosen point's line drawn over the curves (timelapse-now.js) and its label written in the
// address.
export default (labels) => (i) => {
  window.explorerTimelapse?.place(i);
  window.explorerLink?.set({snapshot: labels[i] ?? null});
};
