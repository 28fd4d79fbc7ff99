// The widget a React tree draws, and the hooks views read it through. Views read the mirrored
// charts (`useRegion`, `useRoute`, `useModalOpen`): they can only show a state the server's chart
// declares. The data a state carries (addresses, messages) comes from the mirrored state
// (`useSessionSelector`), selected so a view renders again only when its part changes.

import { useSelector } from "@xstate/react";
import { createContext, useContext } from "react";
import type { AnyActorRef } from "xstate";
import type { ClientCommand } from "../generated/ClientCommand";
import type { ClientErrorKind } from "../generated/ClientErrorKind";
import type { SessionState } from "../generated/SessionState";
import type { View } from "../generated/View";
import type { ChartMirror } from "../core/charts/chartMirror";
import type { SessionOptionsInput } from "../core/options";
import type { EmbeddedHost } from "../core/effects/secureFrameHost";
import type { Refusal } from "../core/refusal";
import { isView } from "../views/titles";

/** What views read from: a widget (`createWidget`), or the replay timeline's recorded states. */
export interface ViewModel {
  /** An actor whose snapshots carry the mirrored state (the widget's transport). */
  readonly transport: {
    getSnapshot(): { context: { mirror: { state: SessionState | null }; refusal: Refusal | null } };
    subscribe: AnyActorRef["subscribe"];
  };
  readonly charts: Pick<ChartMirror, "actor">;
  readonly requested: SessionOptionsInput;
  send(command: ClientCommand): void;
  /** The embedded wallet's secure frame; absent where no frame runs (the replay timeline). */
  readonly embedded?: EmbeddedHost;
  reportError(kind: ClientErrorKind, detail: string): void;
}

export const WidgetContext = createContext<ViewModel | null>(null);

export function useWidget(): ViewModel {
  const widget = useContext(WidgetContext);
  if (!widget) throw new Error("Vestibule's views must be drawn inside <WidgetRoot> or <VestibuleProvider>");
  return widget;
}

/** A part of the mirrored state (undefined before the first welcome). */
export function useSessionSelector<T>(select: (state: SessionState) => T, compare?: (a: T | undefined, b: T | undefined) => boolean): T | undefined {
  const widget = useWidget();
  return useSelector(
    widget.transport,
    (snapshot) => {
      const state = snapshot.context.mirror.state;
      return state ? select(state) : undefined;
    },
    compare,
  );
}

/** The state of a mirrored chart region (`modal`, `router`, `connection/eip155`, `siwx`, ...). */
export function useRegion(key: string): string {
  const widget = useWidget();
  return useSelector(widget.charts.actor(key), (snapshot) => String(snapshot.value));
}

/** The view the router chart is in. */
export function useRoute(): View {
  const value = useRegion("router");
  return isView(value) ? value : "Connect";
}

export function useModalOpen(): boolean {
  return useRegion("modal") === "open";
}

export function useRefusal(): Refusal | null {
  const widget = useWidget();
  return useSelector(widget.transport, (snapshot) => snapshot.context.refusal);
}

/** Whether the session has arrived (the first welcome was applied). */
export function useStarted(): boolean {
  const widget = useWidget();
  return useSelector(widget.transport, (snapshot) => snapshot.context.mirror.state !== null);
}
