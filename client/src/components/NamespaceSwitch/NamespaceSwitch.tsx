// The chain namespaces of a multichain session (those its networks are in), one button each; the
// active one is pressed. Choosing another sends `SwitchActiveNamespace`: the session shows that
// namespace's account, or SwitchActiveChain when none is connected there. Drawn only when the
// session has networks in more than one namespace.

import type { Namespace } from "../../generated/Namespace";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { NAMESPACE_NAMES } from "../../views/titles";
import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./NamespaceSwitch.css?inline";

const sameList = (a: Namespace[] | undefined, b: Namespace[] | undefined) => (a ?? []).join() === (b ?? []).join();

export function NamespaceSwitch() {
  const widget = useWidget();
  const namespaces = useSessionSelector((s) => [...new Set(s.networks.map((n) => n.caipNetworkId.split(":")[0]))].filter((ns): ns is Namespace => ns in NAMESPACE_NAMES), sameList) ?? [];
  const active = useSessionSelector((s) => s.connection.activeNamespace);
  const connected = useSessionSelector((s) => namespaces.filter((ns) => s.connection.namespaces[ns]?.status === "connected"), sameList) ?? [];
  if (namespaces.length < 2) return null;
  return (
    <div className="vst-namespaces" role="group" aria-label="Chain">
      <Stylesheet id="namespace-switch" css={css} />
      {namespaces.map((ns) => (
        <button
          key={ns}
          type="button"
          className="vst-namespaces__option"
          aria-pressed={ns === active}
          data-testid={`namespace-${ns}`}
          data-connected={connected.includes(ns)}
          onClick={() => ns !== active && widget.send({ type: "SwitchActiveNamespace", namespace: ns })}
        >
          <span className="vst-namespaces__dot" aria-hidden="true" />
          {NAMESPACE_NAMES[ns]}
        </button>
      ))}
    </div>
  );
}
