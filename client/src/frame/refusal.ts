// A wallet request refused with an EIP-1193 / JSON-RPC code (the session hears the code and the
// message as the request's outcome).

export class WalletRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The request's params are not what the method takes (JSON-RPC "invalid params"). */
export const INVALID_PARAMS = -32602;

export const invalid = (message: string) => new WalletRefusal(INVALID_PARAMS, message);
