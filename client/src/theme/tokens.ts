// The display numbers (generated DISPLAY constants, from the Rust definitions) as CSS variables, so
// stylesheets read them and nobody keeps a second copy; and the theme's stylesheet.

import { DISPLAY, THEME_VARIABLES } from "../generated/constants";
import themeCss from "./theme.css?inline";

export const displayCss =
  ":where([data-vestibule-root]){" +
  `--vst-z-index:${DISPLAY.modalZIndex};` +
  `--vst-modal-width:${DISPLAY.modalWidthPx}px;` +
  `--vst-toast-width:${DISPLAY.toastWidthPx}px;` +
  `--vst-toast-gap:${DISPLAY.toastGapPx}px;` +
  `--vst-view-transition:${DISPLAY.viewTransitionMs}ms;` +
  `--vst-header-transition:${DISPLAY.headerTransitionMs}ms;` +
  `--vst-height-transition:${DISPLAY.heightTransitionMs}ms}`;

export { themeCss };

export type ThemeVariable = (typeof THEME_VARIABLES)[number];

export function isThemeVariable(name: string): name is ThemeVariable {
  return THEME_VARIABLES.some((v) => v === name);
}

/** The host's theme variables that the contract knows (others are ignored; the server refuses them). */
export function themeVariables(variables: { [key in string]?: string } | undefined): Array<[ThemeVariable, string]> {
  const known: Array<[ThemeVariable, string]> = [];
  for (const [name, value] of Object.entries(variables ?? {})) if (isThemeVariable(name) && typeof value === "string") known.push([name, value]);
  return known;
}
