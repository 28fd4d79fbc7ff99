// React hosts: `<VestibuleProvider options>` creates the widget once and draws it; `useVestibule()`
// gives its state and controls.

import { createContext, useContext, useMemo, useSyncExternalStore, type ReactNode } from "react";
import type { SessionState } from "./generated/SessionState";
import { createProvider, type HostProvider } from "./provider";
import { WidgetRoot } from "./views/WidgetRoot";
import { createWidget, type Widget, type WidgetOptions } from "./widget";

const Context = createContext<{ widget: Widget; provider: HostProvider } | null>(null);

export function VestibuleProvider({ options, children }: { options: WidgetOptions; children?: ReactNode }) {
  const value = useMemo(() => {
    const widget = createWidget(options);
    return { widget, provider: createProvider(widget) };
    // The widget lives as long as the provider: options are read once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return (
    <Context.Provider value={value}>
      {children}
      <WidgetRoot widget={value.widget} />
    </Context.Provider>
  );
}

export function useVestibule(): { state: SessionState | null; open(): void; close(): void; provider: HostProvider } {
  const value = useContext(Context);
  if (!value) throw new Error("useVestibule must be used inside <VestibuleProvider>");
  const { widget, provider } = value;
  useSyncExternalStore((f) => widget.subscribe(f), () => widget.transport.mirror.seq);
  return { state: widget.state(), open: widget.open, close: widget.close, provider };
}
