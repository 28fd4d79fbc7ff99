// RFC 6902 JSON Patch, applied without mutating the document: every container on a changed path is
// copied, everything else is shared with the previous document. The mirror keeps each state it
// applied, and views select parts of it by identity, so an unchanged part keeps its identity and a
// view reading it does not render again.

export type JsonPatchOperation = {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  value?: unknown;
  from?: string;
};

export class PatchError extends Error {}

type Container = Record<string, unknown> | unknown[];

const isContainer = (v: unknown): v is Container => v !== null && typeof v === "object";
const member = (c: Container, key: string): unknown => (Array.isArray(c) ? c[Number(key)] : c[key]);

/** The reference tokens of a JSON pointer (RFC 6901). */
export function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new PatchError(`not a JSON pointer: ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** Reads a JSON pointer; `undefined` when nothing is there. */
export function pointer(doc: unknown, path: string): unknown {
  let node = doc;
  for (const token of parsePointer(path)) {
    if (Array.isArray(node)) node = /^(0|[1-9][0-9]*)$/.test(token) ? node[Number(token)] : undefined;
    else if (isContainer(node)) node = Object.hasOwn(node, token) ? member(node, token) : undefined;
    else return undefined;
  }
  return node;
}

function arrayIndex(array: unknown[], token: string, forInsert: boolean): number {
  if (forInsert && token === "-") return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`bad array index ${JSON.stringify(token)}`);
  const i = Number(token);
  if (i > array.length || (!forInsert && i === array.length)) throw new PatchError(`array index ${i} out of range`);
  return i;
}

/** A copy of `doc` with `edit` applied to the container at `tokens` (the container is copied first). */
function update(doc: unknown, tokens: string[], edit: (parent: Container, last: string) => void): unknown {
  if (tokens.length === 0) throw new PatchError("the root has no parent");
  const [head, ...rest] = tokens;
  if (!isContainer(doc)) throw new PatchError(`no container at ${JSON.stringify(head)}`);
  const copy: Container = Array.isArray(doc) ? doc.slice() : { ...doc };
  if (rest.length === 0) {
    edit(copy, head);
    return copy;
  }
  if (Array.isArray(copy)) {
    const i = arrayIndex(copy, head, false);
    copy[i] = update(copy[i], rest, edit);
  } else {
    if (!Object.hasOwn(copy, head)) throw new PatchError(`no member ${JSON.stringify(head)}`);
    copy[head] = update(copy[head], rest, edit);
  }
  return copy;
}

function add(doc: unknown, path: string, value: unknown): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  return update(doc, tokens, (parent, last) => {
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true), 0, value);
    else parent[last] = value;
  });
}

function remove(doc: unknown, path: string): unknown {
  return update(doc, parsePointer(path), (parent, last) => {
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, false), 1);
    else if (Object.hasOwn(parent, last)) delete parent[last];
    else throw new PatchError(`nothing to remove at ${path}`);
  });
}

function replace(doc: unknown, path: string, value: unknown): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  return update(doc, tokens, (parent, last) => {
    if (Array.isArray(parent)) parent[arrayIndex(parent, last, false)] = value;
    else if (Object.hasOwn(parent, last)) parent[last] = value;
    else throw new PatchError(`nothing to replace at ${path}`);
  });
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(member(a, k), member(b, k)));
}

function exists(doc: unknown, path: string): boolean {
  let node = doc;
  for (const token of parsePointer(path)) {
    if (Array.isArray(node)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= node.length) return false;
      node = node[Number(token)];
    } else if (isContainer(node) && Object.hasOwn(node, token)) node = member(node, token);
    else return false;
  }
  return true;
}

/** Applies `patch` to `doc` and returns the new document (`doc` is not changed); throws `PatchError`
 * when an operation fails. The result is `unknown`: what it is, the caller proves (the mirror checks
 * the server's state hash). */
export function applyPatch(doc: unknown, patch: readonly JsonPatchOperation[]): unknown {
  let next: unknown = doc;
  for (const op of patch) {
    switch (op.op) {
      case "add":
        next = add(next, op.path, op.value);
        break;
      case "remove":
        next = remove(next, op.path);
        break;
      case "replace":
        next = replace(next, op.path, op.value);
        break;
      case "move": {
        if (op.from === undefined || !exists(next, op.from)) throw new PatchError(`nothing to move at ${op.from}`);
        if (op.path.startsWith(`${op.from}/`)) throw new PatchError("cannot move a value into itself");
        const value = pointer(next, op.from);
        next = add(remove(next, op.from), op.path, value);
        break;
      }
      case "copy": {
        if (op.from === undefined || !exists(next, op.from)) throw new PatchError(`nothing to copy at ${op.from}`);
        next = add(next, op.path, structuredClone(pointer(next, op.from)));
        break;
      }
      case "test":
        if (!exists(next, op.path) || !deepEqual(pointer(next, op.path), op.value)) throw new PatchError(`test failed at ${op.path}`);
        break;
    }
  }
  return next;
}
