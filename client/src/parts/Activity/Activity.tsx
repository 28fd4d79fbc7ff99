// The Account view's Activity tab (a part: loaded only when the activity feature is on and the tab
// is opened). The transaction list needs the chain features, which this deployment does not have yet.

export function Activity() {
  return <p className="vst-muted">Activity is not available on this deployment yet.</p>;
}
