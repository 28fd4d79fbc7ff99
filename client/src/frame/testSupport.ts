// For the frame's unit tests: a sealer playing the embedded service
// (HPKE to the frame's public key, info "vestibule/share/v1", aad = frame id).

import { base64urlnopad } from "@scure/base";
import { SHARE_INFO, shareSuite, type Sealed } from "./hpke";

export async function seal(publicKey: CryptoKey, plaintext: Uint8Array, frameId: string): Promise<Sealed> {
  const sender = await shareSuite().createSenderContext({ recipientPublicKey: publicKey, info: new TextEncoder().encode(SHARE_INFO) });
  const ct = await sender.seal(Uint8Array.from(plaintext).buffer, new TextEncoder().encode(frameId));
  return { enc: base64urlnopad.encode(new Uint8Array(sender.enc)), ct: base64urlnopad.encode(new Uint8Array(ct)) };
}
