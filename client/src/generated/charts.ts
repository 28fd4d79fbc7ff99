// Generated from the Rust definitions by `vestibule-codegen`. Do not edit by hand.
import type { Statechart } from "./Statechart";

export const charts: Statechart[] = [
  {
    "id": "modal",
    "description": "Whether the modal is shown.",
    "regions": [
      {
        "id": "modal",
        "statePath": "/modal/status",
        "initial": "closed",
        "states": [
          "closed",
          "open"
        ],
        "transitions": [
          {
            "from": "closed",
            "event": "ModalOpened",
            "to": "open"
          },
          {
            "from": "open",
            "event": "ModalClosed",
            "to": "closed"
          }
        ]
      }
    ]
  },
  {
    "id": "router",
    "description": "Which view the modal shows: the top of a stack of views.",
    "regions": [
      {
        "id": "router",
        "statePath": "/router/current",
        "initial": "Connect",
        "states": [
          "Connect",
          "ConnectingWallet",
          "AllWallets",
          "Networks",
          "Account",
          "SwitchNetwork",
          "SwitchActiveChain",
          "SIWXSignMessage",
          "ApproveTransaction",
          "UpdateEmailWallet",
          "EmailVerifyDevice",
          "EmailVerifyOtp",
          "ConnectingSocial",
          "ConnectingFarcaster",
          "UpdateEmailPrimaryOtp",
          "UpdateEmailSecondaryOtp",
          "Swap",
          "Send",
          "Receive"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "Navigated",
            "to": "Connect",
            "guard": {
              "path": "/view",
              "equals": "Connect"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "Connect",
            "guard": {
              "path": "/to",
              "equals": "Connect"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "ConnectingWallet",
            "guard": {
              "path": "/view",
              "equals": "ConnectingWallet"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "ConnectingWallet",
            "guard": {
              "path": "/to",
              "equals": "ConnectingWallet"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "AllWallets",
            "guard": {
              "path": "/view",
              "equals": "AllWallets"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "AllWallets",
            "guard": {
              "path": "/to",
              "equals": "AllWallets"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "Networks",
            "guard": {
              "path": "/view",
              "equals": "Networks"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "Networks",
            "guard": {
              "path": "/to",
              "equals": "Networks"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "Account",
            "guard": {
              "path": "/view",
              "equals": "Account"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "Account",
            "guard": {
              "path": "/to",
              "equals": "Account"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "SwitchNetwork",
            "guard": {
              "path": "/view",
              "equals": "SwitchNetwork"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "SwitchNetwork",
            "guard": {
              "path": "/to",
              "equals": "SwitchNetwork"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "SwitchActiveChain",
            "guard": {
              "path": "/view",
              "equals": "SwitchActiveChain"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "SwitchActiveChain",
            "guard": {
              "path": "/to",
              "equals": "SwitchActiveChain"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "SIWXSignMessage",
            "guard": {
              "path": "/view",
              "equals": "SIWXSignMessage"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "SIWXSignMessage",
            "guard": {
              "path": "/to",
              "equals": "SIWXSignMessage"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "ApproveTransaction",
            "guard": {
              "path": "/view",
              "equals": "ApproveTransaction"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "ApproveTransaction",
            "guard": {
              "path": "/to",
              "equals": "ApproveTransaction"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "UpdateEmailWallet",
            "guard": {
              "path": "/view",
              "equals": "UpdateEmailWallet"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "UpdateEmailWallet",
            "guard": {
              "path": "/to",
              "equals": "UpdateEmailWallet"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "EmailVerifyDevice",
            "guard": {
              "path": "/view",
              "equals": "EmailVerifyDevice"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "EmailVerifyDevice",
            "guard": {
              "path": "/to",
              "equals": "EmailVerifyDevice"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "EmailVerifyOtp",
            "guard": {
              "path": "/view",
              "equals": "EmailVerifyOtp"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "EmailVerifyOtp",
            "guard": {
              "path": "/to",
              "equals": "EmailVerifyOtp"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "ConnectingSocial",
            "guard": {
              "path": "/view",
              "equals": "ConnectingSocial"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "ConnectingSocial",
            "guard": {
              "path": "/to",
              "equals": "ConnectingSocial"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "ConnectingFarcaster",
            "guard": {
              "path": "/view",
              "equals": "ConnectingFarcaster"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "ConnectingFarcaster",
            "guard": {
              "path": "/to",
              "equals": "ConnectingFarcaster"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "UpdateEmailPrimaryOtp",
            "guard": {
              "path": "/view",
              "equals": "UpdateEmailPrimaryOtp"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "UpdateEmailPrimaryOtp",
            "guard": {
              "path": "/to",
              "equals": "UpdateEmailPrimaryOtp"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "UpdateEmailSecondaryOtp",
            "guard": {
              "path": "/view",
              "equals": "UpdateEmailSecondaryOtp"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "UpdateEmailSecondaryOtp",
            "guard": {
              "path": "/to",
              "equals": "UpdateEmailSecondaryOtp"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "Swap",
            "guard": {
              "path": "/view",
              "equals": "Swap"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "Swap",
            "guard": {
              "path": "/to",
              "equals": "Swap"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "Send",
            "guard": {
              "path": "/view",
              "equals": "Send"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "Send",
            "guard": {
              "path": "/to",
              "equals": "Send"
            }
          },
          {
            "from": "*",
            "event": "Navigated",
            "to": "Receive",
            "guard": {
              "path": "/view",
              "equals": "Receive"
            }
          },
          {
            "from": "*",
            "event": "WentBack",
            "to": "Receive",
            "guard": {
              "path": "/to",
              "equals": "Receive"
            }
          }
        ]
      }
    ]
  },
  {
    "id": "connection",
    "description": "Per chain namespace: disconnected, connecting (connect or sync) or connected.",
    "regions": [
      {
        "id": "eip155",
        "statePath": "/connection/namespaces/eip155/status",
        "initial": "disconnected",
        "states": [
          "disconnected",
          "connecting",
          "connected"
        ],
        "transitions": [
          {
            "from": "disconnected",
            "event": "ConnectStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          },
          {
            "from": "connecting",
            "event": "Connected",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          },
          {
            "from": "connecting",
            "event": "ConnectFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          },
          {
            "from": "connected",
            "event": "SyncStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          },
          {
            "from": "connecting",
            "event": "Synced",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          },
          {
            "from": "connecting",
            "event": "SyncFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          },
          {
            "from": "*",
            "event": "Disconnected",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "eip155"
            }
          }
        ]
      },
      {
        "id": "solana",
        "statePath": "/connection/namespaces/solana/status",
        "initial": "disconnected",
        "states": [
          "disconnected",
          "connecting",
          "connected"
        ],
        "transitions": [
          {
            "from": "disconnected",
            "event": "ConnectStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          },
          {
            "from": "connecting",
            "event": "Connected",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          },
          {
            "from": "connecting",
            "event": "ConnectFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          },
          {
            "from": "connected",
            "event": "SyncStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          },
          {
            "from": "connecting",
            "event": "Synced",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          },
          {
            "from": "connecting",
            "event": "SyncFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          },
          {
            "from": "*",
            "event": "Disconnected",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "solana"
            }
          }
        ]
      },
      {
        "id": "polkadot",
        "statePath": "/connection/namespaces/polkadot/status",
        "initial": "disconnected",
        "states": [
          "disconnected",
          "connecting",
          "connected"
        ],
        "transitions": [
          {
            "from": "disconnected",
            "event": "ConnectStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          },
          {
            "from": "connecting",
            "event": "Connected",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          },
          {
            "from": "connecting",
            "event": "ConnectFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          },
          {
            "from": "connected",
            "event": "SyncStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          },
          {
            "from": "connecting",
            "event": "Synced",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          },
          {
            "from": "connecting",
            "event": "SyncFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          },
          {
            "from": "*",
            "event": "Disconnected",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "polkadot"
            }
          }
        ]
      },
      {
        "id": "bip122",
        "statePath": "/connection/namespaces/bip122/status",
        "initial": "disconnected",
        "states": [
          "disconnected",
          "connecting",
          "connected"
        ],
        "transitions": [
          {
            "from": "disconnected",
            "event": "ConnectStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          },
          {
            "from": "connecting",
            "event": "Connected",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          },
          {
            "from": "connecting",
            "event": "ConnectFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          },
          {
            "from": "connected",
            "event": "SyncStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          },
          {
            "from": "connecting",
            "event": "Synced",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          },
          {
            "from": "connecting",
            "event": "SyncFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          },
          {
            "from": "*",
            "event": "Disconnected",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "bip122"
            }
          }
        ]
      },
      {
        "id": "cosmos",
        "statePath": "/connection/namespaces/cosmos/status",
        "initial": "disconnected",
        "states": [
          "disconnected",
          "connecting",
          "connected"
        ],
        "transitions": [
          {
            "from": "disconnected",
            "event": "ConnectStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          },
          {
            "from": "connecting",
            "event": "Connected",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          },
          {
            "from": "connecting",
            "event": "ConnectFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          },
          {
            "from": "connected",
            "event": "SyncStarted",
            "to": "connecting",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          },
          {
            "from": "connecting",
            "event": "Synced",
            "to": "connected",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          },
          {
            "from": "connecting",
            "event": "SyncFailed",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          },
          {
            "from": "*",
            "event": "Disconnected",
            "to": "disconnected",
            "guard": {
              "path": "/namespace",
              "equals": "cosmos"
            }
          }
        ]
      }
    ]
  },
  {
    "id": "toasts",
    "description": "The toast queue: whether any toast is queued, and whether timers run.",
    "regions": [
      {
        "id": "queue",
        "statePath": "/toasts/status",
        "initial": "empty",
        "states": [
          "empty",
          "active"
        ],
        "transitions": [
          {
            "from": "empty",
            "event": "ToastQueued",
            "to": "active"
          },
          {
            "from": "active",
            "event": "ToastsCleared",
            "to": "empty"
          }
        ]
      },
      {
        "id": "timers",
        "statePath": "/toasts/timers",
        "initial": "running",
        "states": [
          "running",
          "paused"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "ToastPauseStarted",
            "to": "paused"
          },
          {
            "from": "paused",
            "event": "ToastPauseEnded",
            "to": "running",
            "guard": {
              "path": "/resumed",
              "equals": true
            }
          }
        ]
      }
    ]
  },
  {
    "id": "requests",
    "description": "Browser effects the session is waiting for.",
    "regions": [
      {
        "id": "requests",
        "statePath": "/requests/status",
        "initial": "idle",
        "states": [
          "idle",
          "pending"
        ],
        "transitions": [
          {
            "from": "idle",
            "event": "WalletRequestIssued",
            "to": "pending"
          },
          {
            "from": "pending",
            "event": "WalletRequestsDrained",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "siwx",
    "description": "Sign-in with the wallet: message, signature, verification.",
    "regions": [
      {
        "id": "siwx",
        "statePath": "/siwx/status",
        "initial": "idle",
        "states": [
          "idle",
          "ready",
          "signing",
          "verifying"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "SiwxChallengeIssued",
            "to": "ready"
          },
          {
            "from": "ready",
            "event": "SiwxSignRequested",
            "to": "signing"
          },
          {
            "from": "signing",
            "event": "SiwxDeclined",
            "to": "ready"
          },
          {
            "from": "signing",
            "event": "SiwxContractCheckStarted",
            "to": "verifying"
          },
          {
            "from": "signing",
            "event": "SiwxSignedIn",
            "to": "idle"
          },
          {
            "from": "verifying",
            "event": "SiwxSignedIn",
            "to": "idle"
          },
          {
            "from": "signing",
            "event": "SiwxVerificationFailed",
            "to": "idle"
          },
          {
            "from": "verifying",
            "event": "SiwxVerificationFailed",
            "to": "idle"
          },
          {
            "from": "ready",
            "event": "SiwxCancelled",
            "to": "idle"
          },
          {
            "from": "signing",
            "event": "SiwxCancelled",
            "to": "idle"
          },
          {
            "from": "verifying",
            "event": "SiwxCancelled",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "balances",
    "description": "The active account's balances: fetched by the chain service, kept 30 s, a failed fetch blocks a retry 30 s.",
    "regions": [
      {
        "id": "balances",
        "statePath": "/balances/status",
        "initial": "idle",
        "states": [
          "idle",
          "loading",
          "loaded",
          "failed"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "BalancesRequested",
            "to": "loading"
          },
          {
            "from": "loading",
            "event": "BalancesLoaded",
            "to": "loaded"
          },
          {
            "from": "loading",
            "event": "BalancesFailed",
            "to": "failed"
          },
          {
            "from": "*",
            "event": "BalancesCleared",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "activity",
    "description": "The Activity tab's transaction list: loading, then loaded (empty or filled, with a next cursor) or failed (emptied).",
    "regions": [
      {
        "id": "activity",
        "statePath": "/activity/status",
        "initial": "idle",
        "states": [
          "idle",
          "loading",
          "loaded",
          "failed"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "ActivityRequested",
            "to": "loading"
          },
          {
            "from": "loading",
            "event": "ActivityLoaded",
            "to": "loaded"
          },
          {
            "from": "loading",
            "event": "ActivityFailed",
            "to": "failed"
          },
          {
            "from": "*",
            "event": "ActivityCleared",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "send",
    "description": "The Send view: idle while the form is filled in, sending while the wallet is asked.",
    "regions": [
      {
        "id": "send",
        "statePath": "/send/status",
        "initial": "idle",
        "states": [
          "idle",
          "sending"
        ],
        "transitions": [
          {
            "from": "idle",
            "event": "SendSubmitted",
            "to": "sending"
          },
          {
            "from": "idle",
            "event": "SolanaSendStarted",
            "to": "sending"
          },
          {
            "from": "sending",
            "event": "SendSucceeded",
            "to": "idle"
          },
          {
            "from": "sending",
            "event": "SendFailed",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "networkSwitch",
    "description": "Asking the connected wallet to switch chains (and to add one it does not know, on 4902).",
    "regions": [
      {
        "id": "networkSwitch",
        "statePath": "/networkSwitch/status",
        "initial": "idle",
        "states": [
          "idle",
          "switching",
          "adding",
          "failed"
        ],
        "transitions": [
          {
            "from": "idle",
            "event": "NetworkSwitchStarted",
            "to": "switching",
            "guard": {
              "path": "/step",
              "equals": "switch"
            }
          },
          {
            "from": "failed",
            "event": "NetworkSwitchStarted",
            "to": "switching",
            "guard": {
              "path": "/step",
              "equals": "switch"
            }
          },
          {
            "from": "switching",
            "event": "NetworkSwitchStarted",
            "to": "adding",
            "guard": {
              "path": "/step",
              "equals": "add"
            }
          },
          {
            "from": "adding",
            "event": "NetworkSwitchStarted",
            "to": "switching",
            "guard": {
              "path": "/step",
              "equals": "switch"
            }
          },
          {
            "from": "switching",
            "event": "NetworkSwitchFinished",
            "to": "idle"
          },
          {
            "from": "adding",
            "event": "NetworkSwitchFinished",
            "to": "idle"
          },
          {
            "from": "failed",
            "event": "NetworkSwitchFinished",
            "to": "idle"
          },
          {
            "from": "switching",
            "event": "NetworkSwitchFailed",
            "to": "failed"
          },
          {
            "from": "adding",
            "event": "NetworkSwitchFailed",
            "to": "failed"
          },
          {
            "from": "*",
            "event": "NetworkSwitchCancelled",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "hostRequests",
    "description": "The host app's EIP-1193 requests the session is answering.",
    "regions": [
      {
        "id": "hostRequests",
        "statePath": "/hostRequests/status",
        "initial": "idle",
        "states": [
          "idle",
          "pending"
        ],
        "transitions": [
          {
            "from": "idle",
            "event": "HostRequestReceived",
            "to": "pending"
          },
          {
            "from": "pending",
            "event": "HostRequestsDrained",
            "to": "idle"
          }
        ]
      }
    ]
  },
  {
    "id": "embedded",
    "description": "The embedded wallet: the secure frame's load, email OTP and social login, and the change of the user's email.",
    "regions": [
      {
        "id": "frame",
        "statePath": "/embedded/frame/status",
        "initial": "idle",
        "states": [
          "idle",
          "loading",
          "settling",
          "ready",
          "failed"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "EmbeddedFrameLoading",
            "to": "loading"
          },
          {
            "from": "loading",
            "event": "EmbeddedFrameAnnounced",
            "to": "settling"
          },
          {
            "from": "settling",
            "event": "EmbeddedFrameReady",
            "to": "ready"
          },
          {
            "from": "loading",
            "event": "EmbeddedFrameFailed",
            "to": "failed"
          }
        ]
      },
      {
        "id": "login",
        "statePath": "/embedded/login/status",
        "initial": "idle",
        "states": [
          "idle",
          "sendingOtp",
          "awaitingOtp",
          "socialStarting",
          "socialPopup",
          "creatingWallet",
          "connected",
          "failed"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "EmbeddedOtpRequested",
            "to": "sendingOtp"
          },
          {
            "from": "sendingOtp",
            "event": "EmbeddedOtpSent",
            "to": "awaitingOtp"
          },
          {
            "from": "awaitingOtp",
            "event": "EmbeddedOtpRejected",
            "to": "awaitingOtp",
            "guard": {
              "path": "/reason",
              "equals": "wrong"
            }
          },
          {
            "from": "awaitingOtp",
            "event": "EmbeddedOtpRejected",
            "to": "failed",
            "guard": {
              "path": "/reason",
              "equals": "expired"
            }
          },
          {
            "from": "awaitingOtp",
            "event": "EmbeddedOtpRejected",
            "to": "failed",
            "guard": {
              "path": "/reason",
              "equals": "attempts"
            }
          },
          {
            "from": "*",
            "event": "EmbeddedSocialStarted",
            "to": "socialStarting"
          },
          {
            "from": "socialStarting",
            "event": "EmbeddedSocialRedirected",
            "to": "socialPopup"
          },
          {
            "from": "*",
            "event": "EmbeddedLoginFailed",
            "to": "failed"
          },
          {
            "from": "*",
            "event": "EmbeddedLoginCancelled",
            "to": "idle"
          },
          {
            "from": "*",
            "event": "EmbeddedLoginVerified",
            "to": "connected",
            "guard": {
              "path": "/deadlineMs",
              "equals": null
            }
          },
          {
            "from": "*",
            "event": "EmbeddedLoginVerified",
            "to": "creatingWallet"
          },
          {
            "from": "creatingWallet",
            "event": "EmbeddedWalletBound",
            "to": "connected"
          },
          {
            "from": "*",
            "event": "EmbeddedSignedOut",
            "to": "idle"
          }
        ]
      },
      {
        "id": "update",
        "statePath": "/embedded/update/status",
        "initial": "idle",
        "states": [
          "idle",
          "sending",
          "primaryOtp",
          "secondaryOtp",
          "polling",
          "failed"
        ],
        "transitions": [
          {
            "from": "*",
            "event": "EmbeddedEmailUpdateStarted",
            "to": "sending"
          },
          {
            "from": "*",
            "event": "EmbeddedEmailUpdateStepped",
            "to": "primaryOtp",
            "guard": {
              "path": "/step",
              "equals": "primary"
            }
          },
          {
            "from": "*",
            "event": "EmbeddedEmailUpdateStepped",
            "to": "secondaryOtp",
            "guard": {
              "path": "/step",
              "equals": "secondary"
            }
          },
          {
            "from": "*",
            "event": "EmbeddedEmailUpdated",
            "to": "polling"
          },
          {
            "from": "*",
            "event": "EmbeddedEmailUpdateFailed",
            "to": "failed"
          },
          {
            "from": "*",
            "event": "EmbeddedEmailUpdateFinished",
            "to": "idle"
          },
          {
            "from": "*",
            "event": "EmbeddedSignedOut",
            "to": "idle"
          }
        ]
      }
    ]
  }
];
