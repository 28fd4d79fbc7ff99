// A component's stylesheet: React 19 hoists a `<style>` with `href` and `precedence` into the
// document's head once, however many components (or widgets) render it.

export function Stylesheet({ id, css }: { id: string; css: string }) {
  return (
    <style href={`vestibule-${id}`} precedence="vestibule">
      {css}
    </style>
  );
}
