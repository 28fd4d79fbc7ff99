// Size budgets of the built widget (run by scripts/test-client after `npm run build`; fails when a
// budget is exceeded). gzip level 9, 1 kB = 1,000 bytes (as size-limit counts).
//
//   loader  dist/vestibule.js: the script tag                                  <= 15 kB
//   core    the core chunk and what it imports statically (transport, mirror,
//           charts, wallet effects, provider)                                  <= 32 kB
//           (30 kB until the host's provider routed every request through the
//           session, decision 0909: it must work before the modal loads, so it
//           stays in the core)
//   modal   the modal chunk and what it imports beyond the core (React, views) <= 80 kB
//   parts   each optional part beyond core and modal                           <= 10 kB each
//           (and each view loaded as a chunk of its own: Networks, SwitchNetwork,
//           ApproveTransaction)
//
//   frame   the secure frame's page script (client/dist-frame: its own origin,
//           vetted crypto only: @noble, shamir-secret-sharing, @hpke/core)  <= 50 kB
//   bridge  the host's secure-frame bridge chunk (loaded when email or socials
//           are on)                                                        <= 5 kB
//
// Also: the app pages built on the React entry (demo, replay, wagmi example) carry one React.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const DIST = join(import.meta.dirname, "..", "dist");
const BUDGETS = { loader: 15_000, core: 32_000, modal: 80_000, part: 10_000, frame: 50_000, bridge: 5_000 };
const manifest = JSON.parse(readFileSync(join(DIST, "vestibule/manifest.json"), "utf8"));
const gz = (file) => gzipSync(readFileSync(join(DIST, file)), { level: 9 }).length;

/** The files a manifest entry needs: itself and its static imports, transitively. */
function closure(key, seen = new Set()) {
  const entry = manifest[key];
  if (!entry || seen.has(entry.file)) return seen;
  seen.add(entry.file);
  for (const i of entry.imports ?? []) closure(i, seen);
  return seen;
}
const keyOf = (src) => Object.keys(manifest).find((k) => manifest[k].src === src);
const minus = (a, b) => new Set([...a].filter((f) => !b.has(f)));
const sum = (files) => [...files].reduce((n, f) => n + gz(f), 0);

const core = closure(keyOf("src/embed/core.ts"));
const modal = minus(closure(keyOf("src/embed/modal.tsx")), core);
const rows = [
  ["loader", "vestibule.js", gz("vestibule.js"), BUDGETS.loader],
  ["core", [...core].join(" + "), sum(core), BUDGETS.core],
  ["modal", [...modal].join(" + "), sum(modal), BUDGETS.modal],
];
const loaded = new Set([...core, ...modal]);
const isPart = (k) => manifest[k].src?.startsWith("src/parts/") || (manifest[k].src?.startsWith("src/views/") && manifest[k].isDynamicEntry);
for (const key of Object.keys(manifest).filter(isPart)) {
  const part = minus(closure(key), loaded);
  rows.push([`part ${manifest[key].name}`, [...part].join(" + "), sum(part), BUDGETS.part]);
}
const bridge = keyOf("src/core/effects/secureFrame.ts");
if (bridge) {
  const files = minus(closure(bridge), loaded);
  rows.push(["secure frame bridge", [...files].join(" + "), sum(files), BUDGETS.bridge]);
} else rows.push(["secure frame bridge (missing chunk)", "", Infinity, BUDGETS.bridge]);
const FRAME_DIST = join(import.meta.dirname, "..", "dist-frame");
const frameManifest = JSON.parse(readFileSync(join(FRAME_DIST, "manifest.json"), "utf8"));
const frameClosure = (key, seen = new Set()) => {
  const entry = frameManifest[key];
  if (!entry || seen.has(entry.file)) return seen;
  seen.add(entry.file);
  for (const i of entry.imports ?? []) frameClosure(i, seen);
  return seen;
};
const frameFiles = frameClosure("frame.html");
const frameBytes = [...frameFiles].reduce((n, f) => n + gzipSync(readFileSync(join(FRAME_DIST, f)), { level: 9 }).length, 0);
rows.push(["secure frame (dist-frame)", [...frameFiles].join(" + "), frameBytes, BUDGETS.frame]);
const inspector = keyOf("node_modules/@statelyai/inspect/dist/index.mjs");
if (inspector) rows.push(["debug inspector (debug: true only)", [...minus(closure(inspector), loaded)].join(" + "), sum(minus(closure(inspector), loaded)), Infinity]);

let failed = false;

console.log("size budgets (gzip -9, 1 kB = 1000 B):");
for (const [name, files, bytes, budget] of rows) {
  const over = bytes > budget;
  failed ||= over;
  const limit = Number.isFinite(budget) ? `${(budget / 1000).toFixed(0)} kB` : "reported";
  console.log(`  ${over ? "OVER" : "ok  "} ${name.padEnd(36)} ${(bytes / 1000).toFixed(1).padStart(6)} kB  (budget ${limit})  ${files}`);
}

// The QR library is loaded only with the parts that draw a code (Receive, ConnectingFarcaster),
// through its one module (components/QrCode): no other chunk of the widget may carry it (one of
// its own error strings marks it, as minifiers keep string literals).
const QR_MARK = "bad maskPattern:";
// A shared chunk has no `src` in the manifest: it is found by its name.
const qrChunk = Object.keys(manifest).find((k) => manifest[k].name === "QrCode");
const qrUsers = ["src/parts/Receive/Receive.tsx", "src/parts/ConnectingFarcaster/ConnectingFarcaster.tsx"].map(keyOf);
const withQr = Object.values(manifest).map((e) => e.file).filter((f) => readFileSync(join(DIST, f), "utf8").includes(QR_MARK));
const qrFile = qrChunk !== undefined ? manifest[qrChunk].file : undefined;
const importers = Object.values(manifest).filter((e) => (e.imports ?? []).includes(qrChunk)).map((e) => e.file);
const qrAlone =
  qrFile !== undefined &&
  withQr.length === 1 &&
  withQr[0] === qrFile &&
  importers.every((f) => qrUsers.some((u) => u !== undefined && manifest[u].file === f));
console.log(`  ${qrAlone ? "ok  " : "FAIL"} the QR library only in its own chunk, for Receive and ConnectingFarcaster: ${withQr.join(", ") || "(in no chunk)"} (imported by ${importers.join(", ") || "none"})`);
failed ||= !qrAlone;

// One React in the pages built with the React entry: React DOM's internals appear in one file.
const marker = "__CLIENT_INTERNALS_DO_NOT_USE_OR_WARN_USERS_THEY_CANNOT_UPGRADE";
const withReact = readdirSync(join(DIST, "assets")).filter((f) => f.endsWith(".js") && readFileSync(join(DIST, "assets", f), "utf8").includes(marker));
console.log(`  ${withReact.length === 1 ? "ok  " : "FAIL"} app pages (demo, replay, wagmi) share one React: ${withReact.join(", ")}`);
failed ||= withReact.length !== 1;

if (failed) {
  console.error("size budgets: FAILED");
  process.exit(1);
}
