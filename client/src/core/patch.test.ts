// JSON Patch against RFC 6902's own examples (appendix A) and the properties the mirror relies on:
// the input is never changed, unchanged parts keep their identity, a failing patch throws.

import { describe, expect, it } from "vitest";
import { applyPatch, PatchError, pointer, type JsonPatchOperation } from "./patch";

const rfc: Array<[string, unknown, JsonPatchOperation[], unknown]> = [
  ["A.1 adding an object member", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { baz: "qux", foo: "bar" }],
  ["A.2 adding an array element", { foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }],
  ["A.3 removing an object member", { baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }],
  ["A.4 removing an array element", { foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }],
  ["A.5 replacing a value", { baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }],
  ["A.6 moving a value", { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } }, [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }], { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } }],
  ["A.7 moving an array element", { foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }],
  ["A.8 testing a value: success", { baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }], { baz: "qux", foo: ["a", 2, "c"] }],
  ["A.10 adding a nested member object", { foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }], { foo: "bar", child: { grandchild: {} } }],
  ["A.14 ~ escape ordering", { "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }], { "/": 9, "~1": 10 }],
  ["A.16 adding an array value", { foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }], { foo: ["bar", ["abc", "def"]] }],
  ["copying a value", { a: { b: 1 } }, [{ op: "copy", from: "/a", path: "/c" }], { a: { b: 1 }, c: { b: 1 } }],
  ["replacing the root", { a: 1 }, [{ op: "replace", path: "", value: [1] }], [1]],
];

describe("applyPatch", () => {
  it.each(rfc)("RFC 6902 %s", (_, doc, patch, expected) => {
    const before = structuredClone(doc);
    expect(applyPatch(doc, patch)).toEqual(expected);
    expect(doc).toEqual(before);
  });

  it.each<[string, unknown, JsonPatchOperation[]]>([
    ["A.9 a failing test", { baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "bar" }]],
    ["A.12 adding to a nonexistent target", { foo: "bar" }, [{ op: "add", path: "/baz/bat", value: "qux" }]],
    ["removing what is not there", { foo: "bar" }, [{ op: "remove", path: "/nope" }]],
    ["replacing what is not there", { foo: "bar" }, [{ op: "replace", path: "/nope", value: 1 }]],
    ["an index past the end", { a: [1] }, [{ op: "add", path: "/a/3", value: 1 }]],
    ["moving a value into itself", { a: { b: {} } }, [{ op: "move", from: "/a", path: "/a/b/c" }]],
  ])("refuses %s", (_, doc, patch) => {
    expect(() => applyPatch(doc, patch)).toThrow(PatchError);
  });

  it("copies only the containers on the changed path", () => {
    const doc = { changed: { x: 1 }, untouched: { y: [1, 2] } };
    const next = applyPatch(doc, [{ op: "replace", path: "/changed/x", value: 2 }]);
    expect(next).toEqual({ changed: { x: 2 }, untouched: { y: [1, 2] } });
    expect(pointer(next, "/untouched")).toBe(doc.untouched);
    expect(pointer(next, "/changed")).not.toBe(doc.changed);
  });
});

describe("pointer", () => {
  it("reads RFC 6901 pointers, with escapes, and nothing where there is nothing", () => {
    const doc = { foo: ["bar", "baz"], "a/b": 1, "m~n": 8, "": 0 };
    expect(pointer(doc, "")).toBe(doc);
    expect(pointer(doc, "/foo/0")).toBe("bar");
    expect(pointer(doc, "/a~1b")).toBe(1);
    expect(pointer(doc, "/m~0n")).toBe(8);
    expect(pointer(doc, "/")).toBe(0);
    expect(pointer(doc, "/foo/9")).toBeUndefined();
    expect(pointer(doc, "/toString")).toBeUndefined();
  });
});
