// Accessibility beyond axe (which runs on every view in both themes in screenshots.test.mjs): a
// visitor with only a keyboard connects and signs in; reduced motion turns the animations off.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { devWalletPage, launch, startGateway, verifyAllSessions } from "./support.mjs";

let gateway;
let browser;

before(async () => {
  gateway = await startGateway();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 2);
});

const focused = (page) =>
  page.evaluate(() => {
    const e = document.activeElement;
    return { text: e?.textContent?.trim() ?? "", testid: e?.getAttribute("data-testid") ?? null, inDialog: !!e?.closest('[role="dialog"]') };
  });

/** Presses Tab until `match(focused)` holds (at most `max` presses); fails otherwise. */
async function tabTo(page, match, what, max = 25) {
  for (let i = 0; i < max; i++) {
    if (match(await focused(page))) return;
    await page.keyboard.press("Tab");
  }
  assert.fail(`Tab never reached ${what}; focus is on ${JSON.stringify(await focused(page))}`);
}

test("keyboard only: Tab to Connect, Enter, Enter on the wallet, Tab to Sign, Enter; signed in, focus back on Connect", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(`${gateway.url}/?siwx=optional`);
  await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
  await tabTo(page, (f) => f.testid === "connect", "the Connect button");
  await page.keyboard.press("Enter");
  // The modal takes focus: its first control is the wallet.
  await page.waitForFunction(() => document.activeElement?.textContent?.trim() === "Connect Dev Wallet", null, { timeout: 10_000 });
  assert.equal((await focused(page)).inDialog, true);
  await page.keyboard.press("Enter");
  // The sign-in view replaces the connect view; focus stays in the modal (on the new view).
  await page.getByTestId("siwx-message").waitFor({ timeout: 10_000 });
  await page.waitForFunction(() => !!document.activeElement?.closest('[role="dialog"]'), null, { timeout: 10_000 });
  await tabTo(page, (f) => f.inDialog && f.text === "Sign", "the Sign button", 6);
  await page.keyboard.press("Enter");
  await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 10_000 });
  await page.getByRole("dialog").waitFor({ state: "detached", timeout: 10_000 });
  assert.equal((await focused(page)).testid, "connect", "focus went back to the Connect button");
  await context.close();
});

test("reduced motion: the modal's and the toasts' animations are off; without it they run at the spec's durations", async () => {
  const motion = async (page) =>
    page.evaluate(() => {
      const view = document.querySelector(".vst-modal__view");
      const height = document.querySelector(".vst-animated-height");
      const title = document.querySelector(".vst-modal__title");
      return {
        view: `${getComputedStyle(view).animationName} ${getComputedStyle(view).animationDuration}`,
        title: getComputedStyle(title).animationName,
        height: getComputedStyle(height).transitionDuration,
      };
    });
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  // The positive probe: with no preference, the animations are there, at 150 ms.
  assert.deepEqual(await motion(page), { view: "vst-fade-in 0.15s", title: "vst-fade-in", height: "0.15s" });
  await page.emulateMedia({ reducedMotion: "reduce" });
  assert.deepEqual(await motion(page), { view: "none 0s", title: "none", height: "0s" });
  await page.evaluate(() => window.__vestibule.send({ type: "ShowToast", message: "Still", variant: "loading", persistent: true }));
  await page.getByRole("status").filter({ hasText: "Still" }).waitFor({ timeout: 10_000 });
  assert.deepEqual(
    await page.evaluate(() => ["[data-vestibule-toasts] [role=status]", ".vst-spinner"].map((s) => getComputedStyle(document.querySelector(s)).animationName)),
    ["none", "none"],
    "no toast entrance, no spinning",
  );
  await context.close();
});
