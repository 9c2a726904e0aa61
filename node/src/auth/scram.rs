//! SCRAM (RFC 5802, RFC 7677) as MongoDB uses it: the stored credentials of
//! a user (`salt`, `storedKey`, `serverKey`, `iterationCount`), the server's
//! two-message conversation that proves a client knows the password, and the
//! client's side of it ([`ClientConversation`], which members use to
//! authenticate to each other).
//!
//! MongoDB's twists: SCRAM-SHA-1 hashes the hex MD5 digest of
//! `user:mongo:password` instead of the password, SCRAM-SHA-256 the SASLprep'd
//! password; salts are the hash length minus four bytes; no channel binding.
//! The primitives come from the RustCrypto crates (`hmac`, `sha1`, `sha2`,
//! `pbkdf2`, `md-5`) and the comparison that decides is constant-time
//! (`subtle`). This module knows nothing of users' storage or of commands:
//! it turns bytes into bytes or a [`ScramError`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, KeyInit, Mac};
use md5::{Digest, Md5};
use rand::RngCore;
use sha1::Sha1;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// A SCRAM variant MongoDB supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    Sha1,
    Sha256,
}

impl Mechanism {
    /// Both, in the order mongod lists them.
    pub const ALL: [Mechanism; 2] = [Mechanism::Sha1, Mechanism::Sha256];

    /// The SASL name, also the key under a user's `credentials`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Sha1 => "SCRAM-SHA-1",
            Mechanism::Sha256 => "SCRAM-SHA-256",
        }
    }

    /// The mechanism of a SASL name (case-sensitive, as mongod).
    pub fn parse(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// mongod's default `scramIterationCount` / `scramSHA256IterationCount`.
    pub fn default_iterations(self) -> u32 {
        match self {
            Mechanism::Sha1 => 10_000,
            Mechanism::Sha256 => 15_000,
        }
    }

    fn hash_len(self) -> usize {
        match self {
            Mechanism::Sha1 => 20,
            Mechanism::Sha256 => 32,
        }
    }

    /// mongod salts with the hash length less four bytes.
    fn salt_len(self) -> usize {
        self.hash_len() - 4
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha1 => Sha1::digest(data).to_vec(),
            Mechanism::Sha256 => Sha256::digest(data).to_vec(),
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        fn run<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
            // HMAC takes keys of any length, so this cannot fail.
            let mut mac = <M as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            Mechanism::Sha1 => run::<Hmac<Sha1>>(key, data),
            Mechanism::Sha256 => run::<Hmac<Sha256>>(key, data),
        }
    }

    /// RFC 5802's `Hi`: PBKDF2 with HMAC of this hash.
    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0u8; self.hash_len()];
        match self {
            Mechanism::Sha1 => pbkdf2::pbkdf2_hmac::<Sha1>(password, salt, iterations, &mut out),
            Mechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out)
            }
        }
        out
    }
}

/// Why a SCRAM step failed. Clients only ever learn "Authentication failed."
/// (mongod hides the reason); the variant goes to the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    #[error("channel binding is not supported")]
    ChannelBinding,
    #[error("the password cannot be SASLprep'd")]
    Saslprep,
    #[error("the nonce does not continue the conversation's")]
    Nonce,
    #[error("the client proof is wrong")]
    Proof,
    #[error("stored credentials are malformed")]
    Credentials,
}

/// The password as the mechanism salts it: MongoDB's MD5 digest for
/// SCRAM-SHA-1, the SASLprep'd password for SCRAM-SHA-256.
pub fn prepared_password(
    mech: Mechanism,
    user: &str,
    password: &str,
) -> Result<String, ScramError> {
    match mech {
        Mechanism::Sha1 => Ok(mongo_digest(user, password)),
        Mechanism::Sha256 => stringprep::saslprep(password)
            .map(|p| p.into_owned())
            .map_err(|_| ScramError::Saslprep),
    }
}

/// `hex(md5("user:mongo:password"))`, MongoDB's legacy password digest.
pub fn mongo_digest(user: &str, password: &str) -> String {
    Md5::digest(format!("{user}:mongo:{password}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the server keeps of a password for one mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub iteration_count: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl Credentials {
    /// Credentials for an already prepared password (see [`prepared_password`]).
    pub fn derive(mech: Mechanism, prepared: &str, salt: Vec<u8>, iterations: u32) -> Credentials {
        let salted = mech.salted_password(prepared.as_bytes(), &salt, iterations);
        let client_key = mech.hmac(&salted, b"Client Key");
        Credentials {
            iteration_count: iterations,
            stored_key: mech.hash(&client_key),
            server_key: mech.hmac(&salted, b"Server Key"),
            salt,
        }
    }

    /// Fresh credentials with a random salt and mongod's iteration count.
    pub fn generate(mech: Mechanism, prepared: &str) -> Credentials {
        let mut salt = vec![0u8; mech.salt_len()];
        rand::rng().fill_bytes(&mut salt);
        Credentials::derive(mech, prepared, salt, mech.default_iterations())
    }

    /// `{iterationCount, salt, storedKey, serverKey}` with base64 strings, as
    /// mongod stores them.
    pub fn to_document(&self) -> bson::Document {
        bson::doc! {
            "iterationCount": self.iteration_count as i32,
            "salt": B64.encode(&self.salt),
            "storedKey": B64.encode(&self.stored_key),
            "serverKey": B64.encode(&self.server_key),
        }
    }

    /// Reads what [`Credentials::to_document`] wrote.
    pub fn from_document(d: &bson::RawDocument) -> Result<Credentials, ScramError> {
        let text = |k: &str| -> Result<Vec<u8>, ScramError> {
            let s = d.get_str(k).map_err(|_| ScramError::Credentials)?;
            B64.decode(s).map_err(|_| ScramError::Credentials)
        };
        let iteration_count = match d.get("iterationCount") {
            Ok(Some(v)) => crate::args::as_i64(v)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or(ScramError::Credentials)?,
            _ => return Err(ScramError::Credentials),
        };
        Ok(Credentials {
            iteration_count,
            salt: text("salt")?,
            stored_key: text("storedKey")?,
            server_key: text("serverKey")?,
        })
    }
}

/// The client's first message, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The user name, unescaped (`=2C` → `,`, `=3D` → `=`).
    pub user: String,
    client_nonce: String,
    /// `n=…,r=…`: what the proof signs.
    bare: String,
    /// `n,,` or `y,,`: echoed base64'd in the final message.
    gs2_header: String,
}

/// Parses `gs2-header client-first-message-bare`.
pub fn parse_client_first(payload: &[u8]) -> Result<ClientFirst, ScramError> {
    let text = std::str::from_utf8(payload).map_err(|_| ScramError::Malformed("not UTF-8"))?;
    let mut parts = text.splitn(3, ',');
    let binding = parts.next().unwrap_or_default();
    let authzid = parts.next().ok_or(ScramError::Malformed("no GS2 header"))?;
    let bare = parts.next().ok_or(ScramError::Malformed("no GS2 header"))?;
    match binding {
        "n" | "y" => {}
        b if b.starts_with("p=") => return Err(ScramError::ChannelBinding),
        _ => return Err(ScramError::Malformed("bad channel binding flag")),
    }
    let mut user = None;
    let mut nonce = None;
    for attr in bare.split(',') {
        if let Some(v) = attr.strip_prefix("n=") {
            user = Some(unescape_name(v)?);
        } else if let Some(v) = attr.strip_prefix("r=") {
            nonce = Some(v.to_owned());
        } else if attr.starts_with("m=") {
            return Err(ScramError::Malformed(
                "mandatory extensions are not supported",
            ));
        }
    }
    let user = user
        .filter(|u| !u.is_empty())
        .ok_or(ScramError::Malformed("no user name"))?;
    let client_nonce = nonce
        .filter(|n| !n.is_empty())
        .ok_or(ScramError::Malformed("no nonce"))?;
    // An authorization identity other than the user itself is impersonation.
    if let Some(authzid) = authzid.strip_prefix("a=")
        && unescape_name(authzid)? != user
    {
        return Err(ScramError::Malformed(
            "authorization identity differs from the user",
        ));
    }
    Ok(ClientFirst {
        user,
        client_nonce,
        gs2_header: format!("{binding},{authzid},"),
        bare: bare.to_owned(),
    })
}

fn unescape_name(v: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Malformed("bad escape in the user name")),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A conversation after the server's first message: everything the final
/// step needs.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub mech: Mechanism,
    credentials: Credentials,
    first: ClientFirst,
    server_first: String,
    nonce: String,
}

impl Conversation {
    /// Answers the client's first message for a user holding `credentials`;
    /// returns the conversation and the server-first message.
    pub fn start(mech: Mechanism, first: ClientFirst, credentials: Credentials) -> (Self, Vec<u8>) {
        let mut random = [0u8; 24];
        rand::rng().fill_bytes(&mut random);
        Self::start_with_nonce(mech, first, credentials, &B64.encode(random))
    }

    fn start_with_nonce(
        mech: Mechanism,
        first: ClientFirst,
        credentials: Credentials,
        server_nonce: &str,
    ) -> (Self, Vec<u8>) {
        let nonce = format!("{}{server_nonce}", first.client_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credentials.salt),
            credentials.iteration_count
        );
        let reply = server_first.clone().into_bytes();
        (
            Conversation {
                mech,
                credentials,
                first,
                server_first,
                nonce,
            },
            reply,
        )
    }

    /// The user the conversation authenticates.
    pub fn user(&self) -> &str {
        &self.first.user
    }

    /// Checks the client's final message (`c=…,r=…,p=…`); on success returns
    /// the server-final message (`v=<server signature>`).
    pub fn finish(&self, client_final: &[u8]) -> Result<Vec<u8>, ScramError> {
        let text =
            std::str::from_utf8(client_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let mut binding = None;
        let mut nonce = None;
        for attr in without_proof.split(',') {
            if let Some(v) = attr.strip_prefix("c=") {
                binding = Some(v);
            } else if let Some(v) = attr.strip_prefix("r=") {
                nonce = Some(v);
            }
        }
        let binding = binding.ok_or(ScramError::Malformed("no channel binding"))?;
        if B64.decode(binding).ok().as_deref() != Some(self.first.gs2_header.as_bytes()) {
            return Err(ScramError::ChannelBinding);
        }
        if nonce != Some(self.nonce.as_str()) {
            return Err(ScramError::Nonce);
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let auth_message = format!("{},{},{without_proof}", self.first.bare, self.server_first);
        let mech = self.mech;
        let creds = &self.credentials;
        let signature = mech.hmac(&creds.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError::Proof);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if !bool::from(mech.hash(&client_key).ct_eq(&creds.stored_key)) {
            return Err(ScramError::Proof);
        }
        let server_signature = mech.hmac(&creds.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

/// The fewest iterations a client accepts from a server (RFC 5802's
/// minimum), so a server cannot make the proof cheap to brute-force.
const MIN_ITERATIONS: u32 = 4096;

/// A client's conversation: the first message sent, the proof once the
/// server's first message came, the server's signature to check last.
#[derive(Debug, Clone)]
pub struct ClientConversation {
    mech: Mechanism,
    prepared: String,
    bare: String,
    client_nonce: String,
    server_signature: Option<Vec<u8>>,
}

impl ClientConversation {
    /// Starts a conversation as `user` with an already prepared password
    /// (see [`prepared_password`]); returns it and the client-first message.
    pub fn start(mech: Mechanism, user: &str, prepared: &str) -> (Self, Vec<u8>) {
        let mut random = [0u8; 24];
        rand::rng().fill_bytes(&mut random);
        let client_nonce = B64.encode(random);
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let bare = format!("n={name},r={client_nonce}");
        let first = format!("n,,{bare}").into_bytes();
        let conversation = ClientConversation {
            mech,
            prepared: prepared.to_owned(),
            bare,
            client_nonce,
            server_signature: None,
        };
        (conversation, first)
    }

    /// Answers the server-first message with the client-final message.
    pub fn prove(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let text =
            std::str::from_utf8(server_first).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attr in text.split(',') {
            if let Some(v) = attr.strip_prefix("r=") {
                nonce = Some(v);
            } else if let Some(v) = attr.strip_prefix("s=") {
                salt = B64.decode(v).ok();
            } else if let Some(v) = attr.strip_prefix("i=") {
                iterations = v.parse::<u32>().ok();
            }
        }
        let nonce = nonce
            .filter(|n| n.starts_with(&self.client_nonce) && n.len() > self.client_nonce.len())
            .ok_or(ScramError::Nonce)?;
        let salt = salt.ok_or(ScramError::Malformed("no salt"))?;
        let iterations = iterations
            .filter(|i| *i >= MIN_ITERATIONS)
            .ok_or(ScramError::Malformed("too few iterations"))?;
        let mech = self.mech;
        let salted = mech.salted_password(self.prepared.as_bytes(), &salt, iterations);
        let client_key = mech.hmac(&salted, b"Client Key");
        let stored_key = mech.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.bare);
        let signature = mech.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = mech.hmac(&salted, b"Server Key");
        self.server_signature = Some(mech.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server, too, knew the password.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let expected = self
            .server_signature
            .as_deref()
            .ok_or(ScramError::Malformed("no proof was sent"))?;
        let text =
            std::str::from_utf8(server_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v).ok())
            .ok_or(ScramError::Malformed("no server signature"))?;
        if bool::from(signature.ct_eq(expected)) {
            Ok(())
        } else {
            Err(ScramError::Proof)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_side_proves_itself_and_checks_the_server() {
        for mech in Mechanism::ALL {
            let prepared = prepared_password(mech, "__system", "a shared key").unwrap();
            let creds = Credentials::generate(mech, &prepared);
            let (mut client, first) = ClientConversation::start(mech, "__system", &prepared);
            let first = parse_client_first(&first).unwrap();
            assert_eq!(first.user, "__system");
            let (server, server_first) = Conversation::start(mech, first, creds.clone());
            let client_final = client.prove(&server_first).unwrap();
            let server_final = server.finish(&client_final).unwrap();
            client.verify(&server_final).unwrap();

            let wrong = prepared_password(mech, "__system", "another key").unwrap();
            let (mut client, first) = ClientConversation::start(mech, "__system", &wrong);
            let (server, server_first) =
                Conversation::start(mech, parse_client_first(&first).unwrap(), creds.clone());
            let client_final = client.prove(&server_first).unwrap();
            assert_eq!(server.finish(&client_final), Err(ScramError::Proof));
            assert_eq!(
                client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
                Err(ScramError::Proof),
                "a server that does not know the key is not believed"
            );
        }
    }

    /// Runs one conversation with a fixed salt and server nonce.
    fn converse(
        mech: Mechanism,
        prepared: &str,
        salt_b64: &str,
        client_first: &str,
        server_nonce: &str,
        client_final: &str,
    ) -> (String, Result<String, ScramError>) {
        let creds = Credentials::derive(mech, prepared, B64.decode(salt_b64).unwrap(), 4096);
        let first = parse_client_first(client_first.as_bytes()).unwrap();
        let (conv, server_first) = Conversation::start_with_nonce(mech, first, creds, server_nonce);
        let fin = conv
            .finish(client_final.as_bytes())
            .map(|v| String::from_utf8(v).unwrap());
        (String::from_utf8(server_first).unwrap(), fin)
    }

    #[test]
    fn rfc7677_sha256_example_verifies() {
        let (server_first, fin) = converse(
            Mechanism::Sha256,
            "pencil",
            "W22ZaJ0SNY7soEsUEjb6gQ==",
            "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        );
        assert_eq!(
            server_first,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        assert_eq!(
            fin.unwrap(),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn rfc5802_sha1_example_verifies() {
        let (_, fin) = converse(
            Mechanism::Sha1,
            "pencil",
            "QSXCR+Q6sek8bf92",
            "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
            "3rfcNHYJY1ZVvWVs7j",
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        );
        assert_eq!(fin.unwrap(), "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=");
    }

    #[test]
    fn wrong_proof_or_nonce_is_refused() {
        let (_, fin) = converse(
            Mechanism::Sha1,
            "pencil",
            "QSXCR+Q6sek8bf92",
            "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
            "3rfcNHYJY1ZVvWVs7j",
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=w0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        );
        assert_eq!(fin, Err(ScramError::Proof));
        let (_, fin) = converse(
            Mechanism::Sha1,
            "pencil",
            "QSXCR+Q6sek8bf92",
            "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
            "3rfcNHYJY1ZVvWVs7j",
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        );
        assert_eq!(fin, Err(ScramError::Nonce));
    }

    #[test]
    fn mongodb_sha1_password_is_the_md5_digest() {
        // The digest the drivers compute for user "user", password "pencil".
        assert_eq!(
            mongo_digest("user", "pencil"),
            "1c33006ec1ffd90f9cadcbcc0e118200"
        );
        assert_eq!(
            prepared_password(Mechanism::Sha256, "u", "I\u{00AD}X").unwrap(),
            "IX",
            "SASLprep maps soft hyphens to nothing"
        );
    }

    #[test]
    fn client_first_parsing() {
        let first = parse_client_first(b"n,,n=a=2Cb=3Dc,r=xyz").unwrap();
        assert_eq!(first.user, "a,b=c");
        assert_eq!(
            parse_client_first(b"p=tls-unique,,n=u,r=x"),
            Err(ScramError::ChannelBinding)
        );
        assert!(parse_client_first(b"n,,n=u").is_err(), "no nonce");
        assert!(
            parse_client_first(b"n,a=other,n=u,r=x").is_err(),
            "impersonation"
        );
        assert!(parse_client_first(b"n,a=u,n=u,r=x").is_ok());
        assert!(parse_client_first(b"n,,n=a=2X,r=x").is_err(), "bad escape");
    }

    #[test]
    fn credentials_round_trip_through_their_document() {
        let creds = Credentials::generate(Mechanism::Sha256, "pw");
        assert_eq!(creds.salt.len(), 28);
        assert_eq!(creds.iteration_count, 15_000);
        let raw = bson::RawDocumentBuf::try_from(&creds.to_document()).unwrap();
        assert_eq!(Credentials::from_document(&raw).unwrap(), creds);
    }
}
