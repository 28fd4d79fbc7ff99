//! Releasing a share to one frame: HPKE (RFC 9180) base mode, DHKEM(P-256, HKDF-SHA256) /
//! HKDF-SHA256 / AES-128-GCM, to the key pair the frame made for itself, with info
//! "vestibule/share/v1" and aad = the frame id, so a sealed share opens only in that frame.

use hpke::aead::AesGcm128;
use hpke::kdf::HkdfSha256;
use hpke::kem::DhP256HkdfSha256;
use hpke::{Deserializable, Kem as _, OpModeS, Serializable};
use serde::Serialize;

use crate::{Entropy, EntropyRng, b64url, b64url_decode};

pub const SHARE_INFO: &[u8] = b"vestibule/share/v1";

pub type SuiteKem = DhP256HkdfSha256;
pub type SuiteKdf = HkdfSha256;
pub type SuiteAead = AesGcm128;

/// A sealed share on the wire: base64url (no padding) of the encapsulated key and the ciphertext.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Sealed {
    pub enc: String,
    pub ct: String,
}

/// The frame's HPKE public key (65-byte uncompressed P-256 point).
#[derive(Clone)]
pub struct FramePublicKey(<SuiteKem as hpke::Kem>::PublicKey);

impl std::fmt::Debug for FramePublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FramePublicKey({})", b64url(&self.0.to_bytes()))
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("hpkePublicKey must be base64url of a 65-byte uncompressed P-256 point")]
    BadPublicKey,
    #[error("sealing failed")]
    Seal,
}

impl FramePublicKey {
    pub fn from_b64url(text: &str) -> Result<Self, SealError> {
        let bytes = b64url_decode(text).ok_or(SealError::BadPublicKey)?;
        if bytes.len() != 65 || bytes[0] != 0x04 {
            return Err(SealError::BadPublicKey);
        }
        <SuiteKem as hpke::Kem>::PublicKey::from_bytes(&bytes).map(Self).map_err(|_| SealError::BadPublicKey)
    }
}

/// Seals `plaintext` to the frame `frame_id` holding the private half of `public_key`.
pub fn seal_to_frame(public_key: &FramePublicKey, frame_id: &str, plaintext: &[u8], entropy: &dyn Entropy) -> Result<Sealed, SealError> {
    let (enc, ct) = hpke::single_shot_seal::<SuiteAead, SuiteKdf, SuiteKem, _>(
        &OpModeS::Base,
        &public_key.0,
        SHARE_INFO,
        plaintext,
        frame_id.as_bytes(),
        &mut EntropyRng(entropy),
    )
    .map_err(|_| SealError::Seal)?;
    Ok(Sealed { enc: b64url(&enc.to_bytes()), ct: b64url(&ct) })
}

/// A frame-side key pair, for tests of the whole path (the real frame uses WebCrypto).
pub fn test_key_pair(entropy: &dyn Entropy) -> (<SuiteKem as hpke::Kem>::PrivateKey, String) {
    let (private, public) = SuiteKem::gen_keypair(&mut EntropyRng(entropy));
    (private, b64url(&public.to_bytes()))
}

/// Opens a sealed share as the frame would (tests and tooling).
pub fn open_as_frame(private: &<SuiteKem as hpke::Kem>::PrivateKey, frame_id: &str, sealed: &Sealed) -> Option<Vec<u8>> {
    let enc = <SuiteKem as hpke::Kem>::EncappedKey::from_bytes(&b64url_decode(&sealed.enc)?).ok()?;
    let ct = b64url_decode(&sealed.ct)?;
    hpke::single_shot_open::<SuiteAead, SuiteKdf, SuiteKem>(&hpke::OpModeR::Base, private, &enc, SHARE_INFO, &ct, frame_id.as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;

    #[test]
    fn given_a_frame_key_when_a_share_is_sealed_then_only_that_frame_id_opens_it() {
        let entropy = SeededEntropy::new(3);
        let (private, public) = test_key_pair(&entropy);
        let public = FramePublicKey::from_b64url(&public).unwrap();
        let share = [7u8; 33];
        let sealed = seal_to_frame(&public, "frame-a", &share, &entropy).unwrap();
        assert!(!sealed.enc.contains('=') && !sealed.ct.contains('='));
        assert_eq!(b64url_decode(&sealed.enc).unwrap().len(), 65);
        assert_eq!(open_as_frame(&private, "frame-a", &sealed).unwrap(), share);
        assert_eq!(open_as_frame(&private, "frame-b", &sealed), None);
    }

    #[test]
    fn given_malformed_public_keys_when_parsed_then_they_are_refused() {
        assert_eq!(FramePublicKey::from_b64url("not base64!").unwrap_err(), SealError::BadPublicKey);
        assert_eq!(FramePublicKey::from_b64url(&b64url(&[4u8; 65])).unwrap_err(), SealError::BadPublicKey);
        assert_eq!(FramePublicKey::from_b64url(&b64url(&[2u8; 33])).unwrap_err(), SealError::BadPublicKey);
    }

    /// RFC 9180 appendix A.3.1 (DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, mode_base):
    /// the receiver keys derive from ikmR as the RFC says and its first ciphertext opens, so the
    /// suite here is the one @hpke/core implements in the browser.
    #[test]
    fn given_the_rfc_9180_vector_for_the_suite_when_opened_then_it_matches() {
        let ikm_r = hex::decode("668b37171f1072f3cf12ea8a236a45df23fc13b82af3609ad1e354f6ef817550").unwrap();
        let (sk_r, pk_r) = SuiteKem::derive_keypair(&ikm_r);
        assert_eq!(hex::encode(sk_r.to_bytes()), "f3ce7fdae57e1a310d87f1ebbde6f328be0a99cdbcadf4d6589cf29de4b8ffd2");
        assert_eq!(
            hex::encode(pk_r.to_bytes()),
            "04fe8c19ce0905191ebc298a9245792531f26f0cece2460639e8bc39cb7f706a826a779b4cf969b8a0e539c7f62fb3d30ad6aa8f80e30f1d128aafd68a2ce72ea0"
        );
        let enc = hex::decode("04a92719c6195d5085104f469a8b9814d5838ff72b60501e2c4466e5e67b325ac98536d7b61a1af4b78e5b7f951c0900be863c403ce65c9bfcb9382657222d18c4").unwrap();
        let enc = <SuiteKem as hpke::Kem>::EncappedKey::from_bytes(&enc).unwrap();
        let info = hex::decode("4f6465206f6e2061204772656369616e2055726e").unwrap();
        let aad = hex::decode("436f756e742d30").unwrap();
        let ct = hex::decode("5ad590bb8baa577f8619db35a36311226a896e7342a6d836d8b7bcd2f20b6c7f9076ac232e3ab2523f39513434").unwrap();
        let pt = hpke::single_shot_open::<SuiteAead, SuiteKdf, SuiteKem>(&hpke::OpModeR::Base, &sk_r, &enc, &info, &ct, &aad).unwrap();
        assert_eq!(hex::encode(pt), "4265617574792069732074727574682c20747275746820626561757479");
    }
}
