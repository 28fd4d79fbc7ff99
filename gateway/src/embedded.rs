//! The embedded wallet in the gateway (docs/embedded-wallet.md): the `[embedded]` service of
//! vestibule-embedded, wired to the sessions both ways. Sessions ask it for mail, social logins and
//! email changes through [`EmbeddedEffects`]; what it learns from the frame (a verified login, a
//! bound wallet, a refused code) reaches the session as a runtime command through
//! [`Registry::deliver`], never through the browser. The frame's chain calls go through this
//! gateway's chain service, and a raw transaction is sent only when it is signed by the frame's
//! own logged-in address.

use std::sync::{Arc, OnceLock};

use alloy::consensus::TxEnvelope;
use alloy::consensus::transaction::SignerRecoverable;
use alloy::eips::eip2718::Decodable2718;
use alloy::primitives::Address;
use vestibule_actors::machines::embedded_wallet::{EmbeddedWalletInfo, LoginMethod, OtpRejection, OtpStep, UpdateStep};
use vestibule_actors::model::options::SocialProvider;
use vestibule_actors::runtime::{ChainFuture, EmbeddedEffects, Registry};
use vestibule_actors::session::Command;
use vestibule_embedded::service::{EmailUpdateStep, EmbeddedError, FrameRpc, Notice, NoticeSink, RpcFailure};
use vestibule_embedded::{EmbeddedService, otp, service};
use vestibule_store::SessionId;

/// Where the notices of the embedded service go: the registry, once it exists (the service is
/// built first, since the registry's effects need it).
#[derive(Default)]
pub struct SessionNotices {
    registry: OnceLock<Registry>,
}

impl SessionNotices {
    pub fn attach(&self, registry: Registry) {
        let _ = self.registry.set(registry);
    }
}

impl NoticeSink for SessionNotices {
    fn notify(&self, session_id: &str, frame_id: &str, notice: Notice) {
        let Some(registry) = self.registry.get().cloned() else { return };
        let Ok(id) = session_id.parse::<SessionId>() else { return };
        let command = notice_command(notice, frame_id);
        let name = command.type_name();
        actix_web::rt::spawn(async move {
            if let Err(error) = registry.deliver(id, command).await {
                tracing::warn!(session = %id, command = name, %error, "an embedded-wallet notice could not be delivered");
            }
        });
    }

    /// A session with a running actor here: a page is attached to it (or was, until
    /// `passivate_after` ago). A frame can only be registered for such a session, so an id that
    /// names no session, or one made up, registers nothing.
    fn session_is_live(&self, session_id: &str) -> bool {
        let (Some(registry), Ok(id)) = (self.registry.get(), session_id.parse::<SessionId>()) else { return false };
        registry.is_running(id)
    }

    /// The project the session was created for (its record in the event log): a frame registered
    /// for it reaches that project's users and wallets only.
    fn session_project(&self, session_id: &str) -> service::ProjectLookup {
        let (Some(registry), Ok(id)) = (self.registry.get().cloned(), session_id.parse::<SessionId>()) else {
            return Box::pin(std::future::ready(None));
        };
        Box::pin(async move { registry.log().session_meta(id).await.ok().flatten().map(|meta| meta.project) })
    }
}

/// The session's runtime command for a notice of the embedded service about frame `frame_id`.
fn notice_command(notice: Notice, frame_id: &str) -> Command {
    let from_frame = Some(frame_id.to_string());
    match notice {
        Notice::OtpRejected { reason, attempts_left } => Command::EmbeddedOtpRejected {
            reason: match reason {
                otp::OtpRejection::Wrong => OtpRejection::Wrong,
                otp::OtpRejection::Expired => OtpRejection::Expired,
                otp::OtpRejection::Attempts => OtpRejection::Attempts,
            },
            attempts_left: Some(attempts_left),
            from_frame,
        },
        Notice::LoginVerified { method, user_id, email, username, wallet } => Command::EmbeddedLoginVerified {
            method: login_method(&method),
            user_id,
            email,
            username,
            wallet: wallet.map(wallet_info),
            from_frame,
        },
        Notice::WalletBound(w) => Command::EmbeddedWalletBound {
            wallet_id: w.wallet_id,
            eip155_address: w.eip155_address,
            solana_address: w.solana_address,
            from_frame,
        },
        Notice::SocialFailed { message } => Command::EmbeddedSocialFailed { message, from_frame },
        Notice::EmailUpdateStep { step } => Command::EmbeddedEmailUpdateStep { step: update_step(step), from_frame },
        Notice::EmailUpdated { new_email } => Command::EmbeddedEmailUpdated { new_email, from_frame },
    }
}

fn wallet_info(w: service::WalletAddresses) -> EmbeddedWalletInfo {
    EmbeddedWalletInfo { wallet_id: w.wallet_id, eip155_address: w.eip155_address, solana_address: w.solana_address }
}

fn update_step(step: EmailUpdateStep) -> UpdateStep {
    match step {
        EmailUpdateStep::Primary => UpdateStep::Primary,
        EmailUpdateStep::Secondary => UpdateStep::Secondary,
    }
}

fn login_method(method: &service::LoginMethod) -> LoginMethod {
    match method {
        service::LoginMethod::Email => LoginMethod::Email,
        service::LoginMethod::Social(provider) => match provider.as_str() {
            "google" => LoginMethod::Google,
            "x" => LoginMethod::X,
            "farcaster" => LoginMethod::Farcaster,
            "discord" => LoginMethod::Discord,
            "apple" => LoginMethod::Apple,
            "github" => LoginMethod::Github,
            _ => LoginMethod::Facebook,
        },
    }
}

fn provider_name(provider: SocialProvider) -> String {
    serde_json::to_value(provider).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// What the visitor reads when a code cannot be sent.
fn otp_send_failure(error: &EmbeddedError) -> String {
    match error {
        EmbeddedError::Cooldown { retry_after_secs } => format!("Please try again after {retry_after_secs} seconds"),
        EmbeddedError::Locked { retry_after_secs } => format!(
            "Too many wrong codes were entered for this email address. Please try again in {}",
            vestibule_embedded::throttle::wait_in_words(*retry_after_secs)
        ),
        EmbeddedError::EmailRateLimited { retry_after_secs } => format!(
            "Too many codes were requested from your network. Please try again in {}",
            vestibule_embedded::throttle::wait_in_words(*retry_after_secs)
        ),
        EmbeddedError::BadEmail => "That is not a valid email address".to_string(),
        EmbeddedError::Mail => "The code could not be sent. Please try again later".to_string(),
        EmbeddedError::EmailTaken => "That email belongs to another account".to_string(),
        _ => "Unable to load email login dependency".to_string(),
    }
}

/// The session side of the embedded service.
pub struct ServiceEmbedded {
    pub service: Arc<EmbeddedService>,
}

impl EmbeddedEffects for ServiceEmbedded {
    fn send_login_otp(&self, session: SessionId, frame_id: String, email: String) -> ChainFuture<Command> {
        let service = self.service.clone();
        Box::pin(async move {
            match service.send_login_otp(&session.to_string(), &frame_id, &email).await {
                Ok(sent) => Command::EmbeddedOtpSent {
                    challenge_id: sent.challenge_id,
                    step: match sent.step {
                        service::OtpStep::VerifyDevice => OtpStep::VerifyDevice,
                        service::OtpStep::VerifyOtp => OtpStep::VerifyOtp,
                    },
                },
                Err(error) => {
                    tracing::info!(%session, code = error.code(), "a login code was not sent");
                    Command::EmbeddedOtpSendFailed { message: otp_send_failure(&error) }
                }
            }
        })
    }

    fn start_social(&self, session: SessionId, frame_id: String, provider: SocialProvider, host_origin: String) -> ChainFuture<Command> {
        let service = self.service.clone();
        Box::pin(async move {
            match service.start_social(&session.to_string(), &frame_id, &provider_name(provider), &host_origin) {
                Ok(url) => Command::EmbeddedSocialRedirect { provider, url },
                Err(error) => {
                    tracing::info!(%session, code = error.code(), "a social login did not start");
                    Command::EmbeddedSocialFailed { message: "Failed to initiate social connection".to_string(), from_frame: None }
                }
            }
        })
    }

    fn start_farcaster(&self, session: SessionId, frame_id: String) -> ChainFuture<Command> {
        let service = self.service.clone();
        Box::pin(async move {
            match service.start_farcaster(&session.to_string(), &frame_id).await {
                Ok(url) => Command::EmbeddedSocialRedirect { provider: SocialProvider::Farcaster, url },
                Err(error) => {
                    tracing::info!(%session, code = error.code(), "a Farcaster login did not start");
                    Command::EmbeddedSocialFailed { message: "Failed to connect to farcaster".to_string(), from_frame: None }
                }
            }
        })
    }

    fn start_email_update(&self, session: SessionId, frame_id: String, new_email: String) -> ChainFuture<Command> {
        let service = self.service.clone();
        Box::pin(async move {
            match service.start_email_update(&session.to_string(), &frame_id, &new_email).await {
                Ok(step) => Command::EmbeddedEmailUpdateStep { step: update_step(step), from_frame: None },
                Err(error) => {
                    tracing::info!(%session, code = error.code(), "an email change did not start");
                    let message = match error {
                        EmbeddedError::NotLoggedIn | EmbeddedError::Unauthorized => "Not connected to email or social".to_string(),
                        other => otp_send_failure(&other),
                    };
                    Command::EmbeddedEmailUpdateFailed { message }
                }
            }
        })
    }

    fn sign_out(&self, session: SessionId, frame_id: String) -> ChainFuture<()> {
        self.service.sign_out(&session.to_string(), &frame_id);
        Box::pin(std::future::ready(()))
    }

    fn forget_session(&self, session: SessionId) {
        self.service.forget_session(&session.to_string());
    }
}

/// The frame's chain calls, through the gateway's chain service (which forwards only the methods
/// its builder was given: the session's host reads and `FRAME_RPC_METHODS`).
pub struct ChainFrameRpc {
    pub chain: vestibule_chain::ChainService,
}

#[async_trait::async_trait]
impl FrameRpc for ChainFrameRpc {
    async fn call(
        &self,
        session_id: &str,
        address: &str,
        chain_id: &str,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, RpcFailure> {
        let network = chain_id.parse().map_err(|_| RpcFailure { code: 4901, message: format!("Unsupported chain: {chain_id}") })?;
        if method == "eth_sendRawTransaction" {
            check_sender(address, &params)?;
        }
        self.chain.request(network, method, params).await.map_err(|error| {
            tracing::debug!(session = session_id, method, %error, "a frame's chain call failed");
            // As the host's provider answers: the node's own code (a revert's 3, a nonce too low),
            // which the frame hands to the page that asked.
            let (code, message) = crate::chain::provider_error(&error);
            RpcFailure { code, message }
        })
    }
}

/// A raw transaction goes out only when the frame's own address signed it.
fn check_sender(address: &str, params: &serde_json::Value) -> Result<(), RpcFailure> {
    let refuse = |message: &str| RpcFailure { code: -32602, message: message.to_string() };
    let raw = params.get(0).and_then(|v| v.as_str()).ok_or_else(|| refuse("eth_sendRawTransaction takes one hex string"))?;
    let bytes = alloy::primitives::hex::decode(raw).map_err(|_| refuse("the raw transaction is not hex"))?;
    let envelope = TxEnvelope::decode_2718(&mut bytes.as_slice()).map_err(|_| refuse("the raw transaction cannot be decoded"))?;
    let signer = envelope.recover_signer().map_err(|_| refuse("the raw transaction's signature is invalid"))?;
    let expected: Address = address.parse().map_err(|_| refuse("the frame's address is invalid"))?;
    if signer != expected {
        return Err(RpcFailure { code: 4100, message: "the transaction is not signed by the logged-in account".to_string() });
    }
    Ok(())
}
