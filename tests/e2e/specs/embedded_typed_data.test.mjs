// eth_signTypedData_v4 through the embedded wallet, end to end (browser-side review, decision 1504):
// the host page's provider asks, the session hands the request to the secure frame, and the frame's
// approval page (and the approval window it opens) shows the typed data as it is signed.
//
// * A DAI-style permit whose `allowed` is the string "false" is hashed as true by the EIP-712
//   encoder (an unlimited allowance) while the page read "allowed":"false": the frame refuses it
//   (-32602) and shows no approval page.
// * A string of the message holding a right-to-left override (U+202E) made Chromium draw the rest
//   of the Data row backwards (1000000 read 0000001): the page shows the override as the escape
//   \u202e, and the amount in order. Rejecting answers 4001.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CHAIN, clickThatCloses, emailLogin, embeddedWorldForFile, frameOf, hostRequest, selectors, waitForFrame, WAIT, within } from "./embedded.mjs";

const world = embeddedWorldForFile({ sessions: 1 });
const T = { timeout: 240_000 };

const RECEIVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const DAI = "0x6B175474E89094C44Da98b954EedeAC495271d0F";
const domainType = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
];
const domain = { name: "Dai Stablecoin", version: "1", chainId: CHAIN, verifyingContract: DAI };

test("typed data: a permit whose bool is the string \"false\" is refused without a page; a right-to-left override is shown as an escape with the amount in order", T, async () => {
  const { page, errors, gw } = await world.open();
  const { address } = await emailLogin(world, page, "typed.data@example.test");
  await waitForFrame(page, gw);

  const permit = {
    types: { EIP712Domain: domainType, Permit: [{ name: "holder", type: "address" }, { name: "spender", type: "address" }, { name: "nonce", type: "uint256" }, { name: "expiry", type: "uint256" }, { name: "allowed", type: "bool" }] },
    primaryType: "Permit",
    domain,
    message: { holder: address, spender: RECEIVER, nonce: 0, expiry: 0, allowed: "false" },
  };
  const refused = await within(hostRequest(page, "eth_signTypedData_v4", [address, JSON.stringify(permit)]), 60_000, "the permit with allowed \"false\"");
  assert.equal(refused.code, -32602, JSON.stringify(refused));
  assert.match(refused.message, /allowed/);
  assert.equal(await selectors.openApproval(frameOf(page, gw)).isVisible(), false, "no approval page for a refused request");

  const transfer = {
    types: { EIP712Domain: domainType, Transfer: [{ name: "to", type: "address" }, { name: "memo", type: "string" }, { name: "value", type: "uint256" }] },
    primaryType: "Transfer",
    domain,
    message: { to: RECEIVER, memo: "gift \u202E", value: "1000000" },
  };
  const answer = hostRequest(page, "eth_signTypedData_v4", [address, JSON.stringify(transfer)]);
  const frame = frameOf(page, gw);
  await selectors.openApproval(frame).waitFor({ state: "visible", timeout: WAIT.connect });
  const data = await frame.locator('dd[data-field="Data"]').textContent();
  assert.equal(data, `{"to":"${RECEIVER}","memo":"gift \\u202e","value":"1000000"}`);
  const shown = await frame.locator("#approval").evaluate((root) => root.textContent);
  assert.doesNotMatch(shown, /[\u202A-\u202E\u2066-\u2069]/, "no bidirectional override or isolate reaches the page");
  // As drawn: the amount's first digit is left of its last (the override once reversed them).
  const order = await frame.locator('dd[data-field="Data"]').evaluate((dd) => {
    const text = dd.firstChild;
    const at = dd.textContent.indexOf("1000000");
    const box = (i) => {
      const range = document.createRange();
      range.setStart(text, i);
      range.setEnd(text, i + 1);
      return range.getBoundingClientRect();
    };
    return { first: box(at), last: box(at + 6) };
  });
  assert.ok(order.first.top < order.last.top || (order.first.top === order.last.top && order.first.left < order.last.left), `the 1 of 1000000 drawn before its last 0: ${JSON.stringify(order)}`);
  // The approval window shows the same, and the visitor rejects there. The frame's page is taller
  // than the frame here: its button is scrolled into view and clicked with the mouse, and again if
  // no window came: right after the modal opened again (after the refused request) and placed the
  // frame anew, a click on the frame was not delivered to it in this Chromium (neither Playwright's
  // locator click nor the mouse's).
  const open = selectors.openApproval(frame);
  let approvalWindow = null;
  for (let attempt = 0; attempt < 5 && !approvalWindow; attempt++) {
    await open.scrollIntoViewIfNeeded();
    const box = await open.boundingBox();
    assert.ok(box, "the approval window's button has a box in the host page");
    const opened = page.context().waitForEvent("page", { timeout: 2_000 }).catch(() => null);
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    approvalWindow = await opened;
  }
  assert.ok(approvalWindow, "the approval window opened");
  const windowData = approvalWindow.locator('dd[data-field="Data"]');
  await windowData.waitFor({ state: "visible", timeout: WAIT.ui });
  assert.equal(await windowData.textContent(), data, "the approval window shows what the frame read");
  assert.doesNotMatch(await approvalWindow.locator("#approval").evaluate((root) => root.textContent), /[\u202A-\u202E\u2066-\u2069]/);
  await clickThatCloses(approvalWindow, selectors.reject(approvalWindow));
  assert.equal((await within(answer, 60_000, "the transfer rejected")).code, 4001);
  assert.deepEqual(errors, []);
});
