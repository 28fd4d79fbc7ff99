// @vitest-environment happy-dom
// ConnectingWallet after the fixture session's SelectConnector: names the wallet, busy.

import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { fixtureFrames } from "../../generated/fixtureFrames";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { scriptedWidget, settle } from "../../testing/harness";

afterEach(cleanup);

it("says where to continue, and is busy", async () => {
  const s = scriptedWidget(fixtureFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.router.current === "ConnectingWallet");
  render(<WidgetRoot widget={s.widget} />);
  expect(screen.getByRole("heading", { level: 2 }).textContent).toBe("Connecting");
  const region = screen.getByRole("region", { name: "Connecting" });
  expect(region.getAttribute("aria-busy")).toBe("true");
  expect(region.textContent).toContain("Continue in Dev Wallet…");
});
