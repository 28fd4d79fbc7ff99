// The Swap view (a part: loaded only when swaps are enabled and the view is opened). Swaps need the
// chain features, which this deployment does not have yet.

export function Swap() {
  return <p className="vst-muted">Swaps are not available on this deployment yet.</p>;
}
