// A component's stylesheet, added to the page once however many components (or widgets) render it,
// in the order first rendered (the theme before the modal before the views), and kept.
//
// Where the browser has constructed stylesheets (all current ones), it is adopted by the document
// (`document.adoptedStyleSheets`): a host page whose Content-Security-Policy allows no inline style
// (`style-src` without 'unsafe-inline', as careful dapps set it) refuses every `<style>` element
// but not a sheet built by script, so the widget is drawn the same there. Elsewhere React 19 hoists
// a `<style>` with `href` and `precedence` into the head.

function canAdopt(doc: Document): boolean {
  return "adoptedStyleSheets" in doc && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype;
}

/** The rule (matching nothing) that opens sheet `id`: the document itself says which it has, so
 * every widget on the page, and every copy of the script, adds each sheet once. */
const markerOf = (id: string) => `[data-vestibule-sheet="${id}"]`;

function adopted(doc: Document, marker: string): boolean {
  return doc.adoptedStyleSheets.some((sheet) => {
    const first = sheet.cssRules[0];
    return first instanceof CSSStyleRule && first.selectorText === marker;
  });
}

/** Adopts `css` as the document's sheet `id` unless it has it; false where the browser cannot. */
function adopt(doc: Document, id: string, css: string): boolean {
  if (!canAdopt(doc)) return false;
  const marker = markerOf(id);
  if (!adopted(doc, marker)) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(`${marker} {}\n${css}`);
    // During render, as React's own hoisting does: idempotent, and in the order first rendered.
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
  }
  return true;
}

export function Stylesheet({ id, css }: { id: string; css: string }) {
  if (adopt(document, id, css)) return null;
  return (
    <style href={`vestibule-${id}`} precedence="vestibule">
      {css}
    </style>
  );
}
