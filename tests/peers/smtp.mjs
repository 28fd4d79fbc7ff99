// A local SMTP sink for the embedded wallet's email tests: aiosmtpd (PyPI, in the project venv
// .cache/smtp-venv that scripts/lib/smtp.sh's ensure_smtp_sink installs) storing every message in a
// Maildir, and a reader that finds the one-time code in the newest message to an address.
//
//   const sink = await startSmtpSink();          // sink.host, sink.port
//   const code = await sink.waitForCode("alice@example.test", { after: t0 });
//   sink.codes                                   // every code read so far (for the secrets checks)
//   await sink.stop();
//
// It fails (never skips) when the venv is missing, naming the command that makes it. The child is
// killed when this process exits, so no sink outlives its test.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");
export const SMTP_PYTHON = process.env.SMTP_SINK_PYTHON ?? join(ROOT, ".cache/smtp-venv/bin/python");
export const SMTP_SETUP = "python3 -m venv .cache/smtp-venv && .cache/smtp-venv/bin/pip install aiosmtpd   (or: . scripts/lib/smtp.sh && ensure_smtp_sink)";

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** A port the OS says is free on 127.0.0.1 now. */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

function accepts(port) {
  return new Promise((ok) => {
    const c = createConnection({ host: "127.0.0.1", port });
    c.once("connect", () => {
      c.destroy();
      ok(true);
    });
    c.once("error", () => ok(false));
  });
}

// ---- a minimal MIME reader: headers, multipart, quoted-printable and base64 ----

/** `{ headers: Map(lowercase name → unfolded value), body: string }` of a message or a part. */
export function parseMessage(raw) {
  const text = raw.replace(/\r\n/g, "\n");
  const split = text.indexOf("\n\n");
  const head = split < 0 ? text : text.slice(0, split);
  const body = split < 0 ? "" : text.slice(split + 2);
  const headers = new Map();
  for (const line of head.replace(/\n[ \t]+/g, " ").split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) {
      const name = line.slice(0, i).trim().toLowerCase();
      if (!headers.has(name)) headers.set(name, line.slice(i + 1).trim());
    }
  }
  return { headers, body };
}

function decodeQuotedPrintable(s) {
  const bytes = [];
  const t = s.replace(/=\r?\n/g, "");
  for (let i = 0; i < t.length; i += 1) {
    if (t[i] === "=" && /^[0-9A-Fa-f]{2}$/.test(t.slice(i + 1, i + 3))) {
      bytes.push(parseInt(t.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(t[i], "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

function decodeBody(part) {
  const cte = (part.headers.get("content-transfer-encoding") ?? "7bit").toLowerCase();
  if (cte === "base64") return Buffer.from(part.body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (cte === "quoted-printable") return decodeQuotedPrintable(part.body);
  return part.body;
}

/** The decoded text parts of a message, text/plain first, then text/html (tags stripped). */
export function textParts(raw) {
  const plain = [];
  const html = [];
  const walk = (part) => {
    const type = part.headers.get("content-type") ?? "text/plain";
    const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
    if (/^multipart\//i.test(type) && boundary) {
      const chunks = part.body.split(new RegExp(`^--${boundary.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?:--)?[ \\t]*$`, "m"));
      for (const chunk of chunks.slice(1)) {
        const c = chunk.replace(/^\n/, "");
        if (c.trim()) walk(parseMessage(c));
      }
    } else if (/^text\/html/i.test(type)) {
      html.push(decodeBody(part).replace(/<style[\s\S]*?<\/style>/gi, " ").replace(/<[^>]+>/g, " ").replace(/&nbsp;/g, " "));
    } else if (/^text\//i.test(type)) {
      plain.push(decodeBody(part));
    }
  };
  walk(parseMessage(raw));
  return [...plain, ...html];
}

/** The 6-digit code of a message (its first standalone 6-digit number, text before HTML, then the subject). */
export function codeOf(raw) {
  for (const text of [...textParts(raw), parseMessage(raw).headers.get("subject") ?? ""]) {
    const m = /(?<![\d])(\d{6})(?![\d])/.exec(text);
    if (m) return m[1];
  }
  return null;
}

/** The envelope recipients (aiosmtpd's X-RcptTo) or else the To header, lowercased. */
export function recipientsOf(raw) {
  const { headers } = parseMessage(raw);
  return (headers.get("x-rcptto") ?? headers.get("to") ?? "").toLowerCase();
}

/**
 * Starts aiosmtpd on a free loopback port with a fresh Maildir. `startTimeoutMs`: how long to wait
 * for it to accept connections.
 */
export async function startSmtpSink({ startTimeoutMs = 15_000 } = {}) {
  if (!existsSync(SMTP_PYTHON)) throw new Error(`the SMTP sink's Python venv is missing (${SMTP_PYTHON}); from the repository root run: ${SMTP_SETUP}`);
  const dir = mkdtempSync(join(tmpdir(), "vestibule-smtp-"));
  const maildir = join(dir, "Maildir");
  const port = await freePort();
  const child = spawn(SMTP_PYTHON, ["-m", "aiosmtpd", "-n", "-l", `127.0.0.1:${port}`, "-c", "aiosmtpd.handlers.Mailbox", maildir], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
  const kill = () => {
    try {
      child.kill("SIGKILL");
    } catch {}
  };
  process.once("exit", kill);
  const exited = new Promise((ok) => child.once("exit", ok));

  const deadline = Date.now() + startTimeoutMs;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`aiosmtpd exited (${child.exitCode ?? child.signalCode}) before listening: ${stderr}`);
    if (Date.now() > deadline) {
      kill();
      throw new Error(`aiosmtpd did not accept on 127.0.0.1:${port} within ${startTimeoutMs} ms: ${stderr}`);
    }
    await sleep(50);
  }

  const consumed = new Set();
  const codes = [];
  /** Every message now in the Maildir: `{ file, mtimeMs, raw }`, oldest first. */
  const messages = () => {
    const out = [];
    for (const sub of ["new", "cur"]) {
      const d = join(maildir, sub);
      if (!existsSync(d)) continue;
      for (const name of readdirSync(d)) {
        const file = join(d, name);
        try {
          out.push({ file: `${sub}/${name}`, mtimeMs: statSync(file).mtimeMs, raw: readFileSync(file, "utf8") });
        } catch {} // moved between the listing and the read
      }
    }
    return out.sort((a, b) => a.mtimeMs - b.mtimeMs || a.file.localeCompare(b.file));
  };

  return {
    host: "127.0.0.1",
    port,
    maildir,
    /** Every code waitForCode has returned (and any other it saw), for the secrets checks. */
    codes,
    messages,
    /** Every message to `address` so far (raw text), oldest first. */
    messagesTo(address) {
      return messages().filter((m) => recipientsOf(m.raw).includes(address.toLowerCase()));
    },
    /**
     * The code of the newest message to `address` not returned before and delivered at or after
     * `after` (ms since the epoch; default 0). Polls every 100 ms up to `timeoutMs`, then throws.
     */
    async waitForCode(address, { after = 0, timeoutMs = 20_000 } = {}) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const fresh = messages().filter((m) => !consumed.has(m.file) && m.mtimeMs >= after - 50 && recipientsOf(m.raw).includes(address.toLowerCase()));
        if (fresh.length > 0) {
          for (const m of fresh) consumed.add(m.file);
          for (const m of fresh) {
            const c = codeOf(m.raw);
            if (c && !codes.includes(c)) codes.push(c);
          }
          const code = codeOf(fresh[fresh.length - 1].raw);
          if (!code) throw new Error(`the newest message to ${address} has no 6-digit code:\n${fresh[fresh.length - 1].raw.slice(0, 2000)}`);
          return code;
        }
        if (Date.now() > until) {
          const all = messages().map((m) => `${m.file} to ${recipientsOf(m.raw)}`);
          throw new Error(`no new message to ${address} in the SMTP sink within ${timeoutMs} ms (messages: ${all.join("; ") || "none"})`);
        }
        await sleep(100);
      }
    },
    async stop() {
      process.removeListener("exit", kill);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const t = setTimeout(kill, 3000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}
