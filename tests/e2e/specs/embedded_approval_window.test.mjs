// The secure frame's approval page against a host page that fades or covers the frame
// (clickjacking; decision 1501, client/src/frame/approval.ts). Chromium's IntersectionObserver v2
// tells the frame whether it is seen as drawn: Approve stays disabled while the host page sets
// opacity 0.5 on the frame's iframe (or had set it before the request came) or lays an element
// with pointer-events: none over it, and a click at Approve's place does not approve; once the
// host restores the frame, Approve arms after the arming delay and a click approves (the
// signature recovers to the wallet's address).
//
// Twice: with the host page on 127.0.0.1 as the other specs have it (the frame, on another port,
// is same-site and runs in the host page's process), and with the host page on localhost (which
// the demo project allows as a frame ancestor), another site, so the frame runs out of process as
// on a real deployment (checked) and the browser carries
// the host's opacity and occlusion across processes. This Chromium blocks third-party storage by
// default (TrackingProtection3pcd): the cross-site frame gets no IndexedDB and keeps its device
// share in memory (client/src/frame/deviceStore.ts), so its login works as a visitor's would.
// Each pass first checks that this headless Chromium reports the visibility at all (true as
// placed; false faded, covered or rotated) before the other tests rely on it.
import { afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { emailLogin, embeddedWorldForFile, frameOf, hostRequest, recoverPersonalSign, selectors, untilClockPasses, waitForFrame, WAIT, within } from "./embedded.mjs";

const world = embeddedWorldForFile({ sessions: 2 });
const T = { timeout: 240_000 };

/** client/src/frame/approval.ts: ARM_DELAY_MS and NOT_VISIBLE_HINT. */
const ARM_DELAY_MS = 1000;
const HINT = "Make this window fully visible to approve";

/** The two ways the host page embeds the frame: one login each, reused by its tests. */
const passes = [
  { name: "same-site host page (the frame in the host's process)", host: "127.0.0.1", email: "visibility@example.test", outOfProcess: false },
  { name: "cross-site host page (the frame out of process, as deployed)", host: "localhost", email: "visibility.oopif@example.test", outOfProcess: true },
];

async function signer(pass) {
  if (pass.session) return pass.session;
  const gw = world.gateway;
  const context = await world.browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT.ui);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  const hostUrl = gw.hostUrl.replace("//127.0.0.1:", `//${pass.host}:`);
  await page.goto(hostUrl);
  await page.waitForFunction(() => window.v?.state()?.started === true, null, { timeout: WAIT.ui });
  const { address } = await emailLogin(world, page, pass.email);
  pass.session = { context, page, errors, gw, address };
  return pass.session;
}

/** The frame's document (a Playwright Frame: scripts run inside the frame origin). */
function frameDocument(page, gw) {
  const frame = page.frames().find((f) => f.url().startsWith(`${gw.frameOrigin}/frame`));
  assert.ok(frame, `a frame of ${gw.frameOrigin}/frame in the host page: ${page.frames().map((f) => f.url()).join(", ")}`);
  return frame;
}

/** Starts a personal_sign from the host's provider and waits for the frame's approval page;
 * `settled()` says whether the request has been answered (without waiting). */
async function signingShown(page, gw, address, text) {
  const message = `0x${Buffer.from(text).toString("hex")}`;
  let answered = null;
  const answer = hostRequest(page, "personal_sign", [message, address]);
  answer.then((a) => (answered = a), () => {});
  const approve = selectors.approve(frameOf(page, gw));
  await approve.waitFor({ state: "visible", timeout: WAIT.connect });
  return { message, answer, approve, settled: () => answered !== null };
}

/** What the host page does to its own iframe of the frame (the style the bridge does not set). */
const styleIframe = (page, gw, style) =>
  page.evaluate(({ origin, style }) => Object.assign(document.querySelector(`iframe[src^="${origin}/"]`).style, style), { origin: gw.frameOrigin, style });

/** An element of the host page over the frame (pointer-events: none: clicks go through to it). */
const cover = (page, gw) =>
  page.evaluate((origin) => {
    const box = document.querySelector(`iframe[src^="${origin}/"]`).getBoundingClientRect();
    const lure = document.createElement("div");
    lure.id = "lure";
    lure.textContent = "Click the blue button to claim your prize";
    Object.assign(lure.style, { position: "fixed", zIndex: "2147483647", pointerEvents: "none", background: "#fff", top: `${box.top}px`, left: `${box.left}px`, width: `${box.width}px`, height: `${box.height / 2}px` });
    document.body.append(lure);
  }, gw.frameOrigin);
const uncover = (page) => page.evaluate(() => document.getElementById("lure")?.remove());
/** After a test (passed or not): the host page leaves the frame as the bridge placed it, and a
 * request a failed test left waiting is rejected, so the next test's page is its own. */
const restoreHost = async (page, gw) => {
  if (page.isClosed()) return;
  await uncover(page);
  await styleIframe(page, gw, { opacity: "", transform: "" });
  const reject = selectors.reject(frameOf(page, gw));
  if (await reject.isVisible()) await reject.click({ timeout: WAIT.ui }).catch(() => {});
};

/**
 * An IntersectionObserver v2 of the test's own in the frame, on the approval page, kept while the
 * probe runs (a fresh observer's first report can predate a change the host page just made: out
 * of process, the host's side reaches the frame a moment later). `sees(expected)` waits until its
 * latest report is `expected` (false when it never is within the bound).
 */
async function visibilityProbe(frame) {
  await frame.evaluate(() => {
    window.__probe = { last: null, observer: new IntersectionObserver((entries) => (window.__probe.last = entries[entries.length - 1].isVisible), { trackVisibility: true, delay: 100 }) };
    window.__probe.observer.observe(document.querySelector("#approval section"));
  });
  return {
    sees: (expected) => frame.waitForFunction((e) => window.__probe.last === e, expected, { timeout: WAIT.ui }).then(() => true, () => false),
    stop: () => frame.evaluate(() => window.__probe.observer.disconnect()),
  };
}

/**
 * The negative check: the frame shows the hint (it saw the host's change), and for three arming
 * delays Approve stays disabled; then the visitor, lured, clicks where Approve is (through any
 * cover), and the request is still unanswered.
 */
async function approveStaysDisabled(page, gw, shown, what) {
  const frame = frameDocument(page, gw);
  await frame.getByText(HINT).waitFor({ state: "visible", timeout: WAIT.ui });
  assert.equal(await shown.approve.getAttribute("aria-describedby"), await frame.locator(".hint").getAttribute("id"), "Approve is described by the hint");
  const until = Date.now() + 3 * ARM_DELAY_MS;
  while (Date.now() < until) {
    assert.equal(await shown.approve.isDisabled(), true, `Approve enabled while ${what}`);
    await untilClockPasses(Math.min(until, Date.now() + 200));
  }
  const box = await shown.approve.boundingBox();
  assert.ok(box, "Approve has a box in the host page");
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await untilClockPasses(Date.now() + 500);
  assert.equal(shown.settled(), false, `a click on Approve while ${what} answered the request`);
  assert.equal(await shown.approve.isVisible(), true, "the approval page is still up");
  assert.equal(await shown.approve.isDisabled(), true);
}

/** The positive probe: after the host restores the frame, Approve arms (no sooner than the arming
 * delay after the restore), the hint is gone, and a click approves: the signature is the wallet's. */
async function approvesOnceRestored(page, gw, shown, address, restore) {
  const frame = frameDocument(page, gw);
  const t0 = Date.now();
  await restore();
  await frame.waitForFunction(() => document.querySelector("#approval button.primary")?.disabled === false, null, { timeout: WAIT.ui });
  const armedAfter = Date.now() - t0;
  assert.ok(armedAfter >= ARM_DELAY_MS, `Approve armed ${armedAfter} ms after the frame was restored (at least ${ARM_DELAY_MS})`);
  assert.equal(await frame.locator(".hint").textContent(), "");
  await shown.approve.click();
  const signed = await within(shown.answer, 60_000, "personal_sign approved in the restored frame");
  assert.match(String(signed.result), /^0x[0-9a-f]{130}$/i, JSON.stringify(signed));
  assert.equal((await recoverPersonalSign(world.anvilUrl, shown.message, signed.result)).toLowerCase(), address.toLowerCase());
  await shown.approve.waitFor({ state: "hidden", timeout: WAIT.ui });
}

for (const pass of passes) {
  describe(pass.name, () => {
    afterEach(() => pass.session && restoreHost(pass.session.page, pass.session.gw));

    test("this headless Chromium reports the frame's visibility (IntersectionObserver v2): visible as placed; not visible faded, covered or rotated", T, async () => {
      const { page, gw, address } = await signer(pass);
      await waitForFrame(page, gw);
      const shown = await signingShown(page, gw, address, "Vestibule e2e: visibility probe");
      const targets = (await (await page.context().newCDPSession(page)).send("Target.getTargets")).targetInfos;
      const outOfProcess = targets.some((t) => t.type === "iframe" && t.url.startsWith(`${gw.frameOrigin}/frame`));
      assert.equal(outOfProcess, pass.outOfProcess, `the frame runs ${pass.outOfProcess ? "out of" : "in"} the host's process: ${targets.map((t) => `${t.type} ${t.url}`).join(", ")}`);
      const frame = frameDocument(page, gw);
      assert.equal(await frame.evaluate(() => "isVisible" in IntersectionObserverEntry.prototype), true, "isVisible is supported");
      // Cross-site, this Chromium refuses the frame its IndexedDB, so the login above went through
      // the device store's memory fallback; same-site, the database opens (the probe's positive side).
      const databaseOpens = await frame.evaluate(
        () => new Promise((resolve) => {
          try {
            const request = indexedDB.open("vestibule-e2e-probe", 1);
            request.onsuccess = () => resolve(true);
            request.onerror = () => resolve(false);
          } catch {
            resolve(false);
          }
        }),
      );
      assert.equal(databaseOpens, !pass.outOfProcess, `the frame's IndexedDB ${pass.outOfProcess ? "is refused cross-site" : "opens same-site"}`);
      const probe = await visibilityProbe(frame);
      try {
        assert.ok(await probe.sees(true), "visible as the bridge places it");
        await styleIframe(page, gw, { opacity: "0.5" });
        assert.ok(await probe.sees(false), "not visible with opacity 0.5 on the iframe");
        await styleIframe(page, gw, { opacity: "" });
        assert.ok(await probe.sees(true), "visible with the opacity restored");
        await cover(page, gw);
        assert.ok(await probe.sees(false), "not visible half covered by an element with pointer-events: none");
        await uncover(page);
        assert.ok(await probe.sees(true), "visible uncovered");
        await styleIframe(page, gw, { transform: "rotate(3deg)" });
        assert.ok(await probe.sees(false), "not visible rotated");
        await styleIframe(page, gw, { transform: "" });
        assert.ok(await probe.sees(true), "visible not rotated");
      } finally {
        await probe.stop();
      }
      // The page itself: Approve armed as placed, and the request is answered (Reject).
      await frame.waitForFunction(() => document.querySelector("#approval button.primary")?.disabled === false, null, { timeout: WAIT.ui });
      assert.equal(await frame.locator(".hint").textContent(), "");
      await selectors.reject(frameOf(page, gw)).click();
      assert.equal((await within(shown.answer, 60_000, "personal_sign rejected")).code, 4001);
    });

    test("given an approval shown, when the host page fades the frame (opacity 0.5), then Approve stays disabled and a click does not approve; when the host restores it, Approve arms after the delay and a click approves", T, async () => {
      const { page, gw, address, errors } = await signer(pass);
      const shown = await signingShown(page, gw, address, "Vestibule e2e: faded");
      await styleIframe(page, gw, { opacity: "0.5" });
      await approveStaysDisabled(page, gw, shown, "the frame is faded");
      await approvesOnceRestored(page, gw, shown, address, () => styleIframe(page, gw, { opacity: "" }));
      assert.deepEqual(errors, []);
    });

    test("given a host page that faded the frame (opacity 0.5) before the request, when the approval is shown, then Approve never arms and a click does not approve; when the host restores it, Approve arms after the delay and a click approves", T, async () => {
      const { page, gw, address, errors } = await signer(pass);
      await styleIframe(page, gw, { opacity: "0.5" });
      const shown = await signingShown(page, gw, address, "Vestibule e2e: faded from the start");
      await approveStaysDisabled(page, gw, shown, "the frame has been faded since before the request");
      await approvesOnceRestored(page, gw, shown, address, () => styleIframe(page, gw, { opacity: "" }));
      assert.deepEqual(errors, []);
    });

    test("given an approval shown, when the host page lays a lure over the frame (pointer-events: none), then Approve stays disabled and a click through the lure does not approve; when the lure goes, Approve arms after the delay and a click approves", T, async () => {
      const { page, gw, address, errors } = await signer(pass);
      const shown = await signingShown(page, gw, address, "Vestibule e2e: covered");
      await cover(page, gw);
      await approveStaysDisabled(page, gw, shown, "the frame is covered");
      await approvesOnceRestored(page, gw, shown, address, () => uncover(page));
      assert.deepEqual(errors, []);
      await pass.session.context.close();
    });
  });
}
