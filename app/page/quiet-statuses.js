// In the page's head (head.js), given Gradio's statustracker module (app/gradio_adapter.py STATUS_JS); true once it
// is installed. The LoadingStatus class's `update` (called once per status message, before the page applies the
// statuses) sees every status; anything else that enumerates `current` (Gradio's update_loading_stati_state alone)
// sees those whose value changed since the last such enumeration, each of them once. Entries are still read,
// written and deleted as Gradio writes them.
export default (module) => {
  const LoadingStatus = Object.values(module ?? {}).find((v) => v?.LoadingStatus)?.LoadingStatus;
  const proto = LoadingStatus?.prototype, update = proto?.update;
  if (typeof update !== 'function' || update.__quiet) return false;
  const changedOnly = (owner) => {
    const seen = {all: false, sent: new Map()};
    owner.current = new Proxy(owner.current, {ownKeys: (t) => {
      const keys = Reflect.ownKeys(t);
      if (seen.all) return keys;
      return keys.filter((k) => {
        const now = JSON.stringify(t[k]);
        if (seen.sent.get(k) === now) return false;
        seen.sent.set(k, now);
        return true;
      });
    }});
    return seen;
  };
  proto.update = function () {
    const seen = this.__seen ??= changedOnly(this);
    seen.all = true;
    try { return update.apply(this, arguments); } finally { seen.all = false; }
  };
  proto.update.__quiet = true;
  return true;
};
