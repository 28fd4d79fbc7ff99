// The messages between the host page (the widget's bridge, core/effects/secureFrame.ts) and the
// secure frame (frame.ts), shared by both (docs/embedded-wallet.md, "Host ⇄ frame messages").
// Every message is `{ vestibule: 1, id, type, payload }`; an answer repeats the id with the type
// `<TYPE>_SUCCESS` or `<TYPE>_ERROR`. The validators are hand-written and strict: a message with an
// unknown type, a missing field, a field of the wrong type or a field nobody defined is refused, so
// a page that can post to the frame (or to the host) cannot smuggle anything past the schema.

import type { Namespace } from "../generated/Namespace";
import type { RequestKind } from "../generated/RequestKind";
import type { WalletOutcome } from "../generated/WalletOutcome";
import { EMBEDDED_EVM_METHODS } from "../generated/embeddedWallet";

export const PROTOCOL_VERSION = 1;

/** The social popup's message to its opener (posted by the callback page, assets/callback.js). */
export const SOCIAL_RESULT = "VESTIBULE_SOCIAL_RESULT";

export type Theme = "light" | "dark";

/** What the host asks the frame, by type. */
export interface HostRequests {
  CONNECT_OTP: { challengeId: string; otp: string };
  CONNECT_SOCIAL: { resultUri: string };
  CONNECT_FARCASTER: Record<string, never>;
  UPDATE_EMAIL_OTP: { step: "primary" | "secondary"; otp: string };
  RPC_REQUEST: { requestId: string; connectorId: "auth"; namespace: Namespace; chainId: string; kind: RequestKind };
  SHOW_APPROVAL: { theme: Theme };
  HIDE_APPROVAL: Record<string, never>;
  SIGN_OUT: Record<string, never>;
  SYNC_THEME: { themeMode: Theme; themeVariables: Record<string, string> };
}

/** What the frame answers, by request type. */
export interface FrameAnswers {
  CONNECT_OTP: { address: string };
  CONNECT_SOCIAL: { address: string };
  CONNECT_FARCASTER: { address: string };
  UPDATE_EMAIL_OTP: Record<string, never>;
  RPC_REQUEST: { outcome: WalletOutcome };
  SHOW_APPROVAL: Record<string, never>;
  HIDE_APPROVAL: Record<string, never>;
  SIGN_OUT: Record<string, never>;
  SYNC_THEME: Record<string, never>;
}

export type HostRequestType = keyof HostRequests;

export type HostMessage = { [T in HostRequestType]: { vestibule: 1; id: string; type: T; payload: HostRequests[T] } }[HostRequestType];

export type FrameMessage =
  | { vestibule: 1; id: string; type: "FRAME_READY"; payload: { frameId: string } }
  | { [T in HostRequestType]: { vestibule: 1; id: string; type: `${T}_SUCCESS`; payload: FrameAnswers[T] } }[HostRequestType]
  | { vestibule: 1; id: string; type: `${HostRequestType}_ERROR`; payload: { message: string } };

/** A random 16-byte id in hex. */
export function newMessageId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

// The server's lists (actors: embedded_wallet::needs_approval): the frame is shown for each, and
// answers the ones it cannot perform (signAllTransactions) with 4200 there. The EVM list is the
// server's own (generated): the session refuses the host's other EVM wallet methods first.
const EVM_SIGNING_METHODS: readonly string[] = EMBEDDED_EVM_METHODS;
export const SOLANA_SIGNING_METHODS = [
  "solana:signTransaction",
  "solana:signAndSendTransaction",
  "solana:signMessage",
  "solana:signAllTransactions",
  "solana_signTransaction",
  "solana_signAndSendTransaction",
  "solana_signMessage",
  "solana_signAllTransactions",
];

/** Whether a wallet request needs the visitor's approval, drawn by the frame (and so the host shows
 * the frame over the ApproveTransaction view while it waits). */
export function isSigningRequest(request: { kind: RequestKind }): boolean {
  const { kind } = request;
  return kind.type === "signMessage" || kind.type === "signTransaction" || (kind.type === "rpc" && (EVM_SIGNING_METHODS.includes(kind.method) || SOLANA_SIGNING_METHODS.includes(kind.method)));
}

// ---- validators -------------------------------------------------------------------------------

type Check = (value: unknown) => boolean;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;

/** An object with exactly `fields` (each passing its check) and, optionally, `optional` ones. Own
 * keys only: `in` would also find "constructor", "toString", ... on Object.prototype. */
function exact(fields: Record<string, Check>, optional: Record<string, Check> = {}): Check {
  return (value) => {
    if (!isRecord(value)) return false;
    for (const key of Object.keys(value)) if (!Object.hasOwn(fields, key) && !Object.hasOwn(optional, key)) return false;
    for (const [key, check] of Object.entries(fields)) if (!Object.hasOwn(value, key) || !check(value[key])) return false;
    for (const [key, check] of Object.entries(optional)) if (Object.hasOwn(value, key) && !check(value[key])) return false;
    return true;
  };
}

const text = (max: number): Check => (v) => typeof v === "string" && v.length > 0 && v.length <= max;
const oneOf = (...options: string[]): Check => (v) => typeof v === "string" && options.includes(v);
const pattern = (re: RegExp): Check => (v) => typeof v === "string" && re.test(v);
/** Any JSON value (a request's params), at most `max` characters once serialized. */
const json = (max: number): Check => (v) => {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? v === undefined : s.length <= max;
  } catch {
    return false;
  }
};

const ID = /^[0-9a-f]{32}$/;
const OTP = /^[0-9]{6}$/;
const NAMESPACES: Namespace[] = ["eip155", "solana", "polkadot", "bip122", "cosmos"];
const THEMES = ["light", "dark"];

const requestKind: Check = (v) => {
  if (!isRecord(v)) return false;
  switch (v.type) {
    case "connect":
    case "sync":
      return exact({ type: oneOf(v.type) })(v);
    case "signMessage":
      return exact({ type: oneOf("signMessage"), message: (m) => typeof m === "string" && m.length <= 65_536, address: text(128) })(v);
    case "signTransaction":
      return exact({ type: oneOf("signTransaction"), transaction: text(65_536), address: text(128), network: text(128) })(v);
    case "rpc":
      return exact({ type: oneOf("rpc"), method: text(128), params: json(65_536) })(v);
    default:
      return false;
  }
};

const themeVariables: Check = (v) => isRecord(v) && Object.keys(v).length <= 32 && Object.entries(v).every(([k, x]) => k.length <= 64 && typeof x === "string" && x.length <= 256);

const HOST_PAYLOADS: Record<HostRequestType, Check> = {
  CONNECT_OTP: exact({ challengeId: text(128), otp: pattern(OTP) }),
  CONNECT_SOCIAL: exact({ resultUri: text(4096) }),
  CONNECT_FARCASTER: exact({}),
  UPDATE_EMAIL_OTP: exact({ step: oneOf("primary", "secondary"), otp: pattern(OTP) }),
  RPC_REQUEST: exact({ requestId: text(128), connectorId: oneOf("auth"), namespace: oneOf(...NAMESPACES), chainId: text(128), kind: requestKind }),
  SHOW_APPROVAL: exact({ theme: oneOf(...THEMES) }),
  HIDE_APPROVAL: exact({}),
  SIGN_OUT: exact({}),
  SYNC_THEME: exact({ themeMode: oneOf(...THEMES), themeVariables }),
};

const ADDRESS: Check = text(128);
const ANSWERS: Record<HostRequestType, Check> = {
  CONNECT_OTP: exact({ address: ADDRESS }),
  CONNECT_SOCIAL: exact({ address: ADDRESS }),
  CONNECT_FARCASTER: exact({ address: ADDRESS }),
  UPDATE_EMAIL_OTP: exact({}),
  RPC_REQUEST: exact({
    outcome: (o) =>
      exact({ status: oneOf("ok"), result: json(1_000_000) })(o) ||
      exact({ status: oneOf("error"), code: (c) => Number.isInteger(c), message: (m) => typeof m === "string" && m.length <= 1024 })(o),
  }),
  SHOW_APPROVAL: exact({}),
  HIDE_APPROVAL: exact({}),
  SIGN_OUT: exact({}),
  SYNC_THEME: exact({}),
};

const isHostRequestType = (t: unknown): t is HostRequestType => typeof t === "string" && Object.hasOwn(HOST_PAYLOADS, t);

const envelope = (v: unknown): v is { vestibule: 1; id: string; type: string; payload: unknown } =>
  exact({ vestibule: (x) => x === PROTOCOL_VERSION, id: pattern(ID), type: text(64), payload: isRecord })(v);

/** The host's message, or null when it does not match the schema. */
export function readHostMessage(data: unknown): HostMessage | null {
  if (!envelope(data) || !isHostRequestType(data.type) || !HOST_PAYLOADS[data.type](data.payload)) return null;
  // Checked field by field above: the shape is the one HostMessage names for this type.
  return data as HostMessage;
}

/** The frame's message, or null when it does not match the schema. */
export function readFrameMessage(data: unknown): FrameMessage | null {
  if (!envelope(data)) return null;
  if (data.type === "FRAME_READY") return exact({ frameId: text(128) })(data.payload) ? (data as FrameMessage) : null;
  const answer = /^([A-Z_]+)_(SUCCESS|ERROR)$/.exec(data.type);
  if (!answer || !isHostRequestType(answer[1])) return null;
  const ok = answer[2] === "SUCCESS" ? ANSWERS[answer[1]](data.payload) : exact({ message: text(1024) })(data.payload);
  return ok ? (data as FrameMessage) : null;
}

/** The popup's social result, or null. */
export function readSocialResult(data: unknown): { type: typeof SOCIAL_RESULT; resultUri: string } | null {
  return exact({ type: oneOf(SOCIAL_RESULT), resultUri: text(4096) })(data) ? (data as { type: typeof SOCIAL_RESULT; resultUri: string }) : null;
}

// ---- the approval window ----------------------------------------------------------------------
// The frame opens a window of its own origin for the visitor's decision (approvalWindow.ts, decision
// 1505): a page the host cannot paint over. The two talk only to each other: the window to its
// opener, the frame to the window it opened, both naming their own origin and checking the source.

export const APPROVAL_WINDOW_VERSION = 1;

export type ApprovalWindowText = { title: string; rows: Array<[string, string]> };

/** The window's messages to the frame that opened it. */
export type ApprovalWindowMessage =
  | { vestibuleApproval: 1; type: "APPROVAL_WINDOW_READY" }
  | { vestibuleApproval: 1; type: "APPROVAL_DECIDED"; nonce: string; approved: boolean };

/** The frame's message to the window: the request to decide on. */
export type ApprovalShowMessage = { vestibuleApproval: 1; type: "APPROVAL_SHOW"; nonce: string; theme: Theme; text: ApprovalWindowText };

const approvalVersion: Check = (v) => v === APPROVAL_WINDOW_VERSION;
/** The most rows the approval window shows: a Solana transaction has a row per instruction, and
 * one of 1,232 bytes holds a few hundred at most. */
export const APPROVAL_MAX_ROWS = 512;
const approvalRow: Check = (v) => Array.isArray(v) && v.length === 2 && text(64)(v[0]) && typeof v[1] === "string" && v[1].length <= 1_000_000;
const approvalText: Check = exact({ title: text(256), rows: (v) => Array.isArray(v) && v.length <= APPROVAL_MAX_ROWS && v.every(approvalRow) });

/** Whether the approval window can show `text` (the frame asks before it opens the window: one
 * check, the window's own). */
export function isApprovalWindowText(text: ApprovalWindowText): boolean {
  return approvalText(text);
}

/** The window's message, or null when it does not match the schema. */
export function readApprovalWindowMessage(data: unknown): ApprovalWindowMessage | null {
  const ready = exact({ vestibuleApproval: approvalVersion, type: oneOf("APPROVAL_WINDOW_READY") })(data);
  const decided = exact({ vestibuleApproval: approvalVersion, type: oneOf("APPROVAL_DECIDED"), nonce: pattern(ID), approved: (v) => typeof v === "boolean" })(data);
  // Checked field by field above.
  return ready || decided ? (data as ApprovalWindowMessage) : null;
}

/** The frame's message to the window, or null when it does not match the schema. */
export function readApprovalShow(data: unknown): ApprovalShowMessage | null {
  const ok = exact({ vestibuleApproval: approvalVersion, type: oneOf("APPROVAL_SHOW"), nonce: pattern(ID), theme: oneOf(...THEMES), text: approvalText })(data);
  return ok ? (data as ApprovalShowMessage) : null;
}
