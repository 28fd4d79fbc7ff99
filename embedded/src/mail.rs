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
    /// Mails `code` to `to`; `project` is the id of the project whose page asked for it, which the
    /// mail names (pass it through [`project_name`] before it reaches a header or the text).
    async fn send_code(&self, to: &str, code: &OtpCode, purpose: MailPurpose, project: &str) -> Result<(), MailError>;
}

pub const SUBJECT: &str = "Your Vestibule sign-in code";

/// The longest project name a mail carries (characters).
pub const PROJECT_NAME_MAX: usize = 64;

/// A project id as a mail shows it: no control, format (bidirectional, zero-width) or separator
/// characters (so nothing it holds can start a header or reorder the text), at most
/// [`PROJECT_NAME_MAX`] characters.
pub fn project_name(project: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
    };
    let name: String = project.chars().filter(|&c| !hidden(c)).take(PROJECT_NAME_MAX).collect();
    let name = name.trim();
    if name.is_empty() { "(unnamed project)".to_owned() } else { name.to_owned() }
}

/// The subject: [`SUBJECT`] and the project that asked.
pub fn mail_subject(project: &str) -> String {
    format!("{SUBJECT} for {}", project_name(project))
}

/// The plain-text body: the project that asked for the code, the six digits on a line of their
/// own, and how long they are good for.
pub fn mail_body(code: &OtpCode, purpose: MailPurpose, expires_in: Duration, project: &str) -> String {
    let minutes = expires_in.as_secs().div_ceil(60).max(1);
    let project = project_name(project);
    let why = match purpose {
        MailPurpose::Login => format!("Use this code to sign in to \"{project}\":"),
        MailPurpose::UpdatePrimary => {
            format!("Someone asked to change the email of your account with \"{project}\". Use this code to confirm it is you:")
        }
        MailPurpose::UpdateSecondary => format!("Use this code to confirm your new email address with \"{project}\":"),
    };
    format!(
        "{why}\n\n{}\n\nThis code was asked for through \"{project}\" and opens only the wallet you have there. Type it only on the site you are signing in to, and only if that site is \"{project}\". The code expires in {minutes} minutes. Never share it: whoever types it signs in as you and controls your wallet there. If you did not ask for it, ignore this mail.\n",
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
    async fn send_code(&self, to: &str, code: &OtpCode, purpose: MailPurpose, project: &str) -> Result<(), MailError> {
        let to: Mailbox = to.parse().map_err(|_| MailError::Address("recipient".into()))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail_subject(project))
            .header(ContentType::TEXT_PLAIN)
            .body(mail_body(code, purpose, self.expires_in, project))
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
        let body = mail_body(&code, MailPurpose::Login, Duration::from_secs(600), "alpha");
        assert_eq!(find_code(&body).as_deref(), Some(code.reveal()));
        assert!(body.contains("expires in 10 minutes"), "{body}");
        assert!(body.contains("sign in to \"alpha\""), "{body}");
    }

    #[test]
    fn given_a_project_id_with_line_breaks_or_hidden_characters_when_named_in_a_mail_then_they_are_dropped_and_it_is_bounded() {
        assert_eq!(project_name("alpha\r\nBcc: evil@example.com"), "alphaBcc: evil@example.com");
        assert_eq!(project_name("al\u{202E}ph\u{200B}a\u{2028}"), "alpha");
        assert_eq!(project_name(&"x".repeat(500)).chars().count(), PROJECT_NAME_MAX);
        assert_eq!(project_name("\u{0}\n "), "(unnamed project)");
        assert!(!mail_subject("a\r\nb").contains(['\r', '\n']));
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
        mailer.send_code("visitor@example.com", &code, MailPurpose::Login, "alpha\r\nBcc: evil@example.com").await.unwrap();
        let file = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
        let mail = std::fs::read_to_string(file).unwrap();
        assert!(mail.contains(SUBJECT) && mail.contains("visitor@example.com"));
        // The project is named in the subject and the text, and its id adds no header.
        assert!(mail.contains("Subject: Your Vestibule sign-in code for alphaBcc: evil@example.com"), "{mail}");
        assert!(mail.contains("sign in to \"alphaBcc: evil@example.com\""), "{mail}");
        assert!(!mail.lines().any(|line| line.starts_with("Bcc:")), "{mail}");
        assert_eq!(find_code(&mail).as_deref(), Some(code.reveal()));
    }
}
