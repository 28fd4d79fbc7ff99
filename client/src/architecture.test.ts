// Rules of the widget's source, checked: one component per folder, styles in CSS files (no inline
// style objects), no casts over generated types, no module state, no fixed DOM ids, and every theme
// variable of the contract read by the theme's stylesheet.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { THEME_VARIABLES } from "./generated/constants";

const SRC = import.meta.dirname;
const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
const isTest = (f: string) => /\.test\.tsx?$/.test(f);
const sources = walk(SRC).filter((f) => /\.tsx?$/.test(f) && !isTest(f) && !f.includes("/generated/"));
/** The widget itself (what a host page runs), not the demo, the replay tool or the dev wallet. */
const widget = sources.filter((f) => !/\/(demo|replay|wagmi-example|wallet|testing)\//.test(f));
const generatedTypes = readdirSync(join(SRC, "generated"))
  .filter((f) => /^[A-Z].*\.ts$/.test(f))
  .map((f) => basename(f, ".ts"));
const rel = (f: string) => relative(SRC, f);

describe("source rules", () => {
  it("one component per folder: every .tsx in components/, views/ and parts/ is <Name>/<Name>.tsx", () => {
    const misplaced = sources
      .filter((f) => /\/(components|views|parts)\//.test(f) && f.endsWith(".tsx"))
      .filter((f) => basename(f, ".tsx") !== basename(dirname(f)));
    expect(misplaced.map(rel)).toEqual([]);
    expect(sources.filter((f) => /\/(components|views|parts)\//.test(f) && f.endsWith(".tsx")).length).toBeGreaterThan(15);
  });

  it("no inline style objects in the widget's components", () => {
    const inline = widget.filter((f) => f.endsWith(".tsx") && /style=\{\{/.test(readFileSync(f, "utf8")));
    expect(inline.map(rel)).toEqual([]);
  });

  it("no `as` casts over generated types, and no `as never` / `as unknown as` except the one documented in the wagmi connector", () => {
    const castToGenerated = new RegExp(`\\bas (${generatedTypes.join("|")})\\b`);
    const found = widget.flatMap((f) =>
      readFileSync(f, "utf8")
        .split("\n")
        .map((line, i) => ({ line: line.trim(), at: `${rel(f)}:${i + 1}` }))
        .filter(({ line }) => !line.startsWith("//") && (castToGenerated.test(line) || /\bas (never|unknown as)\b/.test(line))),
    );
    expect(found.map((f) => f.at)).toEqual(["wagmi/vestibule.ts:" + (readFileSync(join(SRC, "wagmi/vestibule.ts"), "utf8").split("\n").findIndex((l) => / as never/.test(l)) + 1)]);
    expect(generatedTypes).toContain("SessionState");
  });

  it("no module state: no top-level let or var in the widget's modules", () => {
    const state = widget.filter((f) => /^(let|var) /m.test(readFileSync(f, "utf8")));
    expect(state.map(rel)).toEqual([]);
  });

  it("no fixed DOM ids: ids come from useId", () => {
    // A DOM element (lowercase tag) with a literal id.
    const fixed = widget.filter((f) => f.endsWith(".tsx") && /<[a-z][\w-]*\b[^<>]*?\sid="/.test(readFileSync(f, "utf8")));
    expect(fixed.map(rel)).toEqual([]);
    expect(readFileSync(join(SRC, "components/Modal/Modal.tsx"), "utf8")).toContain("useId()");
  });

  it("the theme's stylesheet reads every theme variable of the contract", () => {
    const css = readFileSync(join(SRC, "theme/theme.css"), "utf8");
    const unread = THEME_VARIABLES.filter((v) => !css.includes(`var(${v})`));
    expect(unread).toEqual([]);
    expect(THEME_VARIABLES.length).toBe(7);
  });

  it("component styles read tokens, not literal colours (outside the theme file)", () => {
    const css = walk(SRC).filter((f) => f.endsWith(".css") && /\/(components|views|parts)\//.test(f));
    const literal = css.filter((f) => /#[0-9a-fA-F]{3,8}\b|rgba?\(/.test(readFileSync(f, "utf8").replace(/\/\*[\s\S]*?\*\//g, "")));
    // The avatar's gradients are the one palette a component keeps (they are not theme colours).
    expect(literal.map(rel)).toEqual(["views/Account/Account.css"]);
  });
});
