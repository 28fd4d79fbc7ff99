// The device store when the browser refuses the frame its IndexedDB (third-party storage blocked in
// a cross-site embed): the shares live in the page's memory and the login still completes.

import { describe, expect, it } from "vitest";
import { openDeviceStore } from "./deviceStore";

/** An IDBFactory whose `open` request fails, as Chromium's does when third-party storage is blocked. */
function refusingFactory(): IDBFactory {
  const open = () => {
    const request = { error: new DOMException("The user denied permission to access the database.", "UnknownError") } as unknown as IDBOpenDBRequest;
    queueMicrotask(() => request.onerror?.(new Event("error")));
    return request;
  };
  return { open } as unknown as IDBFactory;
}

/** An IDBFactory whose `open` throws at once, as Firefox's does with storage disabled. */
function throwingFactory(): IDBFactory {
  const open = () => {
    throw new DOMException("The operation is insecure.", "SecurityError");
  };
  return { open } as unknown as IDBFactory;
}

describe("the device store without IndexedDB", () => {
  for (const [name, factory] of [
    ["a refused open request", refusingFactory],
    ["an open that throws", throwingFactory],
  ] as const) {
    it(`given ${name}, when a share is put, then it is listed and read back from memory`, async () => {
      const store = openDeviceStore(factory());
      expect(await store.walletIds()).toEqual([]);

      await store.put("wallet-1", Uint8Array.of(1, 2, 3));

      expect(await store.walletIds()).toEqual(["wallet-1"]);
      expect(await store.get("wallet-1")).toEqual(Uint8Array.of(1, 2, 3));
      expect(await store.get("wallet-2")).toBeNull();
    });
  }
});
