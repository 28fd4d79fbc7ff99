// The widget's views, each named after its route (spec section 2). They render the mirrored
// state and send commands; they decide nothing. Connect, ConnectingWallet, Account, SIWXSignMessage
// and the toasts are drawn; the routes of later features (SwitchNetwork, Swap, ...) show their name.

import { useEffect, useLayoutEffect, useRef, useState, type CSSProperties, type ReactNode } from "react";
import { DISPLAY } from "../generated/constants";
import type { ClientCommand } from "../generated/ClientCommand";
import type { ConnectorGroup } from "../generated/ConnectorGroup";
import type { ConnectorGroupView } from "../generated/ConnectorGroupView";
import type { SessionState } from "../generated/SessionState";
import type { SocialProvider } from "../generated/SocialProvider";
import type { ThemeMode } from "../generated/ThemeMode";
import type { View } from "../generated/View";

export type Send = (command: ClientCommand) => void;

/** Spec: an address shows its first 4 and last 6 characters. */
export function truncateAddress(address: string): string {
  const { addressHeadChars: head, addressTailChars: tail } = DISPLAY;
  return address.length > head + tail + 2 ? `${address.slice(0, head)}…${address.slice(-tail)}` : address;
}

const button: CSSProperties = { display: "block", boxSizing: "border-box", width: "100%", padding: "12px", margin: "6px 0", borderRadius: 12, border: "1px solid var(--vst-border)", background: "var(--vst-surface)", color: "inherit", font: "inherit", cursor: "pointer", textAlign: "left" };

const GROUP_TITLES: Record<ConnectorGroup, string> = {
  walletConnect: "WalletConnect",
  recent: "Recent",
  injected: "Installed",
  featured: "Featured",
  custom: "More wallets",
  external: "External",
  recommended: "Recommended",
};

const SOCIAL_NAMES: Record<SocialProvider, string> = {
  google: "Google",
  x: "X",
  farcaster: "Farcaster",
  discord: "Discord",
  apple: "Apple",
  github: "GitHub",
  facebook: "Facebook",
};

const sectionTitle: CSSProperties = { fontSize: 12, opacity: 0.7, margin: "12px 0 4px", fontWeight: 500 };

function EmailMethod({ send }: { send: Send }) {
  return (
    <form
      aria-label="Continue with email"
      data-connect-method="email"
      onSubmit={(e) => {
        e.preventDefault();
        const email = new FormData(e.currentTarget).get("email");
        // The server validates the address; the browser's own check only saves a round trip.
        if (typeof email === "string") send({ type: "ConnectEmail", email } as ClientCommand);
      }}
    >
      <label style={{ display: "block" }}>
        <span style={sectionTitle}>Email</span>
        <input name="email" type="email" required autoComplete="email" placeholder="you@example.com" style={{ ...button, cursor: "text" }} />
      </label>
      <button type="submit" style={button}>
        Continue with email
      </button>
    </form>
  );
}

function SocialMethod({ providers, send }: { providers: SocialProvider[]; send: Send }) {
  return (
    <div role="group" aria-label="Social login" data-connect-method="social" style={{ display: "flex", flexWrap: "wrap", gap: 6, margin: "6px 0" }}>
      {providers.map((provider) => (
        <button
          key={provider}
          style={{ ...button, width: "auto", flex: "1 0 30%", margin: 0, textAlign: "center" }}
          aria-label={`Continue with ${SOCIAL_NAMES[provider]}`}
          onClick={() => send({ type: "ConnectSocial", provider } as ClientCommand)}
        >
          {SOCIAL_NAMES[provider]}
        </button>
      ))}
    </div>
  );
}

function WalletMethod({ groups, send }: { groups: ConnectorGroupView[]; send: Send }) {
  if (groups.length === 0) return <p data-connect-method="wallet">No wallet found in this browser.</p>;
  return (
    <div data-connect-method="wallet">
      {groups.map((g) => (
        <div key={g.group} role="group" aria-label={GROUP_TITLES[g.group]} data-connector-group={g.group}>
          <h3 style={sectionTitle}>{GROUP_TITLES[g.group]}</h3>
          {g.entries.map((e) => (
            <button
              key={e.walletId}
              style={button}
              disabled={!e.connectorId}
              aria-label={`Connect ${e.name}`}
              onClick={() => e.connectorId && send({ type: "SelectConnector", connectorId: e.connectorId } as ClientCommand)}
            >
              {e.icon && <img src={e.icon} alt="" width={24} height={24} style={{ verticalAlign: "middle", marginRight: 8 }} />}
              {e.name}
              {e.installed ? "" : " (not installed)"}
            </button>
          ))}
        </div>
      ))}
    </div>
  );
}

/** The connect methods in the server's order (spec section 2: email, social, wallet; wallet first
 * when an injected or announced wallet is shown), each only when its feature is on. */
export function Connect({ state, send }: { state: SessionState; send: Send }) {
  const { methods, groups } = state.connectView;
  return (
    <section aria-label="Connect wallet">
      {methods.map((method) => {
        switch (method) {
          case "email":
            return <EmailMethod key={method} send={send} />;
          case "social":
            return <SocialMethod key={method} providers={state.options.features.socials} send={send} />;
          case "wallet":
            return <WalletMethod key={method} groups={groups} send={send} />;
        }
      })}
    </section>
  );
}

export function ConnectingWallet({ state }: { state: SessionState }) {
  const id = state.router.stack[state.router.stack.length - 1]?.params?.connectorId;
  const name = state.connection.connectors.find((c) => c.id === id)?.name ?? "your wallet";
  return (
    <section aria-label="Connecting" aria-busy="true">
      <p>Continue in {name}…</p>
    </section>
  );
}

const ACCOUNT_TABS = ["Tokens", "NFTs", "Activity"] as const;
const TAB_UNAVAILABLE: Record<(typeof ACCOUNT_TABS)[number], string> = {
  Tokens: "Token balances are not available on this deployment yet.",
  NFTs: "NFTs are not available on this deployment yet.",
  Activity: "Activity is not available on this deployment yet.",
};

export function Account({ state, send }: { state: SessionState; send: Send }) {
  const ns = state.connection.activeNamespace;
  const conn = ns ? state.connection.namespaces[ns] : undefined;
  // Which tab shows is this page's own concern (the session has no state for it).
  const [tab, setTab] = useState<(typeof ACCOUNT_TABS)[number]>("Tokens");
  return (
    <section aria-label="Account">
      <p style={{ fontSize: 20, margin: "8px 0" }} data-testid="account-address" title={conn?.address ?? ""}>
        {conn?.address ? truncateAddress(conn.address) : "Not connected"}
      </p>
      <p data-testid="account-network">{conn?.network?.name ?? ""}</p>
      <div role="tablist" aria-label="Account tabs">
        {ACCOUNT_TABS.map((t) => (
          <button key={t} id={`vestibule-tab-${t}`} role="tab" aria-selected={t === tab} aria-controls="vestibule-tab-panel" onClick={() => setTab(t)} style={{ ...button, display: "inline-block", width: "auto", marginRight: 6, fontWeight: t === tab ? 600 : 400 }}>
            {t}
          </button>
        ))}
      </div>
      <div role="tabpanel" id="vestibule-tab-panel" aria-labelledby={`vestibule-tab-${tab}`} style={{ padding: "8px 0", opacity: 0.7 }}>
        {/* Balances, NFTs and activity need the chain features, which this deployment does not have yet. */}
        {TAB_UNAVAILABLE[tab]}
      </div>
      <button style={button} onClick={() => send({ type: "Disconnect" } as ClientCommand)}>
        Disconnect
      </button>
    </section>
  );
}

export function SIWXSignMessage({ state, send }: { state: SessionState; send: Send }) {
  const siwx = state.siwx;
  const busy = siwx.status === "signing" || siwx.status === "verifying";
  return (
    <section aria-label="Sign in">
      <pre data-testid="siwx-message" style={{ whiteSpace: "pre-wrap", fontSize: 11, maxHeight: 160, overflow: "auto", background: "var(--vst-surface)", padding: 8, borderRadius: 8 }}>
        {siwx.challenge?.message ?? ""}
      </pre>
      {siwx.error && (
        <p role="alert" data-testid="siwx-error">
          {siwx.error}
        </p>
      )}
      <button style={button} disabled={busy} aria-busy={busy} onClick={() => send({ type: "SiwxSign" } as ClientCommand)}>
        {busy ? "Signing…" : "Sign"}
      </button>
      <button style={button} onClick={() => send({ type: "SiwxCancel" } as ClientCommand)}>
        Cancel
      </button>
    </section>
  );
}

/** The loading toast's mark: drawn, not a glyph (emoji fonts are not everywhere). */
function Spinner() {
  return (
    <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" style={{ marginRight: 6, verticalAlign: "-1px" }}>
      <circle cx="6" cy="6" r="4.5" fill="none" stroke="currentColor" strokeOpacity="0.3" strokeWidth="1.5" />
      <path d="M6 1.5a4.5 4.5 0 0 1 4.5 4.5" fill="none" stroke="currentColor" strokeWidth="1.5">
        <animateTransform attributeName="transform" type="rotate" from="0 6 6" to="360 6 6" dur="0.8s" repeatCount="indefinite" />
      </path>
    </svg>
  );
}

let swipeStart: { x: number; t: number } | null = null;

export function Toasts({ state, send }: { state: SessionState; send: Send }) {
  const visible = state.toasts.order.map((id) => state.toasts.items[id]).filter((t) => t?.visible);
  return (
    <ol
      aria-label="Notifications"
      tabIndex={-1}
      id="vestibule-toasts"
      onMouseEnter={() => send({ type: "SetToastHover", hovered: true } as ClientCommand)}
      onMouseLeave={() => send({ type: "SetToastHover", hovered: false } as ClientCommand)}
      style={{ ...themeStyle(state.options.themeMode, state.options.themeVariables as Record<string, string>), position: "fixed", right: 16, bottom: 16, width: DISPLAY.toastWidthPx, display: "flex", flexDirection: "column", gap: DISPLAY.toastGapPx, listStyle: "none", margin: 0, padding: 0, zIndex: DISPLAY.modalZIndex + 1 }}
    >
      {visible.map((t) =>
        t ? (
          <li
            key={t.id}
            role="status"
            data-variant={t.variant}
            // The gesture is reported; the server decides (20 px, or 0.11 px/ms) whether it dismisses.
            onPointerDown={(e) => (swipeStart = { x: e.clientX, t: performance.now() })}
            onPointerUp={(e) => {
              const start = swipeStart;
              swipeStart = null;
              if (start && Math.abs(e.clientX - start.x) > 2) {
                send({ type: "SwipeToast", id: t.id, distancePx: e.clientX - start.x, elapsedMs: performance.now() - start.t } as ClientCommand);
              }
            }}
            // No text selection: a selected toast would start a native drag and cancel the swipe.
            style={{ userSelect: "none", touchAction: "pan-y", padding: "12px 16px", borderRadius: 12, background: "var(--vst-surface)", color: "var(--vst-text)", border: "1px solid var(--vst-border)", boxShadow: "0 4px 12px rgba(0,0,0,.2)" }}>
            {t.variant === "loading" ? <Spinner /> : t.variant === "error" ? "⚠ " : "✓ "}
            {t.message}
          </li>
        ) : null,
      )}
    </ol>
  );
}

const THEMES = {
  dark: { "--vst-bg": "#141414", "--vst-surface": "#1f1f1f", "--vst-text": "#f0f0f0", "--vst-border": "#333" },
  light: { "--vst-bg": "#ffffff", "--vst-surface": "#f3f3f3", "--vst-text": "#141414", "--vst-border": "#ddd" },
};

/** The theme's CSS variables (spec: dark by default, light, and the host's theme variables). */
export function themeStyle(themeMode: ThemeMode | undefined, themeVariables?: Record<string, string> | null): CSSProperties {
  return { ...THEMES[themeMode === "light" ? "light" : "dark"], ...(themeVariables ?? {}) } as CSSProperties;
}

/** `embedded`: drawn in place (inside a host element, or the replay timeline) rather than over the page. */
/** The header's title for each route. */
const VIEW_TITLES: Record<View, string> = {
  Connect: "Connect wallet",
  AllWallets: "All wallets",
  ConnectingWallet: "Connecting",
  Networks: "Networks",
  Account: "Account",
  SwitchNetwork: "Switch network",
  SwitchActiveChain: "Switch chain",
  SIWXSignMessage: "Sign in with your wallet",
  ApproveTransaction: "Approve transaction",
  UpdateEmailWallet: "Update email",
  Swap: "Swap",
};

/** The modal's height follows its content's, animated (spec: 150 ms). */
function AnimatedHeight({ children }: { children: ReactNode }) {
  const inner = useRef<HTMLDivElement>(null);
  const [height, setHeight] = useState<number | undefined>(undefined);
  useLayoutEffect(() => {
    const element = inner.current;
    if (!element || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => setHeight(element.offsetHeight));
    observer.observe(element);
    setHeight(element.offsetHeight);
    return () => observer.disconnect();
  }, []);
  return (
    <div style={{ height, overflow: "hidden", transition: `height ${DISPLAY.heightTransitionMs}ms ease-out` }}>
      {/* flow-root: the children's margins stay inside, so the measured height includes them. */}
      <div ref={inner} style={{ display: "flow-root" }}>
        {children}
      </div>
    </div>
  );
}

/** Where focus goes when the dialog opens: its first enabled control other than Close, else Close. */
function focusInside(dialog: HTMLElement) {
  const controls = Array.from(dialog.querySelectorAll<HTMLElement>("button:not([disabled]), input, select, [href]"));
  (controls.find((c) => c.getAttribute("aria-label") !== "Close") ?? controls[0] ?? dialog).focus();
}

/** `embedded`: drawn in place (inside a host element, or the replay timeline) rather than over the
 * page; an overlaid modal takes focus when it opens, gives it back when it closes, and closes on
 * Escape wherever focus is (when closing is allowed). */
export function Modal({ state, send, children, embedded = false }: { state: SessionState; send: Send; children: ReactNode; embedded?: boolean }) {
  const theme = themeStyle(state.options.themeMode, state.options.themeVariables as Record<string, string>);
  const open = state.modal.status === "open";
  const closable = state.modal.closable;
  const dialog = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open || embedded || !dialog.current) return;
    const before = document.activeElement as HTMLElement | null;
    focusInside(dialog.current);
    return () => {
      if (before?.isConnected) before.focus();
    };
  }, [open, embedded]);
  useEffect(() => {
    if (!open || embedded) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && closable) send({ type: "CloseModal" } as ClientCommand);
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [open, embedded, closable, send]);
  if (!open) return null;
  const close = () => closable && send({ type: "CloseModal" } as ClientCommand);
  const overlay: CSSProperties = embedded
    ? { position: "relative", display: "inline-block" }
    : { position: "fixed", inset: 0, zIndex: DISPLAY.modalZIndex, background: "rgba(0,0,0,.45)", display: "grid", placeItems: "center" };
  return (
    <div style={{ ...theme, ...overlay }} onKeyDown={(e) => embedded && e.key === "Escape" && close()}>
      <style>{"@keyframes vestibule-fade-in { from { opacity: 0 } to { opacity: 1 } }"}</style>
      <div ref={dialog} tabIndex={-1} role="dialog" aria-modal={!embedded} aria-label="Vestibule" data-vestibule-dialog="true" style={{ width: DISPLAY.modalWidthPx, boxSizing: "border-box", background: "var(--vst-bg)", color: "var(--vst-text)", borderRadius: 24, padding: 20, font: "14px system-ui, sans-serif", outline: "none" }}>
        <header style={{ display: "flex", justifyContent: "space-between", alignItems: "center", marginBottom: 12 }}>
          {/* Keyed by the view, so a new title fades in (spec: 120 ms). */}
          <h2 key={state.router.current} data-route={state.router.current} style={{ fontSize: 16, margin: 0, animation: `vestibule-fade-in ${DISPLAY.headerTransitionMs}ms ease-out` }}>
            {VIEW_TITLES[state.router.current]}
          </h2>
          <button aria-label="Close" disabled={!closable} onClick={close} style={{ background: "none", border: 0, color: "inherit", fontSize: 18, cursor: "pointer" }}>
            ×
          </button>
        </header>
        <AnimatedHeight>
          {/* Keyed by the view, so a new view fades in (spec: 150 ms). */}
          <div key={state.router.current} style={{ animation: `vestibule-fade-in ${DISPLAY.viewTransitionMs}ms ease-out` }}>
            {children}
          </div>
        </AnimatedHeight>
      </div>
    </div>
  );
}

export function CurrentView({ state, send }: { state: SessionState; send: Send }) {
  switch (state.router.current) {
    case "Connect":
    case "AllWallets":
      return <Connect state={state} send={send} />;
    case "ConnectingWallet":
      return <ConnectingWallet state={state} />;
    case "Account":
      return <Account state={state} send={send} />;
    case "SIWXSignMessage":
      return <SIWXSignMessage state={state} send={send} />;
    default:
      return <p>{state.router.current}</p>;
  }
}
