// Generated from the Rust definitions by `vestibule-codegen`. Do not edit by hand.
import type { ProtocolErrorCode } from "./ProtocolErrorCode";
import type { RefusalCode } from "./RefusalCode";

export const PROTOCOL_VERSION = 2;

export const CLOSE_CODES = {
  GOING_AWAY: 1001,
  PROTOCOL_ERROR: 1002,
  INVALID_PAYLOAD: 1007,
  TOO_BIG: 1009,
  INTERNAL: 1011,
  TRY_AGAIN_LATER: 1013,
  BAD_HELLO: 4000,
  UNAUTHORIZED: 4001,
  UNSUPPORTED_PROTOCOL: 4002,
  TOO_SLOW: 4004,
  HEARTBEAT_TIMEOUT: 4005,
  SESSION_ENDED: 4006,
} as const;

export const EVENT_TYPES = ["SessionStarted","ModalOpened","ModalClosed","Navigated","WentBack","ConnectorsUpdated","ConnectStarted","Connected","ConnectFailed","SyncStarted","Synced","SyncFailed","AccountsChanged","NetworkChanged","Disconnected","RecentWalletUsed","ActiveNamespaceChanged","ToastQueued","ToastShown","ToastDismissed","ToastReshowScheduled","ToastReshowCancelled","ToastsCleared","ToastPauseStarted","ToastPauseEnded","WalletRequestIssued","WalletRequestSettled","WalletRequestCancelled","WalletRequestsDrained","SiwxChallengeIssued","SiwxSignRequested","SiwxDeclined","SiwxContractCheckStarted","SiwxVerificationFailed","SiwxSignedIn","SiwxCancelled","SiwxSignedOut","BalancesRequested","BalancesLoaded","BalancesFailed","BalancesCleared","ActivityRequested","ActivityLoaded","ActivityFailed","ActivityCleared","SendFormChanged","SendRejected","SendSubmitted","SolanaSendStarted","SolanaTransferPrepared","SolanaTransferSigned","SendSucceeded","SendFailed","SendReset","ReceiptRecorded","NetworkSwitchStarted","NetworkSwitchFailed","NetworkSwitchFinished","NetworkSwitchCancelled","HostRequestReceived","HostRequestSettled","HostAnswersForgotten","HostRequestsDrained","TransactionStackPushed","TransactionStackPopped","EmbeddedFrameLoading","EmbeddedFrameAnnounced","EmbeddedFrameReady","EmbeddedFrameFailed","EmbeddedOtpRequested","EmbeddedOtpSent","EmbeddedOtpRejected","EmbeddedSocialStarted","EmbeddedSocialRedirected","EmbeddedLoginFailed","EmbeddedLoginCancelled","EmbeddedLoginVerified","EmbeddedWalletBound","EmbeddedSignedOut","EmbeddedSignOutDone","EmbeddedEmailUpdateStarted","EmbeddedEmailUpdateStepped","EmbeddedEmailUpdated","EmbeddedEmailUpdateFailed","EmbeddedEmailUpdateFinished","ClientErrorReported"] as const;

export const TOASTS = { maxVisible: 3, defaultDurationMs: 4000, reshowDelayMs: 150, swipeMinDistancePx: 20, swipeMinVelocityPxPerMs: 0.11 } as const;

/** The widget's error reports (`ReportClientError`) a session takes in any window; more are refused `rate_limited`. */
export const ERROR_REPORTS = { max: 5, windowMs: 60000 } as const;

/** The numbers the widget draws with (spec sections 2, 5, 9). */
export const DISPLAY = {"modalWidthPx":360,"modalZIndex":999,"viewTransitionMs":150,"headerTransitionMs":120,"heightTransitionMs":150,"toastWidthPx":356,"toastGapPx":14,"addressHeadChars":4,"addressTailChars":6,"maxEmailChars":30} as const;

/** The theme variables a host may set (`themeVariables`); any other name is refused. */
export const THEME_VARIABLES = ["--vst-accent","--vst-color-mix","--vst-color-mix-strength","--vst-font-family","--vst-font-size-master","--vst-border-radius-master","--vst-z-index"] as const;

/** Every `error.code` of a protocol error frame and `/ws/check` refusal. */
export const PROTOCOL_ERROR_CODES = ["bad_hello","unsupported_protocol","project_id_not_configured","invalid_project_id","invalid_app_configuration","invalid_options","unauthorized","malformed_message","unknown_message_type","frame_too_large","rate_limited","too_slow","heartbeat_timeout","busy","shutting_down","internal"] as const satisfies readonly ProtocolErrorCode[];

/** Every `result.error.code` of a refused command. */
export const REFUSAL_CODES = ["not_started","already_started","invalid_options","invalid_input","too_many","unknown_connector","already_connected","not_connected","close_disabled","view_not_navigable","nothing_to_go_back_to","unknown_request","unknown_toast","swipe_below_threshold","feature_disabled","siwx_not_enabled","no_active_caip_address","no_active_caip_network","siwx_pending","no_sign_in_session","no_account_address","send_pending","switch_pending","namespace_not_supported","not_on_view","conflict","storage_unavailable","internal","log_full","rate_limited","busy"] as const satisfies readonly RefusalCode[];

/** The Solana clusters by CAIP-2 id: their Wallet Standard chain and full genesis hash. */
export const SOLANA_CLUSTERS = {"solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z":{"chain":"solana:testnet","genesisHash":"4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY"},"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp":{"chain":"solana:mainnet","genesisHash":"5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"},"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1":{"chain":"solana:devnet","genesisHash":"EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"}} as const;

/** What the session takes of a discovered wallet (`connectors_from`): a report breaking one of these is refused whole. */
export const WALLET_NAME_MAX_BYTES = 64;
export const WALLET_RDNS_MAX_BYTES = 128;
export const WALLET_ICON_MAX_BYTES = 8192;
export const MAX_REPORTED_WALLETS = 32;
/** A wallet's answer the widget sends: JSON of at most this many bytes, else an error; an error's message cut to this many characters. */
export const WALLET_ANSWER_MAX_BYTES = 64512;
export const WALLET_ERROR_MAX_CHARS = 1024;
/** Connector ids the session gives out itself, which no announced wallet may take. */
export const EMBEDDED_CONNECTOR_ID = "auth";
export const INJECTED_CONNECTOR_ID = "injected";
export const SOLANA_CONNECTOR_PREFIX = "solana:";
