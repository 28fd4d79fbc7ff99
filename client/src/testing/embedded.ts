// For the embedded wallet's view tests: a session state with an `embedded` part, and a fake secure
// frame (the views' EmbeddedHost) that records what it was asked and answers from handlers.

import type { EmbeddedState } from "../generated/EmbeddedState";
import type { SessionState } from "../generated/SessionState";
import type { EmbeddedHost } from "../core/effects/secureFrameHost";
import type { FrameAnswers, HostRequests, HostRequestType } from "../frame/protocol";

export const FRAME_ORIGIN = "https://frame.example";

/** The state with the embedded part: a ready frame, no login, no user, unless `over` says otherwise. */
export function withEmbedded(state: SessionState, over: Partial<EmbeddedState> = {}): SessionState {
  return {
    ...state,
    embedded: {
      frameOrigin: FRAME_ORIGIN,
      frame: { status: "ready", frameId: "f1" },
      login: { status: "idle" },
      update: { status: "idle" },
      lastEffectId: 0,
      ...over,
    },
  };
}

export type FrameHandlers = { [T in HostRequestType]?: (payload: HostRequests[T]) => Promise<FrameAnswers[T]> };

export interface FakeFrame {
  host: EmbeddedHost;
  /** Every request the views made, in order. */
  requests: { type: HostRequestType; payload: unknown }[];
}

/** A frame answering each request type with its handler (and refusing types without one). */
export function fakeFrame(handlers: FrameHandlers = {}, origin: string | null = FRAME_ORIGIN): FakeFrame {
  const requests: FakeFrame["requests"] = [];
  const host: EmbeddedHost = {
    frameOrigin: () => origin,
    request<T extends HostRequestType>(type: T, payload: HostRequests[T]): Promise<FrameAnswers[T]> {
      requests.push({ type, payload });
      const handler: FrameHandlers[T] = handlers[type];
      return handler ? handler(payload) : Promise.reject(new Error(`The fake frame has no answer to ${type}`));
    },
    placeApproval: () => undefined,
  };
  return { host, requests };
}
