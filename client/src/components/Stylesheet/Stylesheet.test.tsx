// @vitest-environment happy-dom
// Each stylesheet is adopted by the document once, however many components render it, in the order
// first rendered, and no <style> element is written (a host page's CSP may refuse inline style).

import { render } from "@testing-library/react";
import { expect, it } from "vitest";
import { Stylesheet } from "./Stylesheet";

it("given two widgets rendering the same sheets, when drawn, then each sheet is adopted once, in the order first rendered, with no <style> element", () => {
  const before = document.adoptedStyleSheets.length;
  const sheets = (
    <>
      <Stylesheet id="test-theme" css=".t { color: red; }" />
      <Stylesheet id="test-modal" css=".m { color: blue; }" />
    </>
  );
  render(sheets);
  render(sheets);
  const added = document.adoptedStyleSheets.slice(before).map((sheet) => [...sheet.cssRules].slice(1).map((rule) => rule.cssText).join(""));
  expect(added).toEqual([".t { color: red; }", ".m { color: blue; }"]);
  expect(document.querySelectorAll("style")).toHaveLength(0);
});
