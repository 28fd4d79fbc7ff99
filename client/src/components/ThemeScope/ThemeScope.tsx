// The root every drawing of a widget sits in: the theme mode and the host's theme variables apply
// to everything inside (the modal, the toasts, the alert). The variables are set as custom
// properties on this element through the CSSOM, never as inline style objects, and only the names
// the theme contract knows.

import { useLayoutEffect, useRef, type ReactNode } from "react";
import type { ThemeMode } from "../../generated/ThemeMode";
import { displayCss, themeCss, themeVariables } from "../../theme/tokens";
import { Stylesheet } from "../Stylesheet/Stylesheet";

export function ThemeScope({ themeMode, variables, children }: { themeMode: ThemeMode | undefined; variables?: { [key in string]?: string }; children: ReactNode }) {
  const root = useRef<HTMLDivElement>(null);
  const known = themeVariables(variables);
  const key = JSON.stringify(known);
  useLayoutEffect(() => {
    const element = root.current;
    if (!element) return;
    for (const [name, value] of known) element.style.setProperty(name, value);
    return () => {
      for (const [name] of known) element.style.removeProperty(name);
    };
    // `key` stands for `known`'s contents.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return (
    <div ref={root} data-vestibule-root="" data-theme={themeMode === "light" ? "light" : "dark"}>
      <Stylesheet id="display" css={displayCss} />
      <Stylesheet id="theme" css={themeCss} />
      {children}
    </div>
  );
}
