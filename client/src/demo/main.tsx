// A developer page, served at `/` until the widget's views exist: it opens a session on this
// gateway, mirrors it (hash-checked diffs, chart machines) and sends a few commands. The state it
// shows is the server's; the page only mirrors it.

import { StrictMode, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import { Transport } from "../transport/transport";

const scheme = location.protocol === "https:" ? "wss" : "ws";
const transport = new Transport({
  url: `${scheme}://${location.host}/ws`,
  projectId: "demo",
  storage: localStorage,
  createSocket: (url) => new WebSocket(url) as never,
});
(window as unknown as { __vestibule: Transport }).__vestibule = transport;
transport.connect();
addEventListener("online", () => transport.wake());
document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && transport.wake());

let version = 0;
transport.subscribe(() => version++);
const subscribe = (f: () => void) => transport.subscribe(f);

function App() {
  useSyncExternalStore(subscribe, () => version);
  const state = transport.mirror.state;
  const send = (command: object) => void transport.command(command as never).catch(() => undefined);
  return (
    <main style={{ font: "14px system-ui, sans-serif", maxWidth: 720, margin: "2rem auto" }}>
      <h1>Vestibule session mirror</h1>
      <p>
        Session seq <output aria-label="seq">{transport.mirror.seq}</output>, hash <code>{transport.mirror.hash}</code>
      </p>
      <p>
        <button onClick={() => send({ type: "OpenModal" })}>Open modal</button>{" "}
        <button onClick={() => send({ type: "CloseModal" })}>Close modal</button>{" "}
        <button onClick={() => send({ type: "ShowToast", message: `Hello at ${new Date().toLocaleTimeString()}`, variant: "success" })}>
          Show a toast
        </button>
      </p>
      <h2>Machines</h2>
      <table>
        <tbody>
          {Object.entries(transport.charts.values()).map(([region, value]) => (
            <tr key={region}>
              <th style={{ textAlign: "left", paddingRight: "1rem" }}>{region}</th>
              <td>{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Toasts</h2>
      <ul>{state?.toasts.order.map((id) => <li key={id}>{state.toasts.items[id]?.message}</li>)}</ul>
      <p>The widget's views (Connect, Account, sign-in) are not built yet.</p>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
