//! Mailing one-time codes: a [`Mailer`] trait the service calls, and its lettre implementation
//! (SMTP without TLS, with STARTTLS or with implicit TLS; or .eml files in development).

use std::time::Duration;

use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::{SmtpConfig, SmtpTls};
use crate::otp::OtpCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailPurpose {
    Login,
    /// The code sent to the current address when the visitor changes it.
    UpdatePrimary,
    /// The code sent to the new address.
    UpdateSecondary,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("invalid address: {0}")]
    Address(String),
    #[error("the mail could not be sent: {0}")]
    Transport(String),
}

#[async_trait::async_trait]
pub trait Mailer: Send + Sync + 'static {
    async fn send_code(&self, to: &str, code: &OtpCode, purpose: MailPurpose) -> Result<(), MailError>;
}

pub const SUBJECT: &str = "Your Vestibule sign-in code";

/// The plain-text body: the six digits on a line of their own, and how long they are good for.
pub fn mail_body(code: &OtpCode, purpose: MailPurpose, expires_in: Duration) -> String {
    let minutes = expires_in.as_secs().div_ceil(60).max(1);
    let why = match purpose {
        MailPurpose::Login => "Use this code to sign in:",
        MailPurpose::UpdatePrimary => "Someone asked to change the email of your account. Use this code to confirm it is you:",
        MailPurpose::UpdateSecondary => "Use this code to confirm your new email address:",
    };
    format!(
        "{why}\n\n{}\n\nThe code expires in {minutes} minutes. Never share it: whoever types it signs in as you and controls your wallet. If you did not ask for it, ignore this mail.\n",
        code.reveal()
    )
}

enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Files(AsyncFileTransport<Tokio1Executor>),
}

pub struct LettreMailer {
    transport: Transport,
    from: Mailbox,
    expires_in: Duration,
}

/// The longest a mail may take to go out over SMTP, connection and exchange together.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(15);

impl LettreMailer {
    /// `expires_in` is the OTP lifetime the mail states.
    pub fn new(config: &SmtpConfig, expires_in: Duration) -> Result<Self, MailError> {
        let from: Mailbox = config.from.parse().map_err(|_| MailError::Address(format!("smtp.from {:?}", config.from)))?;
        let transport = if let Some(dir) = &config.file_dir {
            std::fs::create_dir_all(dir).map_err(|error| MailError::Transport(format!("{}: {error}", dir.display())))?;
            Transport::Files(AsyncFileTransport::new(dir))
        } else {
            let builder = match config.tls {
                SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&config.host),
                SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&config.host)
                    .map_err(|error| MailError::Transport(error.to_string()))?,
                SmtpTls::Tls => {
                    AsyncSmtpTransport::<Tokio1Executor>::relay(&config.host).map_err(|error| MailError::Transport(error.to_string()))?
                }
            };
            let mut builder = builder.port(config.port).timeout(Some(SEND_TIMEOUT));
            if let (Some(username), Some(password)) = (&config.username, &config.password) {
                builder = builder.credentials(Credentials::new(username.clone(), password.clone()));
            }
            Transport::Smtp(builder.build())
        };
        Ok(Self { transport, from, expires_in })
    }
}

#[async_trait::async_trait]
impl Mailer for LettreMailer {
    async fn send_code(&self, to: &str, code: &OtpCode, purpose: MailPurpose) -> Result<(), MailError> {
        let to: Mailbox = to.parse().map_err(|_| MailError::Address("recipient".into()))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(SUBJECT)
            .header(ContentType::TEXT_PLAIN)
            .body(mail_body(code, purpose, self.expires_in))
            .map_err(|error| MailError::Transport(error.to_string()))?;
        match &self.transport {
            // lettre's timeout bounds the connection only: a server that accepts and then says
            // nothing would hold the visitor (and the mail budget) until the login's own deadline.
            Transport::Smtp(smtp) => match tokio::time::timeout(SEND_TIMEOUT, smtp.send(message)).await {
                Ok(sent) => sent.map(drop).map_err(|error| MailError::Transport(error.to_string())),
                Err(_) => Err(MailError::Transport(format!("the mail server did not finish within {} s", SEND_TIMEOUT.as_secs()))),
            },
            Transport::Files(files) => files.send(message).await.map(drop).map_err(|error| MailError::Transport(error.to_string())),
        }
    }
}

/// Finds the six-digit code in a received mail (tests and the dev mail sink).
pub fn find_code(mail: &str) -> Option<String> {
    mail.lines().map(str::trim).find(|line| line.len() == 6 && line.bytes().all(|byte| byte.is_ascii_digit())).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;
    use crate::otp::{OtpPurpose, OtpStore};

    fn code() -> OtpCode {
        let entropy = SeededEntropy::new(11);
        OtpStore::new(&entropy, 1, 1, 1).issue(OtpPurpose::Login { email: "a@b.c".into() }, "f", 0, &entropy).unwrap().1
    }

    #[test]
    fn given_a_code_when_the_body_is_written_then_the_digits_stand_on_their_own_line_with_the_expiry() {
        let code = code();
        let body = mail_body(&code, MailPurpose::Login, Duration::from_secs(600));
        assert_eq!(find_code(&body).as_deref(), Some(code.reveal()));
        assert!(body.contains("expires in 10 minutes"), "{body}");
    }

    #[actix_web::test]
    async fn given_a_file_dir_when_a_code_is_sent_then_an_eml_file_carries_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = SmtpConfig {
            host: "unused".into(),
            port: 25,
            from: "Vestibule <login@example.com>".into(),
            tls: SmtpTls::None,
            username: None,
            password: None,
            file_dir: Some(dir.path().to_owned()),
        };
        let mailer = LettreMailer::new(&config, Duration::from_secs(600)).unwrap();
        let code = code();
        mailer.send_code("visitor@example.com", &code, MailPurpose::Login).await.unwrap();
        let file = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
        let mail = std::fs::read_to_string(file).unwrap();
        assert!(mail.contains(SUBJECT) && mail.contains("visitor@example.com"));
        assert_eq!(find_code(&mail).as_deref(), Some(code.reveal()));
    }
}
