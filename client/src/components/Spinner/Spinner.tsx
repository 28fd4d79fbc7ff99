// A loading mark: drawn, not a glyph (emoji fonts are not everywhere). Still under reduced motion.

import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./Spinner.css?inline";

export function Spinner({ size = "small" }: { size?: "small" | "large" }) {
  return (
    <>
      <Stylesheet id="spinner" css={css} />
      <svg className="vst-spinner" data-size={size} viewBox="0 0 12 12" aria-hidden="true" focusable="false">
        <circle cx="6" cy="6" r="4.5" fill="none" stroke="currentColor" strokeOpacity="0.3" strokeWidth="1.5" />
        <path d="M6 1.5a4.5 4.5 0 0 1 4.5 4.5" fill="none" stroke="currentColor" strokeWidth="1.5" />
      </svg>
    </>
  );
}
