// The React entry: a React host draws the widget with its own React (the modal's code is a lazy
// chunk of the host's bundle, loaded on first need or when the page is idle).
//
//   <VestibuleProvider options={{ projectId: "…", gatewayUrl: "wss://…/ws", options: { themeMode: "light" } }}>
//     <App />   // useVestibule() inside
//   </VestibuleProvider>
//
// The widget is created in an effect and destroyed in its cleanup, so it lives exactly as long as
// the provider is mounted; under StrictMode's mount, unmount, mount it opens one socket (the
// socket opens on a microtask, after StrictMode's synchronous unmount).

import { createContext, lazy, Suspense, useContext, useEffect, useState, useSyncExternalStore, type ReactNode } from "react";
import type { SessionState } from "./generated/SessionState";
import { createProvider, type HostProvider } from "./core/provider";
import { createSolanaProvider, type SolanaHostProvider } from "./core/solanaProvider";
import { whenUiNeeded, type Preload } from "./core/uiDemand";
import { createWidget, type Widget, type WidgetOptions } from "./core/widget";

const WidgetRoot = lazy(() => import("./components/WidgetRoot/WidgetRoot").then((m) => ({ default: m.WidgetRoot })));

interface Instance {
  widget: Widget;
  provider: HostProvider;
  solana: SolanaHostProvider;
}

const Context = createContext<Instance | null>(null);

export interface VestibuleProviderProps {
  options: WidgetOptions;
  /** Draw the modal in place (inside this provider's tree) instead of over the page. */
  embedded?: boolean;
  /** When the modal's code loads: when the page is idle (default), or only when first needed. */
  preloadModal?: Preload;
  /** Called with the widget once it exists (and with null when it is destroyed). */
  onWidget?: (widget: Widget | null) => void;
  children?: ReactNode;
}

/** What makes a new widget: a change of gateway, project or session options. */
const identity = (o: WidgetOptions) => JSON.stringify([o.gatewayUrl, o.projectId, o.options ?? null]);

export function VestibuleProvider({ options, embedded = false, preloadModal = "idle", onWidget, children }: VestibuleProviderProps) {
  const [instance, setInstance] = useState<Instance | null>(null);
  const [drawn, setDrawn] = useState(false);
  const key = identity(options);
  useEffect(() => {
    const widget = createWidget(options);
    setInstance({ widget, provider: createProvider(widget), solana: createSolanaProvider(widget) });
    setDrawn(false);
    whenUiNeeded(widget, () => setDrawn(true), preloadModal);
    onWidget?.(widget);
    return () => {
      widget.destroy();
      onWidget?.(null);
      setInstance(null);
    };
    // A widget per identity (gateway, project, session options); the rest is read once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return (
    <Context.Provider value={instance}>
      {children}
      {instance && drawn && (
        <Suspense fallback={null}>
          <WidgetRoot widget={instance.widget} embedded={embedded} />
        </Suspense>
      )}
    </Context.Provider>
  );
}

export interface UseVestibule {
  /** The mirrored state (null until the session arrived). */
  state: SessionState | null;
  open(): void;
  close(): void;
  /** The host's EIP-1193 provider (null until the widget exists, right after the first render). */
  provider: HostProvider | null;
  /** The host's Solana provider (null until the widget exists). */
  solana: SolanaHostProvider | null;
  widget: Widget | null;
}

const noop = () => () => {};

export function useVestibule(): UseVestibule {
  const instance = useContext(Context);
  const widget = instance?.widget ?? null;
  const state = useSyncExternalStore(widget ? widget.subscribe : noop, () => widget?.state() ?? null);
  return {
    state,
    open: () => widget?.open(),
    close: () => widget?.close(),
    provider: instance?.provider ?? null,
    solana: instance?.solana ?? null,
    widget,
  };
}
