// @vitest-environment happy-dom
// A page the gateway refuses: the socket closes before its welcome, `/ws/check` names the reason,
// and the alert shows it (in the theme the host asked for).

import { cleanup, render, screen, waitFor } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { fixtureFrames } from "../../generated/fixtureFrames";
import { scriptedWidget, settle } from "../../testing/harness";
import { WidgetRoot } from "../WidgetRoot/WidgetRoot";

afterEach(cleanup);

it.each([
  ["invalid_app_configuration", "Invalid App Configuration"],
  ["invalid_project_id", "Invalid Project ID"],
  ["project_id_not_configured", "Project ID Not Configured"],
])("shows the %s alert", async (code, title) => {
  const checked: string[] = [];
  const s = scriptedWidget(fixtureFrames, {
    options: { themeMode: "light" },
    fetch: async (url) => {
      checked.push(String(url));
      return new Response(JSON.stringify({ code, message: title }), { status: 403 });
    },
  });
  await settle();
  render(<WidgetRoot widget={s.widget} />);
  s.socket().onclose?.({ code: 1006 });
  const alert = await screen.findByRole("alertdialog", { name: title });
  expect(checked).toEqual(["http://gateway.test/ws/check?projectId=test"]);
  expect(alert.closest("[data-vestibule-root]")?.getAttribute("data-theme")).toBe("light");
  await waitFor(() => expect(s.widget.transport.getSnapshot().value).toBe("refused"));
});
