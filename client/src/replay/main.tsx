// The replay timeline: pick a session, scrub through its seqs, and see at each step the modal as
// the visitor saw it (the widget's own views fed with the state the server folds from the log), each
// machine's chart with its active state, and the event and its patch. Live mode follows a running
// session. Reads the gateway's debug API, so it needs the admin token (kept in this tab only).

import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { compare } from "fast-json-patch";
import { charts } from "../generated/charts";
import type { SessionState } from "../generated/SessionState";
import { pointer } from "../core/patch";
import { WidgetRoot } from "../components/WidgetRoot/WidgetRoot";
import { createReplayView } from "./replayView";
import "./replay.css";

interface Envelope {
  seq: number;
  timeMs: number;
  type: string;
  correlationId: string | null;
  payload: unknown;
}

function useApi(token: string) {
  return async (path: string) => {
    const response = await fetch(path, { headers: { Authorization: `Bearer ${token}` } });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
}

function Timeline() {
  const [token, setToken] = useState(sessionStorage.getItem("vestibule:admin") ?? "");
  const [sessions, setSessions] = useState<Array<{ session: string; events: number; project: string }>>([]);
  const [session, setSession] = useState("");
  const [events, setEvents] = useState<Envelope[]>([]);
  const [seq, setSeq] = useState(0);
  const [states, setStates] = useState<{ before: SessionState | null; at: SessionState | null }>({ before: null, at: null });
  const [live, setLive] = useState(false);
  const [error, setError] = useState("");
  const [view] = useState(createReplayView);
  const api = useApi(token);
  useEffect(() => view.show(states.at), [view, states.at]);

  const loadSessions = async () => {
    try {
      sessionStorage.setItem("vestibule:admin", token);
      setSessions((await api("/debug/sessions?limit=1000")).sessions);
      setError("");
    } catch (e) {
      setError(String(e));
    }
  };

  useEffect(() => {
    if (!session) return;
    void api(`/debug/sessions/${session}/events?from=1`).then((list: Envelope[]) => {
      setEvents(list);
      setSeq(list.length ? list[list.length - 1].seq : 0);
    }, (e) => setError(String(e)));
  }, [session]);

  useEffect(() => {
    if (!session || seq < 1) return;
    void Promise.all([seq > 1 ? api(`/debug/sessions/${session}/state?seq=${seq - 1}`) : Promise.resolve(null), api(`/debug/sessions/${session}/state?seq=${seq}`)]).then(
      ([before, at]) => setStates({ before: before?.state ?? null, at: at.state }),
      (e) => setError(String(e)),
    );
  }, [session, seq]);

  // Live: follow the session's committed events (Server-Sent Events read with the token header).
  useEffect(() => {
    if (!live || !session) return;
    const abort = new AbortController();
    const from = (events[events.length - 1]?.seq ?? 0) + 1;
    void (async () => {
      const response = await fetch(`/debug/sessions/${session}/follow?from=${from}`, { headers: { Authorization: `Bearer ${token}` }, signal: abort.signal });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        const chunks = buffer.split("\n\n");
        buffer = chunks.pop() ?? "";
        const fresh = chunks.filter((c) => c.startsWith("data: ")).map((c) => JSON.parse(c.slice(6)) as Envelope);
        if (fresh.length) {
          setEvents((old) => [...old, ...fresh]);
          setSeq(fresh[fresh.length - 1].seq);
        }
      }
    })().catch(() => undefined);
    return () => abort.abort();
  }, [live, session]);

  const event = events.find((e) => e.seq === seq);
  const patch = states.at ? compare(states.before ?? {}, states.at) : [];
  const last = events[events.length - 1]?.seq ?? 0;

  return (
    <main className="replay">
      <h1>Replay timeline</h1>
      <p>
        <label>
          Admin token <input type="password" aria-label="Admin token" value={token} onChange={(e) => setToken(e.target.value)} />
        </label>{" "}
        <button onClick={loadSessions}>Load sessions</button> {error && <span role="alert">{error}</span>}
      </p>
      <p>
        <label>
          Session{" "}
          <select aria-label="Session" value={session} onChange={(e) => setSession(e.target.value)}>
            <option value="">—</option>
            {sessions.map((s) => (
              <option key={s.session} value={s.session}>
                {s.session} ({s.project}, {s.events} events)
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> live
        </label>
      </p>
      {session && (
        <>
          <p>
            <label>
              Seq <input type="range" aria-label="Seq" min={1} max={Math.max(1, last)} value={seq} onChange={(e) => setSeq(Number(e.target.value))} className="replay__seq" />
            </label>{" "}
            <output data-testid="seq">{seq}</output> / {last}
          </p>
          <div className="replay__panes">
            <section aria-label="What the visitor saw" data-testid="visitor-view" className="replay__visitor">
              {states.at && states.at.modal.status !== "open" && <p>(modal closed)</p>}
              <WidgetRoot widget={view.model} embedded />
            </section>
            <section aria-label="Machines">
              {charts.flatMap((c) =>
                c.regions.map((r) => {
                  const active = states.at ? pointer(states.at, r.statePath) : undefined;
                  return (
                    <p key={`${c.id}/${r.id}`} className="replay__chart">
                      <strong>{c.id === r.id ? c.id : `${c.id}/${r.id}`}</strong>:{" "}
                      {r.states.map((s) => (
                        <span key={s} data-active={s === active} className="replay__state">
                          {s}
                        </span>
                      ))}
                    </p>
                  );
                }),
              )}
            </section>
          </div>
          <h2>Event {seq}</h2>
          <pre data-testid="event">{event ? JSON.stringify({ type: event.type, correlationId: event.correlationId, payload: event.payload }, null, 2) : ""}</pre>
          <h2>Patch</h2>
          <pre data-testid="patch">{JSON.stringify(patch, null, 2)}</pre>
        </>
      )}
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Timeline />
  </StrictMode>,
);
