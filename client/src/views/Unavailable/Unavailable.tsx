// The routes of features this deployment has not built yet (UpdateEmailWallet, ...):
// the modal says so plainly instead of showing nothing.

import type { View } from "../../generated/View";
import { VIEW_TITLES } from "../titles";

export function Unavailable({ view }: { view: View }) {
  return <p className="vst-muted">{VIEW_TITLES[view]} is not available on this deployment yet.</p>;
}
