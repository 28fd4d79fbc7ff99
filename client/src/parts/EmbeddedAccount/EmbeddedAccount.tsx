// The Account view's embedded user (when the active connection is the auth connector): the email
// (cut past 30 characters, spec §5 Display) or the social username (as the session keeps it: a
// Discord name ending in 0 has lost that 0 there, spec §5 Display, so it is not cut again here),
// and, for email users, Update email (spec §2: the UpdateEmailWallet view).
// A part of its own: the modal chunk, which draws Account, has no room for it.

import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { truncateEmail } from "../CodeEntry/CodeEntry";

export function EmbeddedAccount() {
  const widget = useWidget();
  const user = useSessionSelector((s) => s.embedded?.user);
  if (!user) return null;
  const name = user.email ? truncateEmail(user.email) : (user.username ?? null);
  return (
    <div className="vst-account__embedded" data-testid="embedded-account">
      {name && (
        <p className="vst-muted" data-testid="embedded-account-name" title={user.email ?? user.username}>
          {name}
        </p>
      )}
      {user.provider === "email" && (
        <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "Navigate", view: "UpdateEmailWallet" })}>
          Update email
        </button>
      )}
    </div>
  );
}
