// The device shares of this browser profile, in the frame origin's IndexedDB (database
// `vestibule-frame`, store `device-shares`, key = walletId), each AES-GCM-encrypted under one
// non-extractable WebCrypto key kept in the same store: a copy of the database files alone does not
// give the shares to a script that cannot run in this origin.

const DATABASE = "vestibule-frame";
const STORE = "device-shares";
/** The wrapping key's record; wallet ids never start with a dot. */
const WRAPPING_KEY = ".wrapping-key";

interface WrappedShare {
  iv: Uint8Array;
  data: ArrayBuffer;
}

export interface DeviceStore {
  walletIds(): Promise<string[]>;
  get(walletId: string): Promise<Uint8Array | null>;
  put(walletId: string, share: Uint8Array): Promise<void>;
}

function promised<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error("IndexedDB failed"));
  });
}

function open(indexedDB: IDBFactory): Promise<IDBDatabase> {
  const request = indexedDB.open(DATABASE, 1);
  request.onupgradeneeded = () => request.result.createObjectStore(STORE);
  return promised(request);
}

export function openDeviceStore(indexedDB: IDBFactory = globalThis.indexedDB): DeviceStore {
  const db = open(indexedDB);
  const store = async (mode: IDBTransactionMode) => (await db).transaction(STORE, mode).objectStore(STORE);
  const wrappingKey = async (): Promise<CryptoKey> => {
    const existing: unknown = await promised((await store("readonly")).get(WRAPPING_KEY));
    if (existing instanceof CryptoKey) return existing;
    const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    await promised((await store("readwrite")).put(key, WRAPPING_KEY));
    return key;
  };
  return {
    async walletIds() {
      const keys = await promised((await store("readonly")).getAllKeys());
      return keys.filter((k): k is string => typeof k === "string" && k !== WRAPPING_KEY);
    },
    async get(walletId) {
      const record: unknown = await promised((await store("readonly")).get(walletId));
      if (record === undefined || record === null || typeof record !== "object" || !("iv" in record) || !("data" in record)) return null;
      const { iv, data } = record;
      if (!(iv instanceof Uint8Array) || !(data instanceof ArrayBuffer)) return null;
      return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: Uint8Array.from(iv), additionalData: new TextEncoder().encode(walletId) }, await wrappingKey(), data));
    },
    async put(walletId, share) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      // WebCrypto takes its own ArrayBuffer-backed copy; wiped once encrypted.
      const plain = Uint8Array.from(share);
      const data = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode(walletId) }, await wrappingKey(), plain).finally(() => plain.fill(0));
      const record: WrappedShare = { iv, data };
      await promised((await store("readwrite")).put(record, walletId));
    },
  };
}
