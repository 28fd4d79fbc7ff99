// Generated from the Rust definitions by `vestibule codegen`. Do not edit by hand.

export const PROTOCOL_VERSION = 1;

export const CLOSE_CODES = {
  NORMAL: 1000,
  GOING_AWAY: 1001,
  POLICY: 1008,
  TOO_BIG: 1009,
  INTERNAL: 1011,
  BAD_HELLO: 4000,
  UNAUTHORIZED: 4001,
  UNSUPPORTED_PROTOCOL: 4002,
  RATE_LIMITED: 4003,
  TOO_SLOW: 4004,
  HEARTBEAT_TIMEOUT: 4005,
  SESSION_ENDED: 4006,
} as const;

export const EVENT_TYPES = ["SessionStarted","ModalOpened","ModalClosed","Navigated","WentBack","ConnectorsUpdated","ConnectStarted","Connected","ConnectFailed","SyncStarted","Synced","SyncFailed","AccountsChanged","NetworkChanged","Disconnected","RecentWalletUsed","ToastQueued","ToastShown","ToastDismissed","ToastReshowScheduled","ToastReshowCancelled","ToastsCleared","ToastPauseStarted","ToastPauseEnded","WalletRequestIssued","WalletRequestSettled","WalletRequestCancelled","WalletRequestsDrained","SiwxChallengeIssued","SiwxSignRequested","SiwxDeclined","SiwxContractCheckStarted","SiwxVerificationFailed","SiwxSignedIn","SiwxCancelled","SiwxSignedOut","ClientErrorReported"] as const;

export const TOASTS = { maxVisible: 3, defaultDurationMs: 4000, reshowDelayMs: 150, swipeMinDistancePx: 20, swipeMinVelocityPxPerMs: 0.11 } as const;

/** The numbers the widget draws with (spec sections 2, 5, 9). */
export const DISPLAY = {"modalWidthPx":360,"modalZIndex":999,"viewTransitionMs":150,"headerTransitionMs":120,"heightTransitionMs":150,"toastWidthPx":356,"toastGapPx":14,"addressHeadChars":4,"addressTailChars":6,"maxEmailChars":30} as const;

/** The theme variables a host may set (`themeVariables`); any other name is refused. */
export const THEME_VARIABLES = ["--vst-accent","--vst-color-mix","--vst-color-mix-strength","--vst-font-family","--vst-font-size-master","--vst-border-radius-master","--vst-z-index"] as const;
