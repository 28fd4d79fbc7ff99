// The frame's per-page HPKE key pair (RFC 9180, DHKEM(P-256, HKDF-SHA256) / HKDF-SHA256 /
// AES-128-GCM) and the opening of the shares the embedded service seals to it. The private key is
// generated non-extractable by WebCrypto: not even this page's script can read it out.

import { Aes128Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 } from "@hpke/core";
import { base64urlnopad } from "@scure/base";

export const SHARE_INFO = "vestibule/share/v1";

/** A share sealed to the frame, as the frame API carries it. */
export interface Sealed {
  enc: string;
  ct: string;
}

export function shareSuite(): CipherSuite {
  return new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes128Gcm() });
}

export function frameKeyPair(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
}

/** The public key as registration sends it: base64url of the 65-byte uncompressed point. */
export async function publicKeyText(pair: CryptoKeyPair): Promise<string> {
  return base64urlnopad.encode(new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)));
}

export function isSealed(value: unknown): value is Sealed {
  return (
    value !== null && typeof value === "object" && "enc" in value && "ct" in value &&
    typeof value.enc === "string" && typeof value.ct === "string"
  );
}

/** Opens a sealed share (base mode; aad = the frame id, UTF-8). Throws when it was not sealed to
 * this key pair for this frame. */
export async function openShare(pair: CryptoKeyPair, sealed: Sealed, frameId: string): Promise<Uint8Array> {
  const recipient = await shareSuite().createRecipientContext({
    recipientKey: pair,
    enc: base64urlnopad.decode(sealed.enc),
    info: new TextEncoder().encode(SHARE_INFO),
  });
  return new Uint8Array(await recipient.open(base64urlnopad.decode(sealed.ct), new TextEncoder().encode(frameId)));
}
