// The device shares of this browser profile, in the frame origin's IndexedDB (database
// `vestibule-frame`, store `device-shares`, key = walletId), each AES-GCM-encrypted under one
// non-extractable WebCrypto key kept in the same store: a copy of the database files alone does not
// give the shares to a script that cannot run in this origin.
//
// A browser that blocks third-party storage refuses the frame (embedded cross-site) its IndexedDB
// ("The user denied permission to access the database"). The shares then live in this page's
// memory: the login works, and the next page load is a new device to the server (the email's
// recovery path), instead of a login that fails after the code.

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

/** The shares in this page's memory only. */
export function memoryDeviceStore(): DeviceStore & { shares: Map<string, Uint8Array> } {
  const shares = new Map<string, Uint8Array>();
  return {
    shares,
    walletIds: async () => [...shares.keys()],
    get: async (id) => (shares.has(id) ? Uint8Array.from(shares.get(id) ?? []) : null),
    put: async (id, share) => void shares.set(id, Uint8Array.from(share)),
  };
}

/** The IndexedDB store, or this page's memory when the browser refuses the database. */
export function openDeviceStore(indexedDB: IDBFactory = globalThis.indexedDB): DeviceStore {
  // `open` may throw at once (a SecurityError) or fail its request; either way memory it is.
  const persistent = new Promise<IDBDatabase>((resolve, reject) => void open(indexedDB).then(resolve, reject)).then(
    (db) => indexedDbStore(db),
    () => null,
  );
  const memory = memoryDeviceStore();
  const current = async () => (await persistent) ?? memory;
  return {
    walletIds: async () => (await current()).walletIds(),
    get: async (walletId) => (await current()).get(walletId),
    put: async (walletId, share) => (await current()).put(walletId, share),
  };
}

function indexedDbStore(database: IDBDatabase): DeviceStore {
  const store = async (mode: IDBTransactionMode) => database.transaction(STORE, mode).objectStore(STORE);
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
