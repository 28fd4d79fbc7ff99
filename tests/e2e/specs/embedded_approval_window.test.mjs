// The approval window against a host page that hides the frame (clickjacking; decisions 1504 and
// 1505). Chromium reports an iframe hidden by a mask or by its own inward outline as visible, so the
// frame cannot know when the visitor cannot see it. Nothing in the frame approves: a click there can
// reject, or open the approval window, a top-level page of the frame origin that the host page can
// neither cover nor press, where Approve arms a moment after the window comes to the front.
//
// Twice: with the host page on 127.0.0.1 as the other specs have it (the frame, on another port,
// is same-site and runs in the host page's process), and with the host page on localhost (which
// the demo project allows as a frame ancestor), another site, so the frame runs out of process as
// on a real deployment (checked). This Chromium blocks third-party storage by default
// (TrackingProtection3pcd): the cross-site frame gets no IndexedDB and keeps its device share in
// memory (client/src/frame/deviceStore.ts), so its login works as a visitor's would (checked).
import { afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { clickThatCloses, emailLogin, embeddedWorldForFile, frameOf, hostRequest, recoverPersonalSign, selectors, untilClockPasses, waitForFrame, WAIT, within } from "./embedded.mjs";

const world = embeddedWorldForFile({ sessions: 2 });
const T = { timeout: 240_000 };

/** client/src/frame/approvalPage.ts: ARM_DELAY_MS. */
const ARM_DELAY_MS = 1000;
/** What the approval window says when it was not opened by the frame. */
const NOT_OPENED_BY_FRAME = "This window opens from the Vestibule wallet when a request waits for your approval.";

/** The two ways the host page embeds the frame: one login each, reused by its tests. */
const passes = [
  { name: "same-site host page (the frame in the host's process)", host: "127.0.0.1", email: "approval.window@example.test", outOfProcess: false },
  { name: "cross-site host page (the frame out of process, as deployed)", host: "localhost", email: "approval.window.oopif@example.test", outOfProcess: true },
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

/** Starts a personal_sign from the host's provider and waits for the frame to show it; `settled()`
 * says whether the request has been answered (without waiting). */
async function signingShown(page, gw, address, text) {
  const message = `0x${Buffer.from(text).toString("hex")}`;
  let answered = null;
  const answer = hostRequest(page, "personal_sign", [message, address]);
  answer.then((a) => (answered = a), () => {});
  const open = selectors.openApproval(frameOf(page, gw));
  await open.waitFor({ state: "visible", timeout: WAIT.connect });
  return { text, message, answer, open, settled: () => answered !== null };
}

/** What the host page does to its own iframe of the frame (the style the bridge does not set). */
const styleIframe = (page, gw, style) =>
  page.evaluate(({ origin, style }) => Object.assign(document.querySelector(`iframe[src^="${origin}/"]`).style, style), { origin: gw.frameOrigin, style });

/** The two ways of hiding the frame that Chromium reports visible (decision 1504). */
const HIDDEN_BY = {
  mask: { maskImage: "linear-gradient(transparent, transparent)", webkitMaskImage: "linear-gradient(transparent, transparent)" },
  outline: { outline: "2000px solid white", outlineOffset: "-2000px" },
};
const UNHIDDEN = { maskImage: "", webkitMaskImage: "", outline: "", outlineOffset: "" };

/** After a test (passed or not): the host page leaves the frame as the bridge placed it, and a
 * request a failed test left waiting is rejected in the frame, so the next test's is its own. */
const restoreHost = async (page, gw) => {
  if (page.isClosed()) return;
  await styleIframe(page, gw, UNHIDDEN);
  const reject = selectors.reject(frameOf(page, gw));
  if (await reject.isVisible()) await reject.click({ timeout: WAIT.ui }).catch(() => {});
};

/**
 * The lured visitor clicks, blind, everywhere on the hidden frame's page but its Reject button (a
 * grid over the page); the request stays unanswered, and the clicks open at most the approval
 * window, which shows the request in a page of the frame origin: given back (null if none opened).
 */
async function blindClicks(page, gw, shown) {
  const frame = frameDocument(page, gw);
  assert.equal(await frame.getByRole("button", { name: "Approve", exact: true }).count(), 0, "no Approve button in the frame");
  const area = await frame.locator("#approval").evaluate((root) => {
    const box = root.getBoundingClientRect();
    const reject = [...root.querySelectorAll("button")].find((b) => b.textContent === "Reject").getBoundingClientRect();
    return { box: { width: box.width, height: box.height }, reject: { left: reject.left, right: reject.right, top: reject.top, bottom: reject.bottom } };
  });
  const iframeBox = await page.locator(`iframe[src^="${gw.frameOrigin}/"]`).boundingBox();
  assert.ok(iframeBox, "the hidden iframe still has its box");
  const windows = [];
  const collect = (p) => windows.push(p);
  page.context().on("page", collect);
  try {
    for (let y = 8; y < Math.min(area.box.height, iframeBox.height); y += 24) {
      for (let x = 8; x < Math.min(area.box.width, iframeBox.width); x += 48) {
        const onReject = x >= area.reject.left && x <= area.reject.right && y >= area.reject.top && y <= area.reject.bottom;
        if (!onReject) await page.mouse.click(iframeBox.x + x, iframeBox.y + y);
      }
    }
    // The positive probe: the open button is among what was clicked, so a window came.
    const waited = Date.now() + WAIT.popup;
    while (windows.length === 0 && Date.now() < waited) await untilClockPasses(Date.now() + 100);
  } finally {
    page.context().off("page", collect);
  }
  await untilClockPasses(Date.now() + 3 * ARM_DELAY_MS);
  assert.equal(shown.settled(), false, "a blind click in the frame answered the request");
  assert.ok(windows.length >= 1, "a blind click on the frame's button opened the approval window");
  assert.equal(windows.length, 1, "one window, brought to the front again by later clicks");
  const approvalWindow = windows[0];
  await approvalWindow.waitForLoadState("domcontentloaded");
  assert.equal(new URL(approvalWindow.url()).origin + new URL(approvalWindow.url()).pathname, `${gw.frameOrigin}/approve`);
  await approvalWindow.getByText(shown.text).waitFor({ state: "visible", timeout: WAIT.ui });
  assert.equal(await approvalWindow.locator('dd[data-field="Site"]').textContent(), new URL(page.url()).origin, "the window names the site that asked");
  // Its name (all the host page could target it by) is cleared.
  assert.equal(await approvalWindow.evaluate(() => window.name), "");
  return approvalWindow;
}

for (const pass of passes) {
  describe(pass.name, () => {
    afterEach(() => pass.session && restoreHost(pass.session.page, pass.session.gw));

    test("the frame runs where it is deployed to run, and its login works there", T, async () => {
      const { page, gw } = await signer(pass);
      await waitForFrame(page, gw);
      const targets = (await (await page.context().newCDPSession(page)).send("Target.getTargets")).targetInfos;
      const outOfProcess = targets.some((t) => t.type === "iframe" && t.url.startsWith(`${gw.frameOrigin}/frame`));
      assert.equal(outOfProcess, pass.outOfProcess, `the frame runs ${pass.outOfProcess ? "out of" : "in"} the host's process: ${targets.map((t) => `${t.type} ${t.url}`).join(", ")}`);
      // Cross-site, this Chromium refuses the frame its IndexedDB, so the login above went through
      // the device store's memory fallback; same-site, the database opens (the probe's positive side).
      const databaseOpens = await frameDocument(page, gw).evaluate(
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
    });

    for (const [how, style] of Object.entries(HIDDEN_BY)) {
      test(`given a request and a host page that hides the frame (${how}), when the visitor clicks blind all over it, then nothing is signed: the approval window opens with the request, and Approve there signs once armed`, T, async () => {
        const { page, gw, address, errors } = await signer(pass);
        const shown = await signingShown(page, gw, address, `Vestibule e2e: hidden by ${how}`);
        await styleIframe(page, gw, style);
        const approvalWindow = await blindClicks(page, gw, shown);
        await clickThatCloses(approvalWindow, selectors.approve(approvalWindow));
        const signed = await within(shown.answer, 60_000, "personal_sign approved in the approval window");
        assert.match(String(signed.result), /^0x[0-9a-f]{130}$/i, JSON.stringify(signed));
        assert.equal((await recoverPersonalSign(world.anvilUrl, shown.message, signed.result)).toLowerCase(), address.toLowerCase());
        await shown.open.waitFor({ state: "hidden", timeout: WAIT.ui });
        assert.deepEqual(errors, []);
      });
    }

    test("given the approval window, when the visitor closes it undecided, then the request still waits and the frame opens a new one; Reject there answers 4001", T, async () => {
      const { page, gw, address, errors } = await signer(pass);
      const shown = await signingShown(page, gw, address, "Vestibule e2e: closed undecided");
      const first = await Promise.all([page.context().waitForEvent("page", { timeout: WAIT.popup }), shown.open.click()]).then(([p]) => p);
      await first.getByText(shown.text).waitFor({ state: "visible", timeout: WAIT.ui });
      await first.close();
      await untilClockPasses(Date.now() + 2 * ARM_DELAY_MS);
      assert.equal(shown.settled(), false, "closing the window answered the request");
      const second = await Promise.all([page.context().waitForEvent("page", { timeout: WAIT.popup }), shown.open.click()]).then(([p]) => p);
      await second.getByText(shown.text).waitFor({ state: "visible", timeout: WAIT.ui });
      await clickThatCloses(second, selectors.reject(second));
      assert.equal((await within(shown.answer, 60_000, "personal_sign rejected in the approval window")).code, 4001);
      assert.deepEqual(errors, []);
    });

    test("given the approval window open, when the wallet signs out (the SIGN_OUT the widget sends on disconnect), then the window closes and the request is rejected (4001)", T, async () => {
      const { page, gw, address, errors } = await signer(pass);
      const shown = await signingShown(page, gw, address, "Vestibule e2e: signed out");
      const approvalWindow = await Promise.all([page.context().waitForEvent("page", { timeout: WAIT.popup }), shown.open.click()]).then(([p]) => p);
      await approvalWindow.getByText(shown.text).waitFor({ state: "visible", timeout: WAIT.ui });
      const closed = approvalWindow.waitForEvent("close", { timeout: WAIT.ui });
      await page.evaluate(
        (origin) => document.querySelector(`iframe[src^="${origin}/"]`).contentWindow.postMessage({ vestibule: 1, id: "5".repeat(32), type: "SIGN_OUT", payload: {} }, origin),
        gw.frameOrigin,
      );
      await closed;
      assert.equal((await within(shown.answer, 60_000, "personal_sign after the sign-out")).code, 4001);
      assert.deepEqual(errors, []);
    });

    test("the approval window's page shows nothing framed, and nothing but a note when opened by anyone but the frame", T, async () => {
      const { page, gw, errors } = await signer(pass);
      // Opened as a top-level page by anyone (the positive probe: the page loads and says so).
      const direct = await page.context().newPage();
      await direct.goto(`${gw.frameOrigin}/approve`);
      await direct.getByText(NOT_OPENED_BY_FRAME).waitFor({ state: "visible", timeout: WAIT.ui });
      assert.equal(await selectors.approve(direct).count(), 0);
      await direct.close();
      // Framed by the host page (a project origin, allowed to frame /frame): refused.
      await page.evaluate((url) => {
        const probe = document.createElement("iframe");
        probe.id = "approve-probe";
        probe.src = url;
        document.body.append(probe);
        // A refused frame loads an error page (load fires); the bound only keeps a silent one finite.
        return new Promise((resolve) => {
          probe.addEventListener("load", resolve, { once: true });
          setTimeout(resolve, 10_000);
        });
      }, `${gw.frameOrigin}/approve`);
      const framed = await (await page.$("#approve-probe")).contentFrame();
      const text = framed ? await framed.evaluate(() => document.body?.innerText ?? "").catch(() => "") : "";
      assert.ok(!text.includes(NOT_OPENED_BY_FRAME), `the approval page rendered inside the host page: ${JSON.stringify(text)}`);
      await page.evaluate(() => document.getElementById("approve-probe").remove());
      assert.deepEqual(errors, []);
      await pass.session.context.close();
    });
  });
}
