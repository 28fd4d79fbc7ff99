// Generated from the Rust definitions by `vestibule-codegen`. Do not edit by hand.
// Frames of scripted sessions, built by the functions the session actor uses (decide, evolve,
// wire::patch, wire::state_hash; tools/codegen/src/lib.rs). For the client's tests.
import type { ServerMessage } from "./ServerMessage";

/** Discover, a rejected connect, connect, four toasts, their expiry, hover, disconnect. */
export const fixtureFrames: ServerMessage[] = [
  {
    "type": "welcome",
    "protocol": 2,
    "sessionId": "0123456789abcdef0123456789abcdef",
    "resumeToken": "fixture-token",
    "seq": 1,
    "resumed": false,
    "state": {
      "started": true,
      "project": "test",
      "origin": "http://localhost:3000",
      "options": {
        "networks": [],
        "metadata": {
          "name": "",
          "description": "",
          "url": "",
          "icons": []
        },
        "features": {
          "email": false,
          "socials": [],
          "emailShowWallets": true,
          "swaps": true,
          "onramp": true,
          "activity": true,
          "send": true,
          "receive": true,
          "pay": false,
          "analytics": false,
          "allWallets": true,
          "legalCheckbox": false,
          "smartSessions": false,
          "collapseWallets": false,
          "branding": true
        },
        "includeWalletIds": [],
        "excludeWalletIds": [],
        "featuredWalletIds": [],
        "customWallets": [],
        "enableWalletConnect": false,
        "enableEip6963": true,
        "enableInjected": true,
        "enableWallets": true,
        "enableNetworkSwitch": true,
        "allowUnsupportedChain": false,
        "defaultAccountTypes": {},
        "themeMode": "dark",
        "themeVariables": {},
        "debug": false
      },
      "networks": [
        {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "nativeCurrency": {
            "name": "Ether",
            "symbol": "ETH",
            "decimals": 18
          },
          "rpcUrls": [
            "https://ethereum-rpc.publicnode.com"
          ],
          "blockExplorers": [
            "https://etherscan.io"
          ],
          "testnet": false
        }
      ],
      "modal": {
        "status": "closed",
        "closable": true
      },
      "router": {
        "current": "Connect",
        "stack": [
          {
            "view": "Connect"
          }
        ]
      },
      "connection": {
        "namespaces": {
          "eip155": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "solana": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "polkadot": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "bip122": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "cosmos": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          }
        },
        "activeNamespace": null,
        "connectors": [],
        "connectorStatus": {},
        "recentWallets": [],
        "loading": false,
        "activeFeatures": {
          "balance": false,
          "names": false,
          "activity": false,
          "send": false
        }
      },
      "connectView": {
        "methods": [
          "wallet"
        ],
        "groups": []
      },
      "toasts": {
        "status": "empty",
        "timers": "running",
        "items": {},
        "order": [],
        "pausedBy": [],
        "reshowAtMs": null,
        "nextId": 0
      },
      "requests": {
        "status": "idle",
        "items": {},
        "order": [],
        "nextId": 0
      },
      "siwx": {
        "status": "idle",
        "challenge": null,
        "error": null,
        "sessions": {},
        "nextSession": 0
      },
      "chainService": {
        "networks": []
      },
      "balances": {
        "status": "idle",
        "network": null,
        "address": null,
        "native": null,
        "tokens": [],
        "totalUsd": null,
        "fetchedMs": null,
        "pending": null,
        "lastFetch": 0,
        "retryBlockedUntilMs": null,
        "error": null
      },
      "activity": {
        "status": "idle",
        "network": null,
        "address": null,
        "transactions": [],
        "next": null,
        "pending": null,
        "lastFetch": 0,
        "error": null
      },
      "send": {
        "status": "idle",
        "form": {
          "token": null,
          "amount": "",
          "receiver": ""
        },
        "formVersion": 0,
        "error": null,
        "sending": null,
        "sent": [],
        "solana": null,
        "solanaSends": 0
      },
      "networkSwitch": {
        "status": "idle",
        "target": null,
        "requestId": null,
        "code": null,
        "error": null
      },
      "hostRequests": {
        "status": "idle",
        "items": {},
        "order": [],
        "stack": [],
        "openedModal": false
      },
      "embedded": {
        "frame": {
          "status": "idle"
        },
        "login": {
          "status": "idle"
        },
        "update": {
          "status": "idle"
        },
        "lastEffectId": 0
      }
    },
    "stateHash": "9d52eff63e80a0f0"
  },
  {
    "type": "diff",
    "seq": 2,
    "prevSeq": 1,
    "events": [
      {
        "seq": 2,
        "timeMs": 1700000000000,
        "correlationId": "c1",
        "type": "ConnectorsUpdated",
        "payload": {
          "connectors": [
            {
              "id": "dev.vestibule.wallet",
              "name": "Dev Wallet",
              "kind": "ANNOUNCED",
              "rdns": "dev.vestibule.wallet",
              "namespaces": [
                "eip155"
              ]
            }
          ]
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/connectView/groups/0",
        "value": {
          "entries": [
            {
              "connectorId": "dev.vestibule.wallet",
              "homepage": null,
              "icon": null,
              "installed": true,
              "name": "Dev Wallet",
              "namespaces": [
                "eip155"
              ],
              "walletId": "dev.vestibule.wallet"
            }
          ],
          "group": "injected"
        }
      },
      {
        "op": "add",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "disconnected"
      },
      {
        "op": "add",
        "path": "/connection/connectors/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "kind": "ANNOUNCED",
          "name": "Dev Wallet",
          "namespaces": [
            "eip155"
          ],
          "rdns": "dev.vestibule.wallet"
        }
      }
    ],
    "stateHash": "87f0fa7559847e92"
  },
  {
    "type": "diff",
    "seq": 3,
    "prevSeq": 2,
    "events": [
      {
        "seq": 3,
        "timeMs": 1700000000000,
        "correlationId": "c2",
        "type": "ModalOpened",
        "payload": {}
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      }
    ],
    "stateHash": "8b365b88b0d07503"
  },
  {
    "type": "diff",
    "seq": 6,
    "prevSeq": 3,
    "events": [
      {
        "seq": 4,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r1",
            "connectorId": "dev.vestibule.wallet",
            "namespace": "eip155",
            "kind": {
              "type": "connect"
            },
            "issuedMs": 1700000000000
          }
        }
      },
      {
        "seq": 5,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "ConnectStarted",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "requestId": "r1"
        }
      },
      {
        "seq": 6,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "Navigated",
        "payload": {
          "view": "ConnectingWallet",
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "mode": "push"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/connectorId",
        "value": "dev.vestibule.wallet"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": "r1"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connecting"
      },
      {
        "op": "add",
        "path": "/requests/items/r1",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "id": "r1",
          "issuedMs": 1700000000000,
          "kind": {
            "type": "connect"
          },
          "namespace": "eip155"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 1
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r1"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "ConnectingWallet"
      },
      {
        "op": "add",
        "path": "/router/stack/1",
        "value": {
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "view": "ConnectingWallet"
        }
      }
    ],
    "stateHash": "9d1d61f8bb190c83"
  },
  {
    "type": "diff",
    "seq": 12,
    "prevSeq": 6,
    "events": [
      {
        "seq": 7,
        "timeMs": 1700000001200,
        "correlationId": "c4",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r1",
          "outcome": {
            "status": "error",
            "code": 4001,
            "message": "User rejected the request."
          }
        }
      },
      {
        "seq": 8,
        "timeMs": 1700000001200,
        "correlationId": "c4",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 9,
        "timeMs": 1700000001200,
        "correlationId": "c4",
        "type": "ConnectFailed",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "code": 4001,
          "message": "Connection rejected"
        }
      },
      {
        "seq": 10,
        "timeMs": 1700000001200,
        "correlationId": "c4",
        "type": "ToastQueued",
        "payload": {
          "id": "t1",
          "message": "Connection rejected",
          "variant": "error",
          "autoCloseMs": 4000,
          "atMs": 1700000001200
        }
      },
      {
        "seq": 11,
        "timeMs": 1700000001200,
        "correlationId": "c4",
        "type": "ToastShown",
        "payload": {
          "id": "t1",
          "deadlineMs": 1700000005200
        }
      },
      {
        "seq": 12,
        "timeMs": 1700000001200,
        "correlationId": "c4",
        "type": "Navigated",
        "payload": {
          "view": "Connect",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/connectorId",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/lastError",
        "value": "Connection rejected"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "disconnected"
      },
      {
        "op": "remove",
        "path": "/requests/items/r1"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Connect"
      },
      {
        "op": "remove",
        "path": "/router/stack/1"
      },
      {
        "op": "add",
        "path": "/toasts/items/t1",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000001200,
          "deadlineMs": 1700000005200,
          "id": "t1",
          "message": "Connection rejected",
          "remainingMs": null,
          "variant": "error",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 1
      },
      {
        "op": "add",
        "path": "/toasts/order/0",
        "value": "t1"
      },
      {
        "op": "replace",
        "path": "/toasts/status",
        "value": "active"
      }
    ],
    "stateHash": "2c03de3c5f9f158d"
  },
  {
    "type": "diff",
    "seq": 15,
    "prevSeq": 12,
    "events": [
      {
        "seq": 13,
        "timeMs": 1700000001200,
        "correlationId": "c5",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r2",
            "connectorId": "dev.vestibule.wallet",
            "namespace": "eip155",
            "kind": {
              "type": "connect"
            },
            "issuedMs": 1700000001200
          }
        }
      },
      {
        "seq": 14,
        "timeMs": 1700000001200,
        "correlationId": "c5",
        "type": "ConnectStarted",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "requestId": "r2"
        }
      },
      {
        "seq": 15,
        "timeMs": 1700000001200,
        "correlationId": "c5",
        "type": "Navigated",
        "payload": {
          "view": "ConnectingWallet",
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "mode": "push"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/connectorId",
        "value": "dev.vestibule.wallet"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/lastError",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": "r2"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connecting"
      },
      {
        "op": "add",
        "path": "/requests/items/r2",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "id": "r2",
          "issuedMs": 1700000001200,
          "kind": {
            "type": "connect"
          },
          "namespace": "eip155"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 2
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r2"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "ConnectingWallet"
      },
      {
        "op": "add",
        "path": "/router/stack/1",
        "value": {
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "view": "ConnectingWallet"
        }
      }
    ],
    "stateHash": "4a688d0de86dd576"
  },
  {
    "type": "diff",
    "seq": 21,
    "prevSeq": 15,
    "events": [
      {
        "seq": 16,
        "timeMs": 1700000001200,
        "correlationId": "c6",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r2",
          "outcome": {
            "status": "ok",
            "result": {
              "accounts": [
                "0x52908400098527886E0F7030069857D2E4169EE7"
              ],
              "chainId": "0x1"
            }
          }
        }
      },
      {
        "seq": 17,
        "timeMs": 1700000001200,
        "correlationId": "c6",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 18,
        "timeMs": 1700000001200,
        "correlationId": "c6",
        "type": "Connected",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "accounts": [
            {
              "address": "0x52908400098527886E0F7030069857D2E4169EE7",
              "type": "eoa"
            }
          ],
          "network": {
            "caipNetworkId": "eip155:1",
            "name": "Ethereum",
            "supported": true
          }
        }
      },
      {
        "seq": 19,
        "timeMs": 1700000001200,
        "correlationId": "c6",
        "type": "RecentWalletUsed",
        "payload": {
          "wallet": {
            "id": "dev.vestibule.wallet",
            "rdns": "dev.vestibule.wallet",
            "name": "Dev Wallet"
          }
        }
      },
      {
        "seq": 20,
        "timeMs": 1700000001200,
        "correlationId": "c6",
        "type": "ModalClosed",
        "payload": {}
      },
      {
        "seq": 21,
        "timeMs": 1700000001200,
        "correlationId": "c6",
        "type": "Navigated",
        "payload": {
          "view": "Account",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connectView/groups/0/group",
        "value": "recent"
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/activity",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/balance",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/names",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/send",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeNamespace",
        "value": "eip155"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/namespaces/eip155/accounts/0",
        "value": {
          "address": "0x52908400098527886E0F7030069857D2E4169EE7",
          "type": "eoa"
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/address",
        "value": "0x52908400098527886E0F7030069857D2E4169EE7"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/caipAddress",
        "value": "eip155:1:0x52908400098527886E0F7030069857D2E4169EE7"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/network",
        "value": {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "supported": true
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/recentWallets/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "name": "Dev Wallet",
          "rdns": "dev.vestibule.wallet"
        }
      },
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "closed"
      },
      {
        "op": "remove",
        "path": "/requests/items/r2"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Account"
      },
      {
        "op": "replace",
        "path": "/router/stack/0/view",
        "value": "Account"
      },
      {
        "op": "remove",
        "path": "/router/stack/1"
      }
    ],
    "stateHash": "2c1d5bd563d1b1f8"
  },
  {
    "type": "diff",
    "seq": 23,
    "prevSeq": 21,
    "events": [
      {
        "seq": 22,
        "timeMs": 1700000001200,
        "correlationId": "c7",
        "type": "ToastQueued",
        "payload": {
          "id": "t2",
          "message": "Toast \"0\"\t✓ é",
          "variant": "success",
          "autoCloseMs": 4000,
          "atMs": 1700000001200
        }
      },
      {
        "seq": 23,
        "timeMs": 1700000001200,
        "correlationId": "c7",
        "type": "ToastShown",
        "payload": {
          "id": "t2",
          "deadlineMs": 1700000005200
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/toasts/items/t2",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000001200,
          "deadlineMs": 1700000005200,
          "id": "t2",
          "message": "Toast \"0\"\t✓ é",
          "remainingMs": null,
          "variant": "success",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 2
      },
      {
        "op": "add",
        "path": "/toasts/order/1",
        "value": "t2"
      }
    ],
    "stateHash": "28df38f4315b36a7"
  },
  {
    "type": "diff",
    "seq": 25,
    "prevSeq": 23,
    "events": [
      {
        "seq": 24,
        "timeMs": 1700000001200,
        "correlationId": "c8",
        "type": "ToastQueued",
        "payload": {
          "id": "t3",
          "message": "Toast \"1\"\t✓ é",
          "variant": "success",
          "autoCloseMs": 4000,
          "atMs": 1700000001200
        }
      },
      {
        "seq": 25,
        "timeMs": 1700000001200,
        "correlationId": "c8",
        "type": "ToastShown",
        "payload": {
          "id": "t3",
          "deadlineMs": 1700000005200
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/toasts/items/t3",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000001200,
          "deadlineMs": 1700000005200,
          "id": "t3",
          "message": "Toast \"1\"\t✓ é",
          "remainingMs": null,
          "variant": "success",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 3
      },
      {
        "op": "add",
        "path": "/toasts/order/2",
        "value": "t3"
      }
    ],
    "stateHash": "c090458020564128"
  },
  {
    "type": "diff",
    "seq": 26,
    "prevSeq": 25,
    "events": [
      {
        "seq": 26,
        "timeMs": 1700000001200,
        "correlationId": "c9",
        "type": "ToastQueued",
        "payload": {
          "id": "t4",
          "message": "Toast \"2\"\t✓ é",
          "variant": "success",
          "autoCloseMs": 4000,
          "atMs": 1700000001200
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/toasts/items/t4",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000001200,
          "deadlineMs": null,
          "id": "t4",
          "message": "Toast \"2\"\t✓ é",
          "remainingMs": null,
          "variant": "success",
          "visible": false
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 4
      },
      {
        "op": "add",
        "path": "/toasts/order/3",
        "value": "t4"
      }
    ],
    "stateHash": "5a9124e69a68d308"
  },
  {
    "type": "diff",
    "seq": 27,
    "prevSeq": 26,
    "events": [
      {
        "seq": 27,
        "timeMs": 1700000001200,
        "correlationId": "c10",
        "type": "ToastQueued",
        "payload": {
          "id": "t5",
          "message": "Toast \"3\"\t✓ é",
          "variant": "success",
          "autoCloseMs": 4000,
          "atMs": 1700000001200
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/toasts/items/t5",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000001200,
          "deadlineMs": null,
          "id": "t5",
          "message": "Toast \"3\"\t✓ é",
          "remainingMs": null,
          "variant": "success",
          "visible": false
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 5
      },
      {
        "op": "add",
        "path": "/toasts/order/4",
        "value": "t5"
      }
    ],
    "stateHash": "863de0c53ff2da73"
  },
  {
    "type": "diff",
    "seq": 31,
    "prevSeq": 27,
    "events": [
      {
        "seq": 28,
        "timeMs": 1700000005200,
        "correlationId": "timer:28",
        "type": "ToastDismissed",
        "payload": {
          "id": "t1",
          "reason": "expired"
        }
      },
      {
        "seq": 29,
        "timeMs": 1700000005200,
        "correlationId": "timer:28",
        "type": "ToastReshowScheduled",
        "payload": {
          "atMs": 1700000005350
        }
      },
      {
        "seq": 30,
        "timeMs": 1700000005200,
        "correlationId": "timer:28",
        "type": "ToastDismissed",
        "payload": {
          "id": "t2",
          "reason": "expired"
        }
      },
      {
        "seq": 31,
        "timeMs": 1700000005200,
        "correlationId": "timer:28",
        "type": "ToastDismissed",
        "payload": {
          "id": "t3",
          "reason": "expired"
        }
      }
    ],
    "patch": [
      {
        "op": "remove",
        "path": "/toasts/items/t1"
      },
      {
        "op": "remove",
        "path": "/toasts/items/t2"
      },
      {
        "op": "remove",
        "path": "/toasts/items/t3"
      },
      {
        "op": "replace",
        "path": "/toasts/order/0",
        "value": "t4"
      },
      {
        "op": "replace",
        "path": "/toasts/order/1",
        "value": "t5"
      },
      {
        "op": "remove",
        "path": "/toasts/order/2"
      },
      {
        "op": "remove",
        "path": "/toasts/order/2"
      },
      {
        "op": "remove",
        "path": "/toasts/order/2"
      },
      {
        "op": "replace",
        "path": "/toasts/reshowAtMs",
        "value": 1700000005350
      }
    ],
    "stateHash": "b388ab91ddc955c2"
  },
  {
    "type": "diff",
    "seq": 33,
    "prevSeq": 31,
    "events": [
      {
        "seq": 32,
        "timeMs": 1700000005350,
        "correlationId": "timer:32",
        "type": "ToastShown",
        "payload": {
          "id": "t4",
          "deadlineMs": 1700000009350
        }
      },
      {
        "seq": 33,
        "timeMs": 1700000005350,
        "correlationId": "timer:32",
        "type": "ToastShown",
        "payload": {
          "id": "t5",
          "deadlineMs": 1700000009350
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/toasts/items/t4/deadlineMs",
        "value": 1700000009350
      },
      {
        "op": "replace",
        "path": "/toasts/items/t4/visible",
        "value": true
      },
      {
        "op": "replace",
        "path": "/toasts/items/t5/deadlineMs",
        "value": 1700000009350
      },
      {
        "op": "replace",
        "path": "/toasts/items/t5/visible",
        "value": true
      },
      {
        "op": "replace",
        "path": "/toasts/reshowAtMs",
        "value": null
      }
    ],
    "stateHash": "5b27f458bd3dfa30"
  },
  {
    "type": "diff",
    "seq": 34,
    "prevSeq": 33,
    "events": [
      {
        "seq": 34,
        "timeMs": 1700000005350,
        "correlationId": "c13",
        "type": "ToastPauseStarted",
        "payload": {
          "reason": "hover",
          "atMs": 1700000005350
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/toasts/items/t4/deadlineMs",
        "value": null
      },
      {
        "op": "replace",
        "path": "/toasts/items/t4/remainingMs",
        "value": 4000
      },
      {
        "op": "replace",
        "path": "/toasts/items/t5/deadlineMs",
        "value": null
      },
      {
        "op": "replace",
        "path": "/toasts/items/t5/remainingMs",
        "value": 4000
      },
      {
        "op": "add",
        "path": "/toasts/pausedBy/0",
        "value": "hover"
      },
      {
        "op": "replace",
        "path": "/toasts/timers",
        "value": "paused"
      }
    ],
    "stateHash": "94bbbe56ea7d4bc5"
  },
  {
    "type": "diff",
    "seq": 36,
    "prevSeq": 34,
    "events": [
      {
        "seq": 35,
        "timeMs": 1700000005350,
        "correlationId": "c14",
        "type": "Disconnected",
        "payload": {
          "namespace": "eip155",
          "reason": "user"
        }
      },
      {
        "seq": 36,
        "timeMs": 1700000005350,
        "correlationId": "c14",
        "type": "Navigated",
        "payload": {
          "view": "Connect",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/activeFeatures/activity",
        "value": false
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/balance",
        "value": false
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/names",
        "value": false
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/send",
        "value": false
      },
      {
        "op": "replace",
        "path": "/connection/activeNamespace",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "disconnected"
      },
      {
        "op": "remove",
        "path": "/connection/namespaces/eip155/accounts/0"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/address",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/caipAddress",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/connectorId",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/network",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "disconnected"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Connect"
      },
      {
        "op": "replace",
        "path": "/router/stack/0/view",
        "value": "Connect"
      }
    ],
    "stateHash": "0d31b0a4bc65c319"
  }
];

/** Sign-in required: connect, SIWXSignMessage, a declined signature, a valid one, signed in, Account. */
export const signInFrames: ServerMessage[] = [
  {
    "type": "welcome",
    "protocol": 2,
    "sessionId": "0123456789abcdef0123456789abcdef",
    "resumeToken": "fixture-token",
    "seq": 1,
    "resumed": false,
    "state": {
      "started": true,
      "project": "test",
      "origin": "http://localhost:3000",
      "options": {
        "networks": [],
        "metadata": {
          "name": "",
          "description": "",
          "url": "",
          "icons": []
        },
        "features": {
          "email": false,
          "socials": [],
          "emailShowWallets": true,
          "swaps": true,
          "onramp": true,
          "activity": true,
          "send": true,
          "receive": true,
          "pay": false,
          "analytics": false,
          "allWallets": true,
          "legalCheckbox": false,
          "smartSessions": false,
          "collapseWallets": false,
          "branding": true
        },
        "includeWalletIds": [],
        "excludeWalletIds": [],
        "featuredWalletIds": [],
        "customWallets": [],
        "enableWalletConnect": false,
        "enableEip6963": true,
        "enableInjected": true,
        "enableWallets": true,
        "enableNetworkSwitch": true,
        "allowUnsupportedChain": false,
        "defaultAccountTypes": {},
        "themeMode": "dark",
        "themeVariables": {},
        "siwx": {
          "required": true,
          "signOutOnDisconnect": false
        },
        "debug": false
      },
      "networks": [
        {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "nativeCurrency": {
            "name": "Ether",
            "symbol": "ETH",
            "decimals": 18
          },
          "rpcUrls": [
            "https://ethereum-rpc.publicnode.com"
          ],
          "blockExplorers": [
            "https://etherscan.io"
          ],
          "testnet": false
        }
      ],
      "modal": {
        "status": "closed",
        "closable": true
      },
      "router": {
        "current": "Connect",
        "stack": [
          {
            "view": "Connect"
          }
        ]
      },
      "connection": {
        "namespaces": {
          "eip155": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "solana": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "polkadot": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "bip122": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "cosmos": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          }
        },
        "activeNamespace": null,
        "connectors": [],
        "connectorStatus": {},
        "recentWallets": [],
        "loading": false,
        "activeFeatures": {
          "balance": false,
          "names": false,
          "activity": false,
          "send": false
        }
      },
      "connectView": {
        "methods": [
          "wallet"
        ],
        "groups": []
      },
      "toasts": {
        "status": "empty",
        "timers": "running",
        "items": {},
        "order": [],
        "pausedBy": [],
        "reshowAtMs": null,
        "nextId": 0
      },
      "requests": {
        "status": "idle",
        "items": {},
        "order": [],
        "nextId": 0
      },
      "siwx": {
        "status": "idle",
        "challenge": null,
        "error": null,
        "sessions": {},
        "nextSession": 0
      },
      "chainService": {
        "networks": []
      },
      "balances": {
        "status": "idle",
        "network": null,
        "address": null,
        "native": null,
        "tokens": [],
        "totalUsd": null,
        "fetchedMs": null,
        "pending": null,
        "lastFetch": 0,
        "retryBlockedUntilMs": null,
        "error": null
      },
      "activity": {
        "status": "idle",
        "network": null,
        "address": null,
        "transactions": [],
        "next": null,
        "pending": null,
        "lastFetch": 0,
        "error": null
      },
      "send": {
        "status": "idle",
        "form": {
          "token": null,
          "amount": "",
          "receiver": ""
        },
        "formVersion": 0,
        "error": null,
        "sending": null,
        "sent": [],
        "solana": null,
        "solanaSends": 0
      },
      "networkSwitch": {
        "status": "idle",
        "target": null,
        "requestId": null,
        "code": null,
        "error": null
      },
      "hostRequests": {
        "status": "idle",
        "items": {},
        "order": [],
        "stack": [],
        "openedModal": false
      },
      "embedded": {
        "frame": {
          "status": "idle"
        },
        "login": {
          "status": "idle"
        },
        "update": {
          "status": "idle"
        },
        "lastEffectId": 0
      }
    },
    "stateHash": "8c8e13aeb94dbce4"
  },
  {
    "type": "diff",
    "seq": 2,
    "prevSeq": 1,
    "events": [
      {
        "seq": 2,
        "timeMs": 1700000000000,
        "correlationId": "c1",
        "type": "ConnectorsUpdated",
        "payload": {
          "connectors": [
            {
              "id": "dev.vestibule.wallet",
              "name": "Dev Wallet",
              "kind": "ANNOUNCED",
              "rdns": "dev.vestibule.wallet",
              "namespaces": [
                "eip155"
              ]
            }
          ]
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/connectView/groups/0",
        "value": {
          "entries": [
            {
              "connectorId": "dev.vestibule.wallet",
              "homepage": null,
              "icon": null,
              "installed": true,
              "name": "Dev Wallet",
              "namespaces": [
                "eip155"
              ],
              "walletId": "dev.vestibule.wallet"
            }
          ],
          "group": "injected"
        }
      },
      {
        "op": "add",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "disconnected"
      },
      {
        "op": "add",
        "path": "/connection/connectors/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "kind": "ANNOUNCED",
          "name": "Dev Wallet",
          "namespaces": [
            "eip155"
          ],
          "rdns": "dev.vestibule.wallet"
        }
      }
    ],
    "stateHash": "f253d6b01303dc7a"
  },
  {
    "type": "diff",
    "seq": 3,
    "prevSeq": 2,
    "events": [
      {
        "seq": 3,
        "timeMs": 1700000000000,
        "correlationId": "c2",
        "type": "ModalOpened",
        "payload": {}
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      }
    ],
    "stateHash": "f5e722b996bf915e"
  },
  {
    "type": "diff",
    "seq": 6,
    "prevSeq": 3,
    "events": [
      {
        "seq": 4,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r1",
            "connectorId": "dev.vestibule.wallet",
            "namespace": "eip155",
            "kind": {
              "type": "connect"
            },
            "issuedMs": 1700000000000
          }
        }
      },
      {
        "seq": 5,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "ConnectStarted",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "requestId": "r1"
        }
      },
      {
        "seq": 6,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "Navigated",
        "payload": {
          "view": "ConnectingWallet",
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "mode": "push"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/connectorId",
        "value": "dev.vestibule.wallet"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": "r1"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connecting"
      },
      {
        "op": "add",
        "path": "/requests/items/r1",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "id": "r1",
          "issuedMs": 1700000000000,
          "kind": {
            "type": "connect"
          },
          "namespace": "eip155"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 1
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r1"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "ConnectingWallet"
      },
      {
        "op": "add",
        "path": "/router/stack/1",
        "value": {
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "view": "ConnectingWallet"
        }
      }
    ],
    "stateHash": "b7f3ab1fa3cd37bf"
  },
  {
    "type": "diff",
    "seq": 12,
    "prevSeq": 6,
    "events": [
      {
        "seq": 7,
        "timeMs": 1700000000800,
        "correlationId": "c4",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r1",
          "outcome": {
            "status": "ok",
            "result": {
              "accounts": [
                "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025"
              ],
              "chainId": "0x1"
            }
          }
        }
      },
      {
        "seq": 8,
        "timeMs": 1700000000800,
        "correlationId": "c4",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 9,
        "timeMs": 1700000000800,
        "correlationId": "c4",
        "type": "Connected",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "accounts": [
            {
              "address": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
              "type": "eoa"
            }
          ],
          "network": {
            "caipNetworkId": "eip155:1",
            "name": "Ethereum",
            "supported": true
          }
        }
      },
      {
        "seq": 10,
        "timeMs": 1700000000800,
        "correlationId": "c4",
        "type": "RecentWalletUsed",
        "payload": {
          "wallet": {
            "id": "dev.vestibule.wallet",
            "rdns": "dev.vestibule.wallet",
            "name": "Dev Wallet"
          }
        }
      },
      {
        "seq": 11,
        "timeMs": 1700000000800,
        "correlationId": "c4",
        "type": "SiwxChallengeIssued",
        "payload": {
          "challenge": {
            "account": "eip155:1:0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
            "chain": "eip155:1",
            "nonce": "FixtureNonce4",
            "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
            "issuedMs": 1700000000800,
            "expiresMs": 1700086400800,
            "requestId": null,
            "toastId": null,
            "signature": null
          }
        }
      },
      {
        "seq": 12,
        "timeMs": 1700000000800,
        "correlationId": "c4",
        "type": "Navigated",
        "payload": {
          "view": "SIWXSignMessage",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connectView/groups/0/group",
        "value": "recent"
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/activity",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/balance",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/names",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/send",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeNamespace",
        "value": "eip155"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/namespaces/eip155/accounts/0",
        "value": {
          "address": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
          "type": "eoa"
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/address",
        "value": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/caipAddress",
        "value": "eip155:1:0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/network",
        "value": {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "supported": true
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/recentWallets/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "name": "Dev Wallet",
          "rdns": "dev.vestibule.wallet"
        }
      },
      {
        "op": "replace",
        "path": "/modal/closable",
        "value": false
      },
      {
        "op": "remove",
        "path": "/requests/items/r1"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "SIWXSignMessage"
      },
      {
        "op": "replace",
        "path": "/router/stack/0/view",
        "value": "SIWXSignMessage"
      },
      {
        "op": "remove",
        "path": "/router/stack/1"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge",
        "value": {
          "account": "eip155:1:0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
          "chain": "eip155:1",
          "expiresMs": 1700086400800,
          "issuedMs": 1700000000800,
          "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
          "nonce": "FixtureNonce4",
          "requestId": null,
          "signature": null,
          "toastId": null
        }
      },
      {
        "op": "replace",
        "path": "/siwx/status",
        "value": "ready"
      }
    ],
    "stateHash": "8d8573bd78a6798b"
  },
  {
    "type": "diff",
    "seq": 16,
    "prevSeq": 12,
    "events": [
      {
        "seq": 13,
        "timeMs": 1700000001300,
        "correlationId": "c5",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r2",
            "connectorId": "dev.vestibule.wallet",
            "namespace": "eip155",
            "kind": {
              "type": "signMessage",
              "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
              "address": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025"
            },
            "issuedMs": 1700000001300
          }
        }
      },
      {
        "seq": 14,
        "timeMs": 1700000001300,
        "correlationId": "c5",
        "type": "ToastQueued",
        "payload": {
          "id": "t1",
          "message": "Authenticating...",
          "variant": "loading",
          "autoCloseMs": null,
          "atMs": 1700000001300
        }
      },
      {
        "seq": 15,
        "timeMs": 1700000001300,
        "correlationId": "c5",
        "type": "ToastShown",
        "payload": {
          "id": "t1",
          "deadlineMs": null
        }
      },
      {
        "seq": 16,
        "timeMs": 1700000001300,
        "correlationId": "c5",
        "type": "SiwxSignRequested",
        "payload": {
          "requestId": "r2",
          "toastId": "t1"
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/requests/items/r2",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "id": "r2",
          "issuedMs": 1700000001300,
          "kind": {
            "address": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
            "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
            "type": "signMessage"
          },
          "namespace": "eip155"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 2
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r2"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge/requestId",
        "value": "r2"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge/toastId",
        "value": "t1"
      },
      {
        "op": "replace",
        "path": "/siwx/status",
        "value": "signing"
      },
      {
        "op": "add",
        "path": "/toasts/items/t1",
        "value": {
          "autoCloseMs": null,
          "createdMs": 1700000001300,
          "deadlineMs": null,
          "id": "t1",
          "message": "Authenticating...",
          "remainingMs": null,
          "variant": "loading",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 1
      },
      {
        "op": "add",
        "path": "/toasts/order/0",
        "value": "t1"
      },
      {
        "op": "replace",
        "path": "/toasts/status",
        "value": "active"
      }
    ],
    "stateHash": "f7944d0292ef633f"
  },
  {
    "type": "diff",
    "seq": 23,
    "prevSeq": 16,
    "events": [
      {
        "seq": 17,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r2",
          "outcome": {
            "status": "error",
            "code": 4001,
            "message": "User rejected the request."
          }
        }
      },
      {
        "seq": 18,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 19,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "ToastDismissed",
        "payload": {
          "id": "t1",
          "reason": "closed"
        }
      },
      {
        "seq": 20,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "ToastsCleared",
        "payload": {}
      },
      {
        "seq": 21,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "SiwxDeclined",
        "payload": {
          "message": "Signature declined"
        }
      },
      {
        "seq": 22,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "ToastQueued",
        "payload": {
          "id": "t2",
          "message": "Signature declined",
          "variant": "error",
          "autoCloseMs": 4000,
          "atMs": 1700000002000
        }
      },
      {
        "seq": 23,
        "timeMs": 1700000002000,
        "correlationId": "c6",
        "type": "ToastShown",
        "payload": {
          "id": "t2",
          "deadlineMs": 1700000006000
        }
      }
    ],
    "patch": [
      {
        "op": "remove",
        "path": "/requests/items/r2"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge/requestId",
        "value": null
      },
      {
        "op": "replace",
        "path": "/siwx/challenge/toastId",
        "value": null
      },
      {
        "op": "replace",
        "path": "/siwx/error",
        "value": "Signature declined"
      },
      {
        "op": "replace",
        "path": "/siwx/status",
        "value": "ready"
      },
      {
        "op": "add",
        "path": "/toasts/items/t2",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000002000,
          "deadlineMs": 1700000006000,
          "id": "t2",
          "message": "Signature declined",
          "remainingMs": null,
          "variant": "error",
          "visible": true
        }
      },
      {
        "op": "remove",
        "path": "/toasts/items/t1"
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 2
      },
      {
        "op": "replace",
        "path": "/toasts/order/0",
        "value": "t2"
      }
    ],
    "stateHash": "08a3e598a39b07da"
  },
  {
    "type": "diff",
    "seq": 27,
    "prevSeq": 23,
    "events": [
      {
        "seq": 24,
        "timeMs": 1700000002500,
        "correlationId": "c7",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r3",
            "connectorId": "dev.vestibule.wallet",
            "namespace": "eip155",
            "kind": {
              "type": "signMessage",
              "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
              "address": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025"
            },
            "issuedMs": 1700000002500
          }
        }
      },
      {
        "seq": 25,
        "timeMs": 1700000002500,
        "correlationId": "c7",
        "type": "ToastQueued",
        "payload": {
          "id": "t3",
          "message": "Authenticating...",
          "variant": "loading",
          "autoCloseMs": null,
          "atMs": 1700000002500
        }
      },
      {
        "seq": 26,
        "timeMs": 1700000002500,
        "correlationId": "c7",
        "type": "ToastShown",
        "payload": {
          "id": "t3",
          "deadlineMs": null
        }
      },
      {
        "seq": 27,
        "timeMs": 1700000002500,
        "correlationId": "c7",
        "type": "SiwxSignRequested",
        "payload": {
          "requestId": "r3",
          "toastId": "t3"
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/requests/items/r3",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "id": "r3",
          "issuedMs": 1700000002500,
          "kind": {
            "address": "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
            "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
            "type": "signMessage"
          },
          "namespace": "eip155"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 3
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r3"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge/requestId",
        "value": "r3"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge/toastId",
        "value": "t3"
      },
      {
        "op": "replace",
        "path": "/siwx/error",
        "value": null
      },
      {
        "op": "replace",
        "path": "/siwx/status",
        "value": "signing"
      },
      {
        "op": "add",
        "path": "/toasts/items/t3",
        "value": {
          "autoCloseMs": null,
          "createdMs": 1700000002500,
          "deadlineMs": null,
          "id": "t3",
          "message": "Authenticating...",
          "remainingMs": null,
          "variant": "loading",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 3
      },
      {
        "op": "add",
        "path": "/toasts/order/1",
        "value": "t3"
      }
    ],
    "stateHash": "b088096bca4f5d3e"
  },
  {
    "type": "diff",
    "seq": 33,
    "prevSeq": 27,
    "events": [
      {
        "seq": 28,
        "timeMs": 1700000003400,
        "correlationId": "c8",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r3",
          "outcome": {
            "status": "ok",
            "result": "0x88e5e8b7c471b89c779b3139791deab2e6661d4a7c377fc3d1d19f0efaaeac6a234cddf065514250ff2154dd010b5cd0b59bbee6311bed07cc3b688ab5edc99c1c"
          }
        }
      },
      {
        "seq": 29,
        "timeMs": 1700000003400,
        "correlationId": "c8",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 30,
        "timeMs": 1700000003400,
        "correlationId": "c8",
        "type": "ToastDismissed",
        "payload": {
          "id": "t3",
          "reason": "closed"
        }
      },
      {
        "seq": 31,
        "timeMs": 1700000003400,
        "correlationId": "c8",
        "type": "SiwxSignedIn",
        "payload": {
          "session": {
            "id": "si1",
            "account": "eip155:1:0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
            "chain": "eip155:1",
            "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
            "signature": "0x88e5e8b7c471b89c779b3139791deab2e6661d4a7c377fc3d1d19f0efaaeac6a234cddf065514250ff2154dd010b5cd0b59bbee6311bed07cc3b688ab5edc99c1c",
            "method": "eip191",
            "issuedMs": 1700000000800,
            "expiresMs": 1700086400800
          }
        }
      },
      {
        "seq": 32,
        "timeMs": 1700000003400,
        "correlationId": "c8",
        "type": "ModalClosed",
        "payload": {}
      },
      {
        "seq": 33,
        "timeMs": 1700000003400,
        "correlationId": "c8",
        "type": "Navigated",
        "payload": {
          "view": "Account",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/closable",
        "value": true
      },
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "closed"
      },
      {
        "op": "remove",
        "path": "/requests/items/r3"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Account"
      },
      {
        "op": "replace",
        "path": "/router/stack/0/view",
        "value": "Account"
      },
      {
        "op": "replace",
        "path": "/siwx/challenge",
        "value": null
      },
      {
        "op": "replace",
        "path": "/siwx/nextSession",
        "value": 1
      },
      {
        "op": "add",
        "path": "/siwx/sessions/eip155:1:0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
        "value": {
          "account": "eip155:1:0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
          "chain": "eip155:1",
          "expiresMs": 1700086400800,
          "id": "si1",
          "issuedMs": 1700000000800,
          "message": "http://localhost:3000 wants you to sign in with your Ethereum account:\n0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025\n\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: 1\nNonce: FixtureNonce4\nIssued At: 2023-11-14T22:13:20.8Z\nExpiration Time: 2023-11-15T22:13:20.8Z",
          "method": "eip191",
          "signature": "0x88e5e8b7c471b89c779b3139791deab2e6661d4a7c377fc3d1d19f0efaaeac6a234cddf065514250ff2154dd010b5cd0b59bbee6311bed07cc3b688ab5edc99c1c"
        }
      },
      {
        "op": "replace",
        "path": "/siwx/status",
        "value": "idle"
      },
      {
        "op": "remove",
        "path": "/toasts/items/t3"
      },
      {
        "op": "remove",
        "path": "/toasts/order/1"
      }
    ],
    "stateHash": "e839ffe99d77c695"
  },
  {
    "type": "diff",
    "seq": 34,
    "prevSeq": 33,
    "events": [
      {
        "seq": 34,
        "timeMs": 1700000005400,
        "correlationId": "c9",
        "type": "ModalOpened",
        "payload": {}
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      }
    ],
    "stateHash": "86650fc1074a189d"
  }
];

/** Email and three socials enabled with a wallet announced; what email and Google login answer. */
export const connectMethodsFrames: ServerMessage[] = [
  {
    "type": "welcome",
    "protocol": 2,
    "sessionId": "0123456789abcdef0123456789abcdef",
    "resumeToken": "fixture-token",
    "seq": 1,
    "resumed": false,
    "state": {
      "started": true,
      "project": "test",
      "origin": "http://localhost:3000",
      "options": {
        "networks": [],
        "metadata": {
          "name": "",
          "description": "",
          "url": "",
          "icons": []
        },
        "features": {
          "email": true,
          "socials": [
            "google",
            "x",
            "discord"
          ],
          "emailShowWallets": true,
          "swaps": true,
          "onramp": true,
          "activity": true,
          "send": true,
          "receive": true,
          "pay": false,
          "analytics": false,
          "allWallets": true,
          "legalCheckbox": false,
          "smartSessions": false,
          "collapseWallets": false,
          "branding": true
        },
        "includeWalletIds": [],
        "excludeWalletIds": [],
        "featuredWalletIds": [],
        "customWallets": [],
        "enableWalletConnect": false,
        "enableEip6963": true,
        "enableInjected": true,
        "enableWallets": true,
        "enableNetworkSwitch": true,
        "allowUnsupportedChain": false,
        "defaultAccountTypes": {},
        "themeMode": "dark",
        "themeVariables": {},
        "debug": false
      },
      "networks": [
        {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "nativeCurrency": {
            "name": "Ether",
            "symbol": "ETH",
            "decimals": 18
          },
          "rpcUrls": [
            "https://ethereum-rpc.publicnode.com"
          ],
          "blockExplorers": [
            "https://etherscan.io"
          ],
          "testnet": false
        }
      ],
      "modal": {
        "status": "closed",
        "closable": true
      },
      "router": {
        "current": "Connect",
        "stack": [
          {
            "view": "Connect"
          }
        ]
      },
      "connection": {
        "namespaces": {
          "eip155": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "solana": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "polkadot": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "bip122": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "cosmos": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          }
        },
        "activeNamespace": null,
        "connectors": [],
        "connectorStatus": {},
        "recentWallets": [],
        "loading": false,
        "activeFeatures": {
          "balance": false,
          "names": false,
          "activity": false,
          "send": false
        }
      },
      "connectView": {
        "methods": [
          "email",
          "social",
          "wallet"
        ],
        "groups": []
      },
      "toasts": {
        "status": "empty",
        "timers": "running",
        "items": {},
        "order": [],
        "pausedBy": [],
        "reshowAtMs": null,
        "nextId": 0
      },
      "requests": {
        "status": "idle",
        "items": {},
        "order": [],
        "nextId": 0
      },
      "siwx": {
        "status": "idle",
        "challenge": null,
        "error": null,
        "sessions": {},
        "nextSession": 0
      },
      "chainService": {
        "networks": []
      },
      "balances": {
        "status": "idle",
        "network": null,
        "address": null,
        "native": null,
        "tokens": [],
        "totalUsd": null,
        "fetchedMs": null,
        "pending": null,
        "lastFetch": 0,
        "retryBlockedUntilMs": null,
        "error": null
      },
      "activity": {
        "status": "idle",
        "network": null,
        "address": null,
        "transactions": [],
        "next": null,
        "pending": null,
        "lastFetch": 0,
        "error": null
      },
      "send": {
        "status": "idle",
        "form": {
          "token": null,
          "amount": "",
          "receiver": ""
        },
        "formVersion": 0,
        "error": null,
        "sending": null,
        "sent": [],
        "solana": null,
        "solanaSends": 0
      },
      "networkSwitch": {
        "status": "idle",
        "target": null,
        "requestId": null,
        "code": null,
        "error": null
      },
      "hostRequests": {
        "status": "idle",
        "items": {},
        "order": [],
        "stack": [],
        "openedModal": false
      },
      "embedded": {
        "frame": {
          "status": "idle"
        },
        "login": {
          "status": "idle"
        },
        "update": {
          "status": "idle"
        },
        "lastEffectId": 0
      }
    },
    "stateHash": "211c59c6d2398e2f"
  },
  {
    "type": "diff",
    "seq": 2,
    "prevSeq": 1,
    "events": [
      {
        "seq": 2,
        "timeMs": 1700000000000,
        "correlationId": "c1",
        "type": "ConnectorsUpdated",
        "payload": {
          "connectors": [
            {
              "id": "dev.vestibule.wallet",
              "name": "Dev Wallet",
              "kind": "ANNOUNCED",
              "rdns": "dev.vestibule.wallet",
              "namespaces": [
                "eip155"
              ]
            }
          ]
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/connectView/groups/0",
        "value": {
          "entries": [
            {
              "connectorId": "dev.vestibule.wallet",
              "homepage": null,
              "icon": null,
              "installed": true,
              "name": "Dev Wallet",
              "namespaces": [
                "eip155"
              ],
              "walletId": "dev.vestibule.wallet"
            }
          ],
          "group": "injected"
        }
      },
      {
        "op": "replace",
        "path": "/connectView/methods/0",
        "value": "wallet"
      },
      {
        "op": "replace",
        "path": "/connectView/methods/1",
        "value": "email"
      },
      {
        "op": "replace",
        "path": "/connectView/methods/2",
        "value": "social"
      },
      {
        "op": "add",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "disconnected"
      },
      {
        "op": "add",
        "path": "/connection/connectors/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "kind": "ANNOUNCED",
          "name": "Dev Wallet",
          "namespaces": [
            "eip155"
          ],
          "rdns": "dev.vestibule.wallet"
        }
      }
    ],
    "stateHash": "f94a0fc1152a6278"
  },
  {
    "type": "diff",
    "seq": 3,
    "prevSeq": 2,
    "events": [
      {
        "seq": 3,
        "timeMs": 1700000000000,
        "correlationId": "c2",
        "type": "ModalOpened",
        "payload": {}
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      }
    ],
    "stateHash": "4f89b0acf2d30fa7"
  },
  {
    "type": "diff",
    "seq": 5,
    "prevSeq": 3,
    "events": [
      {
        "seq": 4,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "ToastQueued",
        "payload": {
          "id": "t1",
          "message": "Unable to load email login dependency",
          "variant": "error",
          "autoCloseMs": 4000,
          "atMs": 1700000000000
        }
      },
      {
        "seq": 5,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "ToastShown",
        "payload": {
          "id": "t1",
          "deadlineMs": 1700000004000
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/toasts/items/t1",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000000000,
          "deadlineMs": 1700000004000,
          "id": "t1",
          "message": "Unable to load email login dependency",
          "remainingMs": null,
          "variant": "error",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 1
      },
      {
        "op": "add",
        "path": "/toasts/order/0",
        "value": "t1"
      },
      {
        "op": "replace",
        "path": "/toasts/status",
        "value": "active"
      }
    ],
    "stateHash": "68c1252ea2acec74"
  },
  {
    "type": "diff",
    "seq": 7,
    "prevSeq": 5,
    "events": [
      {
        "seq": 6,
        "timeMs": 1700000000300,
        "correlationId": "c4",
        "type": "ToastQueued",
        "payload": {
          "id": "t2",
          "message": "Failed to initiate social connection",
          "variant": "error",
          "autoCloseMs": 4000,
          "atMs": 1700000000300
        }
      },
      {
        "seq": 7,
        "timeMs": 1700000000300,
        "correlationId": "c4",
        "type": "ToastShown",
        "payload": {
          "id": "t2",
          "deadlineMs": 1700000004300
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/toasts/items/t2",
        "value": {
          "autoCloseMs": 4000,
          "createdMs": 1700000000300,
          "deadlineMs": 1700000004300,
          "id": "t2",
          "message": "Failed to initiate social connection",
          "remainingMs": null,
          "variant": "error",
          "visible": true
        }
      },
      {
        "op": "replace",
        "path": "/toasts/nextId",
        "value": 2
      },
      {
        "op": "add",
        "path": "/toasts/order/1",
        "value": "t2"
      }
    ],
    "stateHash": "6cf7188f2721275a"
  }
];

/** Ethereum and Solana Devnet: the EVM wallet connects, switching to Solana shows SwitchActiveChain,
* confirming goes to Connect, the Solana wallet connects, the active namespace switches back. */
export const multichainFrames: ServerMessage[] = [
  {
    "type": "welcome",
    "protocol": 2,
    "sessionId": "0123456789abcdef0123456789abcdef",
    "resumeToken": "fixture-token",
    "seq": 1,
    "resumed": false,
    "state": {
      "started": true,
      "project": "test",
      "origin": "http://localhost:3000",
      "options": {
        "networks": [
          "eip155:1",
          "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
        ],
        "metadata": {
          "name": "",
          "description": "",
          "url": "",
          "icons": []
        },
        "features": {
          "email": false,
          "socials": [],
          "emailShowWallets": true,
          "swaps": true,
          "onramp": true,
          "activity": true,
          "send": true,
          "receive": true,
          "pay": false,
          "analytics": false,
          "allWallets": true,
          "legalCheckbox": false,
          "smartSessions": false,
          "collapseWallets": false,
          "branding": true
        },
        "includeWalletIds": [],
        "excludeWalletIds": [],
        "featuredWalletIds": [],
        "customWallets": [],
        "enableWalletConnect": false,
        "enableEip6963": true,
        "enableInjected": true,
        "enableWallets": true,
        "enableNetworkSwitch": true,
        "allowUnsupportedChain": false,
        "defaultAccountTypes": {},
        "themeMode": "dark",
        "themeVariables": {},
        "debug": false
      },
      "networks": [
        {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "nativeCurrency": {
            "name": "Ether",
            "symbol": "ETH",
            "decimals": 18
          },
          "rpcUrls": [
            "https://ethereum-rpc.publicnode.com"
          ],
          "blockExplorers": [
            "https://etherscan.io"
          ],
          "testnet": false
        },
        {
          "caipNetworkId": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
          "name": "Solana Devnet",
          "nativeCurrency": {
            "name": "Solana",
            "symbol": "SOL",
            "decimals": 9
          },
          "rpcUrls": [
            "https://api.devnet.solana.com"
          ],
          "blockExplorers": [
            "https://explorer.solana.com/?cluster=devnet"
          ],
          "testnet": true
        }
      ],
      "modal": {
        "status": "closed",
        "closable": true
      },
      "router": {
        "current": "Connect",
        "stack": [
          {
            "view": "Connect"
          }
        ]
      },
      "connection": {
        "namespaces": {
          "eip155": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "solana": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "polkadot": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "bip122": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          },
          "cosmos": {
            "status": "disconnected",
            "connectorId": null,
            "accounts": [],
            "address": null,
            "caipAddress": null,
            "network": null,
            "pendingRequest": null,
            "syncing": false,
            "lastError": null
          }
        },
        "activeNamespace": null,
        "connectors": [],
        "connectorStatus": {},
        "recentWallets": [],
        "loading": false,
        "activeFeatures": {
          "balance": false,
          "names": false,
          "activity": false,
          "send": false
        }
      },
      "connectView": {
        "methods": [
          "wallet"
        ],
        "groups": []
      },
      "toasts": {
        "status": "empty",
        "timers": "running",
        "items": {},
        "order": [],
        "pausedBy": [],
        "reshowAtMs": null,
        "nextId": 0
      },
      "requests": {
        "status": "idle",
        "items": {},
        "order": [],
        "nextId": 0
      },
      "siwx": {
        "status": "idle",
        "challenge": null,
        "error": null,
        "sessions": {},
        "nextSession": 0
      },
      "chainService": {
        "networks": []
      },
      "balances": {
        "status": "idle",
        "network": null,
        "address": null,
        "native": null,
        "tokens": [],
        "totalUsd": null,
        "fetchedMs": null,
        "pending": null,
        "lastFetch": 0,
        "retryBlockedUntilMs": null,
        "error": null
      },
      "activity": {
        "status": "idle",
        "network": null,
        "address": null,
        "transactions": [],
        "next": null,
        "pending": null,
        "lastFetch": 0,
        "error": null
      },
      "send": {
        "status": "idle",
        "form": {
          "token": null,
          "amount": "",
          "receiver": ""
        },
        "formVersion": 0,
        "error": null,
        "sending": null,
        "sent": [],
        "solana": null,
        "solanaSends": 0
      },
      "networkSwitch": {
        "status": "idle",
        "target": null,
        "requestId": null,
        "code": null,
        "error": null
      },
      "hostRequests": {
        "status": "idle",
        "items": {},
        "order": [],
        "stack": [],
        "openedModal": false
      },
      "embedded": {
        "frame": {
          "status": "idle"
        },
        "login": {
          "status": "idle"
        },
        "update": {
          "status": "idle"
        },
        "lastEffectId": 0
      }
    },
    "stateHash": "074bc1c06365b746"
  },
  {
    "type": "diff",
    "seq": 2,
    "prevSeq": 1,
    "events": [
      {
        "seq": 2,
        "timeMs": 1700000000000,
        "correlationId": "c1",
        "type": "ConnectorsUpdated",
        "payload": {
          "connectors": [
            {
              "id": "dev.vestibule.wallet",
              "name": "Dev Wallet",
              "kind": "ANNOUNCED",
              "rdns": "dev.vestibule.wallet",
              "namespaces": [
                "eip155"
              ]
            },
            {
              "id": "solana:Dev Solana Wallet",
              "name": "Dev Solana Wallet",
              "kind": "ANNOUNCED",
              "namespaces": [
                "solana"
              ]
            }
          ]
        }
      }
    ],
    "patch": [
      {
        "op": "add",
        "path": "/connectView/groups/0",
        "value": {
          "entries": [
            {
              "connectorId": "dev.vestibule.wallet",
              "homepage": null,
              "icon": null,
              "installed": true,
              "name": "Dev Wallet",
              "namespaces": [
                "eip155"
              ],
              "walletId": "dev.vestibule.wallet"
            },
            {
              "connectorId": "solana:Dev Solana Wallet",
              "homepage": null,
              "icon": null,
              "installed": true,
              "name": "Dev Solana Wallet",
              "namespaces": [
                "solana"
              ],
              "walletId": "solana:Dev Solana Wallet"
            }
          ],
          "group": "injected"
        }
      },
      {
        "op": "add",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "disconnected"
      },
      {
        "op": "add",
        "path": "/connection/connectorStatus/solana:Dev Solana Wallet",
        "value": "disconnected"
      },
      {
        "op": "add",
        "path": "/connection/connectors/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "kind": "ANNOUNCED",
          "name": "Dev Wallet",
          "namespaces": [
            "eip155"
          ],
          "rdns": "dev.vestibule.wallet"
        }
      },
      {
        "op": "add",
        "path": "/connection/connectors/1",
        "value": {
          "id": "solana:Dev Solana Wallet",
          "kind": "ANNOUNCED",
          "name": "Dev Solana Wallet",
          "namespaces": [
            "solana"
          ]
        }
      }
    ],
    "stateHash": "0bbb18c016376a72"
  },
  {
    "type": "diff",
    "seq": 3,
    "prevSeq": 2,
    "events": [
      {
        "seq": 3,
        "timeMs": 1700000000000,
        "correlationId": "c2",
        "type": "ModalOpened",
        "payload": {}
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      }
    ],
    "stateHash": "2a69c168e547ea10"
  },
  {
    "type": "diff",
    "seq": 6,
    "prevSeq": 3,
    "events": [
      {
        "seq": 4,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r1",
            "connectorId": "dev.vestibule.wallet",
            "namespace": "eip155",
            "kind": {
              "type": "connect"
            },
            "issuedMs": 1700000000000
          }
        }
      },
      {
        "seq": 5,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "ConnectStarted",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "requestId": "r1"
        }
      },
      {
        "seq": 6,
        "timeMs": 1700000000000,
        "correlationId": "c3",
        "type": "Navigated",
        "payload": {
          "view": "ConnectingWallet",
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "mode": "push"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/connectorId",
        "value": "dev.vestibule.wallet"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": "r1"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connecting"
      },
      {
        "op": "add",
        "path": "/requests/items/r1",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "id": "r1",
          "issuedMs": 1700000000000,
          "kind": {
            "type": "connect"
          },
          "namespace": "eip155"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 1
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r1"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "ConnectingWallet"
      },
      {
        "op": "add",
        "path": "/router/stack/1",
        "value": {
          "params": {
            "connectorId": "dev.vestibule.wallet"
          },
          "view": "ConnectingWallet"
        }
      }
    ],
    "stateHash": "226b3ae1d260b187"
  },
  {
    "type": "diff",
    "seq": 12,
    "prevSeq": 6,
    "events": [
      {
        "seq": 7,
        "timeMs": 1700000000600,
        "correlationId": "c4",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r1",
          "outcome": {
            "status": "ok",
            "result": {
              "accounts": [
                "0x52908400098527886E0F7030069857D2E4169EE7"
              ],
              "chainId": "0x1"
            }
          }
        }
      },
      {
        "seq": 8,
        "timeMs": 1700000000600,
        "correlationId": "c4",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 9,
        "timeMs": 1700000000600,
        "correlationId": "c4",
        "type": "Connected",
        "payload": {
          "namespace": "eip155",
          "connectorId": "dev.vestibule.wallet",
          "accounts": [
            {
              "address": "0x52908400098527886E0F7030069857D2E4169EE7",
              "type": "eoa"
            }
          ],
          "network": {
            "caipNetworkId": "eip155:1",
            "name": "Ethereum",
            "supported": true
          }
        }
      },
      {
        "seq": 10,
        "timeMs": 1700000000600,
        "correlationId": "c4",
        "type": "RecentWalletUsed",
        "payload": {
          "wallet": {
            "id": "dev.vestibule.wallet",
            "rdns": "dev.vestibule.wallet",
            "name": "Dev Wallet"
          }
        }
      },
      {
        "seq": 11,
        "timeMs": 1700000000600,
        "correlationId": "c4",
        "type": "ModalClosed",
        "payload": {}
      },
      {
        "seq": 12,
        "timeMs": 1700000000600,
        "correlationId": "c4",
        "type": "Navigated",
        "payload": {
          "view": "Account",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "remove",
        "path": "/connectView/groups/0/entries/1"
      },
      {
        "op": "replace",
        "path": "/connectView/groups/0/group",
        "value": "recent"
      },
      {
        "op": "add",
        "path": "/connectView/groups/1",
        "value": {
          "entries": [
            {
              "connectorId": "solana:Dev Solana Wallet",
              "homepage": null,
              "icon": null,
              "installed": true,
              "name": "Dev Solana Wallet",
              "namespaces": [
                "solana"
              ],
              "walletId": "solana:Dev Solana Wallet"
            }
          ],
          "group": "injected"
        }
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/activity",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/balance",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/names",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/send",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeNamespace",
        "value": "eip155"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/namespaces/eip155/accounts/0",
        "value": {
          "address": "0x52908400098527886E0F7030069857D2E4169EE7",
          "type": "eoa"
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/address",
        "value": "0x52908400098527886E0F7030069857D2E4169EE7"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/caipAddress",
        "value": "eip155:1:0x52908400098527886E0F7030069857D2E4169EE7"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/network",
        "value": {
          "caipNetworkId": "eip155:1",
          "name": "Ethereum",
          "supported": true
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/pendingRequest",
        "value": null
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/eip155/status",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/recentWallets/0",
        "value": {
          "id": "dev.vestibule.wallet",
          "name": "Dev Wallet",
          "rdns": "dev.vestibule.wallet"
        }
      },
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "closed"
      },
      {
        "op": "remove",
        "path": "/requests/items/r1"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Account"
      },
      {
        "op": "replace",
        "path": "/router/stack/0/view",
        "value": "Account"
      },
      {
        "op": "remove",
        "path": "/router/stack/1"
      }
    ],
    "stateHash": "6f2bb89deea65073"
  },
  {
    "type": "diff",
    "seq": 14,
    "prevSeq": 12,
    "events": [
      {
        "seq": 13,
        "timeMs": 1700000001600,
        "correlationId": "c5",
        "type": "ModalOpened",
        "payload": {}
      },
      {
        "seq": 14,
        "timeMs": 1700000001600,
        "correlationId": "c5",
        "type": "Navigated",
        "payload": {
          "view": "SwitchActiveChain",
          "params": {
            "switchToChain": "solana",
            "navigateTo": "Connect",
            "navigateWithReplace": true,
            "network": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
          },
          "mode": "push"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "SwitchActiveChain"
      },
      {
        "op": "add",
        "path": "/router/stack/1",
        "value": {
          "params": {
            "navigateTo": "Connect",
            "navigateWithReplace": true,
            "network": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
            "switchToChain": "solana"
          },
          "view": "SwitchActiveChain"
        }
      }
    ],
    "stateHash": "61bb9277c5a17578"
  },
  {
    "type": "diff",
    "seq": 16,
    "prevSeq": 14,
    "events": [
      {
        "seq": 15,
        "timeMs": 1700000002400,
        "correlationId": "c6",
        "type": "ActiveNamespaceChanged",
        "payload": {
          "namespace": "solana"
        }
      },
      {
        "seq": 16,
        "timeMs": 1700000002400,
        "correlationId": "c6",
        "type": "Navigated",
        "payload": {
          "view": "Connect",
          "params": {
            "switchToChain": "solana"
          },
          "mode": "replace"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/activeFeatures/activity",
        "value": false
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/names",
        "value": false
      },
      {
        "op": "replace",
        "path": "/connection/activeNamespace",
        "value": "solana"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "active"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Connect"
      },
      {
        "op": "remove",
        "path": "/router/stack/1/params/navigateTo"
      },
      {
        "op": "remove",
        "path": "/router/stack/1/params/navigateWithReplace"
      },
      {
        "op": "remove",
        "path": "/router/stack/1/params/network"
      },
      {
        "op": "replace",
        "path": "/router/stack/1/view",
        "value": "Connect"
      }
    ],
    "stateHash": "d9ae0eee99a15a62"
  },
  {
    "type": "diff",
    "seq": 19,
    "prevSeq": 16,
    "events": [
      {
        "seq": 17,
        "timeMs": 1700000002400,
        "correlationId": "c7",
        "type": "WalletRequestIssued",
        "payload": {
          "request": {
            "id": "r2",
            "connectorId": "solana:Dev Solana Wallet",
            "namespace": "solana",
            "kind": {
              "type": "connect"
            },
            "issuedMs": 1700000002400
          }
        }
      },
      {
        "seq": 18,
        "timeMs": 1700000002400,
        "correlationId": "c7",
        "type": "ConnectStarted",
        "payload": {
          "namespace": "solana",
          "connectorId": "solana:Dev Solana Wallet",
          "requestId": "r2"
        }
      },
      {
        "seq": 19,
        "timeMs": 1700000002400,
        "correlationId": "c7",
        "type": "Navigated",
        "payload": {
          "view": "ConnectingWallet",
          "params": {
            "connectorId": "solana:Dev Solana Wallet"
          },
          "mode": "push"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/connectorId",
        "value": "solana:Dev Solana Wallet"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/pendingRequest",
        "value": "r2"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/status",
        "value": "connecting"
      },
      {
        "op": "add",
        "path": "/requests/items/r2",
        "value": {
          "connectorId": "solana:Dev Solana Wallet",
          "id": "r2",
          "issuedMs": 1700000002400,
          "kind": {
            "type": "connect"
          },
          "namespace": "solana"
        }
      },
      {
        "op": "replace",
        "path": "/requests/nextId",
        "value": 2
      },
      {
        "op": "add",
        "path": "/requests/order/0",
        "value": "r2"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "pending"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "ConnectingWallet"
      },
      {
        "op": "add",
        "path": "/router/stack/2",
        "value": {
          "params": {
            "connectorId": "solana:Dev Solana Wallet"
          },
          "view": "ConnectingWallet"
        }
      }
    ],
    "stateHash": "33971792ccb2bca0"
  },
  {
    "type": "diff",
    "seq": 25,
    "prevSeq": 19,
    "events": [
      {
        "seq": 20,
        "timeMs": 1700000003000,
        "correlationId": "c8",
        "type": "WalletRequestSettled",
        "payload": {
          "id": "r2",
          "outcome": {
            "status": "ok",
            "result": {
              "accounts": [
                "GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB"
              ],
              "chains": [
                "solana:devnet"
              ]
            }
          }
        }
      },
      {
        "seq": 21,
        "timeMs": 1700000003000,
        "correlationId": "c8",
        "type": "WalletRequestsDrained",
        "payload": {}
      },
      {
        "seq": 22,
        "timeMs": 1700000003000,
        "correlationId": "c8",
        "type": "Connected",
        "payload": {
          "namespace": "solana",
          "connectorId": "solana:Dev Solana Wallet",
          "accounts": [
            {
              "address": "GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB",
              "type": "eoa"
            }
          ],
          "network": {
            "caipNetworkId": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
            "name": "Solana Devnet",
            "supported": true
          },
          "signableNetworks": [
            "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
          ]
        }
      },
      {
        "seq": 23,
        "timeMs": 1700000003000,
        "correlationId": "c8",
        "type": "RecentWalletUsed",
        "payload": {
          "wallet": {
            "id": "solana:Dev Solana Wallet",
            "name": "Dev Solana Wallet"
          }
        }
      },
      {
        "seq": 24,
        "timeMs": 1700000003000,
        "correlationId": "c8",
        "type": "ModalClosed",
        "payload": {}
      },
      {
        "seq": 25,
        "timeMs": 1700000003000,
        "correlationId": "c8",
        "type": "Navigated",
        "payload": {
          "view": "Account",
          "mode": "reset"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connectView/groups/0/entries/0/connectorId",
        "value": "solana:Dev Solana Wallet"
      },
      {
        "op": "replace",
        "path": "/connectView/groups/0/entries/0/name",
        "value": "Dev Solana Wallet"
      },
      {
        "op": "replace",
        "path": "/connectView/groups/0/entries/0/namespaces/0",
        "value": "solana"
      },
      {
        "op": "replace",
        "path": "/connectView/groups/0/entries/0/walletId",
        "value": "solana:Dev Solana Wallet"
      },
      {
        "op": "add",
        "path": "/connectView/groups/0/entries/1",
        "value": {
          "connectorId": "dev.vestibule.wallet",
          "homepage": null,
          "icon": null,
          "installed": true,
          "name": "Dev Wallet",
          "namespaces": [
            "eip155"
          ],
          "walletId": "dev.vestibule.wallet"
        }
      },
      {
        "op": "remove",
        "path": "/connectView/groups/1"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/solana:Dev Solana Wallet",
        "value": "connected"
      },
      {
        "op": "add",
        "path": "/connection/namespaces/solana/accounts/0",
        "value": {
          "address": "GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB",
          "type": "eoa"
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/address",
        "value": "GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/caipAddress",
        "value": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1:GmaDrppBC7P5ARKV8g3djiwP89vz1jLK23V2GBjuAEGB"
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/network",
        "value": {
          "caipNetworkId": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
          "name": "Solana Devnet",
          "supported": true
        }
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/pendingRequest",
        "value": null
      },
      {
        "op": "add",
        "path": "/connection/namespaces/solana/signableNetworks",
        "value": [
          "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
        ]
      },
      {
        "op": "replace",
        "path": "/connection/namespaces/solana/status",
        "value": "connected"
      },
      {
        "op": "replace",
        "path": "/connection/recentWallets/0/id",
        "value": "solana:Dev Solana Wallet"
      },
      {
        "op": "replace",
        "path": "/connection/recentWallets/0/name",
        "value": "Dev Solana Wallet"
      },
      {
        "op": "remove",
        "path": "/connection/recentWallets/0/rdns"
      },
      {
        "op": "add",
        "path": "/connection/recentWallets/1",
        "value": {
          "id": "dev.vestibule.wallet",
          "name": "Dev Wallet",
          "rdns": "dev.vestibule.wallet"
        }
      },
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "closed"
      },
      {
        "op": "remove",
        "path": "/requests/items/r2"
      },
      {
        "op": "remove",
        "path": "/requests/order/0"
      },
      {
        "op": "replace",
        "path": "/requests/status",
        "value": "idle"
      },
      {
        "op": "replace",
        "path": "/router/current",
        "value": "Account"
      },
      {
        "op": "remove",
        "path": "/router/stack/1"
      },
      {
        "op": "remove",
        "path": "/router/stack/1"
      }
    ],
    "stateHash": "b68ac30c26df0d3f"
  },
  {
    "type": "diff",
    "seq": 26,
    "prevSeq": 25,
    "events": [
      {
        "seq": 26,
        "timeMs": 1700000004000,
        "correlationId": "c9",
        "type": "ModalOpened",
        "payload": {}
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/modal/status",
        "value": "open"
      }
    ],
    "stateHash": "74dce8ce9945eec6"
  },
  {
    "type": "diff",
    "seq": 27,
    "prevSeq": 26,
    "events": [
      {
        "seq": 27,
        "timeMs": 1700000004000,
        "correlationId": "c10",
        "type": "ActiveNamespaceChanged",
        "payload": {
          "namespace": "eip155"
        }
      }
    ],
    "patch": [
      {
        "op": "replace",
        "path": "/connection/activeFeatures/activity",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeFeatures/names",
        "value": true
      },
      {
        "op": "replace",
        "path": "/connection/activeNamespace",
        "value": "eip155"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/dev.vestibule.wallet",
        "value": "connected"
      },
      {
        "op": "replace",
        "path": "/connection/connectorStatus/solana:Dev Solana Wallet",
        "value": "active"
      }
    ],
    "stateHash": "fe7ba8725f055171"
  }
];
