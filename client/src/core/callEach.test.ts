import { afterEach, expect, it, vi } from "vitest";
import { callEach } from "./callEach";

afterEach(() => vi.restoreAllMocks());

it("given a listener that throws, when the listeners are called, then the others are called and the caller goes on", () => {
  // An outside review: a host's throwing subscribe or chainChanged listener left every later host
  // request unsettled, the widget's own listener after it never called.
  const console_ = vi.spyOn(console, "error").mockImplementation(() => undefined);
  const heard: string[] = [];
  const listeners = new Set<(n: number) => void>([
    (n) => heard.push(`first ${n}`),
    () => {
      throw new Error("the host's bug");
    },
    (n) => heard.push(`last ${n}`),
  ]);
  expect(() => callEach(listeners, 7)).not.toThrow();
  expect(heard).toEqual(["first 7", "last 7"]);
  expect(console_).toHaveBeenCalledWith(new Error("the host's bug"));
  callEach(undefined, 1); // no listeners for that event
});
