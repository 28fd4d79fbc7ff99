// The modal's height follows its content's, animated (spec: 150 ms). The measured height is a CSS
// variable set on the element (no re-render, no inline style object).

import { useLayoutEffect, useRef, type ReactNode } from "react";
import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./AnimatedHeight.css?inline";

export function AnimatedHeight({ children }: { children: ReactNode }) {
  const outer = useRef<HTMLDivElement>(null);
  const inner = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const box = outer.current;
    const content = inner.current;
    if (!box || !content) return;
    const measure = () => box.style.setProperty("--vst-content-height", `${content.offsetHeight}px`);
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(measure);
    observer.observe(content);
    return () => observer.disconnect();
  }, []);
  return (
    <div ref={outer} className="vst-animated-height">
      <Stylesheet id="animated-height" css={css} />
      <div ref={inner} className="vst-animated-height__content">
        {children}
      </div>
    </div>
  );
}
