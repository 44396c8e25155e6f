//! Keys on PKCS#11 tokens (HSMs, smartcards, SoftHSM2), named by `pkcs11:` URIs: finding the
//! token and the key, logging in, signing, and generating a key pair on the token. The private
//! key never leaves the token; elfsig hashes locally and asks the token for the raw signature.
//!
//! One login serves every session the process opens on the token. Signing many files runs one
//! session per worker, up to what the token says it allows, so that as many signatures are in
//! flight as the token can make.

pub mod uri;

use std::path::PathBuf;
use std::sync::{Condvar, Mutex, PoisonError};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as P11Error, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::{Limit, Slot, TokenInfo};
use cryptoki::types::AuthPin;
use rsa::BigUint;
use zeroize::Zeroizing;

use crate::crypto::ecdsa;
use crate::crypto::public_key::{Algorithm, PublicKey};
#[cfg(doc)]
use crate::crypto::signature::SignatureAlgorithm;
use crate::error::Error;
use uri::Pin;
pub use uri::Pkcs11Uri;

/// The environment variable naming the PKCS#11 module when the URI has no `module-path`.
pub const MODULE_VARIABLE: &str = "ELFSIG_PKCS11_MODULE";
/// The environment variable holding the PIN when the URI has no `pin-value` or `pin-source`.
pub const PIN_VARIABLE: &str = "ELFSIG_PKCS11_PIN";

/// DER of the named-curve OIDs, as CKA_EC_PARAMS holds them.
const P256_PARAMS: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P384_PARAMS: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
/// The DER DigestInfo prefix of a SHA-512 digest (RFC 8017, 9.2), which CKM_RSA_PKCS signs as
/// PKCS#1 v1.5 does.
const SHA512_DIGEST_INFO: &[u8] =
    &[0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40];

/// A token, found and logged in to.
struct Token {
    context: Pkcs11,
    slot: Slot,
    /// `token 'label'`, for messages.
    name: String,
}

/// A private key on a token, logged in and ready to sign.
pub struct TokenKey {
    token: Token,
    /// `object=…;id=…`, for messages.
    object: String,
    handle: ObjectHandle,
    algorithm: Algorithm,
    public: PublicKey,
    /// The id of the pair, when this process made it.
    made: Option<Vec<u8>>,
    pool: Mutex<Pool>,
    returned: Condvar,
}

/// The sessions: idle ones, how many are open, and how many may be.
struct Pool {
    idle: Vec<Session>,
    open: usize,
    limit: usize,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenKey({}, {})", self.describe(), self.public.name())
    }
}

impl TokenKey {
    /// The key `uri` names, for signing the certificate whose public key is `certified`: a
    /// signature the token makes must verify with it. Without a certificate, its public key
    /// comes from the token (the public key object with the same id or label, or an RSA key's
    /// own modulus).
    pub fn open(uri: &Pkcs11Uri, certified: Option<&PublicKey>) -> Result<TokenKey, Error> {
        let (token, session) = log_in(uri, false)?;
        let object = uri.describe_key();
        let handle = one_private_key(&session, uri, &token.name)?;
        let algorithm = key_algorithm(&session, handle, &object, &token.name)?;
        if let [Attribute::AlwaysAuthenticate(true)] =
            session.get_attributes(handle, &[AttributeType::AlwaysAuthenticate]).unwrap_or_default().as_slice()
        {
            return Err(Error::msg(format!(
                "{object} on {} wants the PIN again before every signature (CKA_ALWAYS_AUTHENTICATE, as a PIV \
                 card's signature slot does); elfsig signs many files on one login: use a key without it",
                token.name
            )));
        }
        // Whose signatures the certificate's key must verify: the certificate is what a
        // verifier trusts, whatever public key object the token keeps beside the key.
        let (public, mismatch) = match certified {
            Some(certified) if certified.algorithm() != algorithm => {
                return Err(Error::msg(format!(
                    "{object} on {} is an {} key, which does not match the certificate's {} key",
                    token.name,
                    match algorithm {
                        Algorithm::Rsa => "RSA",
                        Algorithm::EcdsaP256 => "ECDSA P-256",
                        Algorithm::EcdsaP384 => "ECDSA P-384",
                    },
                    certified.name()
                )));
            }
            Some(certified) => (certified.clone(), "does not match the certificate's public key"),
            None => (
                public_key(&session, handle, uri, algorithm)
                    .ok_or_else(|| Error::msg(format!("{} keeps no public key for {object}", token.name)))?,
                "makes signatures its own public key on the token does not verify",
            ),
        };
        let key = TokenKey::new(token, session, object, handle, algorithm, public);
        key.check_public(mismatch)?;
        Ok(key)
    }

    /// A new key pair on the token `uri` names, labelled with its `object` (and `id`, or a
    /// random one): the private key is sensitive and never extractable.
    pub fn generate(uri: &Pkcs11Uri, algorithm: Algorithm, bits: usize) -> Result<TokenKey, Error> {
        let label = uri.object.clone().ok_or_else(|| {
            Error::Usage("a key made on a token needs a label: add object=NAME to the pkcs11: URI".into())
        })?;
        let (token, session) = log_in(uri, true)?;
        let mut taken = vec![vec![Attribute::Label(label.clone().into_bytes())]];
        taken.extend(uri.id.as_ref().map(|id| vec![Attribute::Id(id.clone())]));
        let mut existing = Vec::new();
        for template in &taken {
            existing.extend(session.find_objects(template).map_err(|e| failed(&token.name, "cannot search", &e))?);
        }
        if !existing.is_empty() {
            return Err(Error::msg(format!(
                "{} already holds objects with {}; elfsig does not replace keys on a token",
                token.name,
                uri.describe_key()
            )));
        }
        let id = match &uri.id {
            Some(id) => id.clone(),
            None => rand::random::<[u8; 16]>().to_vec(),
        };
        let common = [Attribute::Token(true), Attribute::Label(label.into_bytes()), Attribute::Id(id.clone())];
        let (mechanism, mut public_template) = match algorithm {
            Algorithm::Rsa => (
                Mechanism::RsaPkcsKeyPairGen,
                vec![Attribute::ModulusBits((bits as u64).into()), Attribute::PublicExponent(vec![1, 0, 1])],
            ),
            Algorithm::EcdsaP256 => (Mechanism::EccKeyPairGen, vec![Attribute::EcParams(P256_PARAMS.to_vec())]),
            Algorithm::EcdsaP384 => (Mechanism::EccKeyPairGen, vec![Attribute::EcParams(P384_PARAMS.to_vec())]),
        };
        public_template.push(Attribute::Verify(true));
        public_template.extend(common.iter().cloned());
        let mut private_template = vec![
            Attribute::Private(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::Sign(true),
            // A signing key only: nothing else it could be talked into doing.
            Attribute::Decrypt(false),
            Attribute::Unwrap(false),
            Attribute::Derive(false),
        ];
        private_template.extend(common);
        let (_, handle) = session
            .generate_key_pair(&mechanism, &public_template, &private_template)
            .map_err(|e| failed(&token.name, "cannot generate the key pair", &e))?;
        let with_id = Pkcs11Uri { id: Some(id.clone()), ..uri.clone() };
        let object = with_id.describe_key();
        let Some(public) = public_key(&session, handle, &with_id, algorithm) else {
            let error = Error::msg(format!("{} made {object} but does not show its public key", token.name));
            return Err(undone(&token, &id, &format!("{object} on {}", token.name), error));
        };
        let mut key = TokenKey::new(token, session, object, handle, algorithm, public);
        key.made = Some(id);
        match key.check_public("makes signatures its own new public key does not verify") {
            Ok(()) => Ok(key),
            Err(e) => Err(key.undo(e)),
        }
    }

    /// After `error`, removes the pair [`TokenKey::generate`] made, so that no key stays on the
    /// token without a certificate; returns `error`, saying so when the pair stays.
    pub fn undo(&self, error: Error) -> Error {
        match &self.made {
            Some(id) => undone(&self.token, id, &self.describe(), error),
            None => error,
        }
    }

    /// The key `handle` on `token`, whose logged-in `session` starts the pool.
    fn new(
        token: Token,
        session: Session,
        object: String,
        handle: ObjectHandle,
        algorithm: Algorithm,
        public: PublicKey,
    ) -> TokenKey {
        // One session per worker, at most what the token allows an application.
        let workers = rayon::current_num_threads().max(1);
        let limit = match token.context.get_token_info(token.slot).map(|info| info.max_session_count()) {
            Ok(Limit::Max(max)) => usize::try_from(max).unwrap_or(usize::MAX).clamp(1, workers),
            _ => workers,
        };
        let pool = Mutex::new(Pool { idle: vec![session], open: 1, limit });
        TokenKey { token, object, handle, algorithm, public, made: None, pool, returned: Condvar::new() }
    }

    /// A signature the token makes verifies with the public key elfsig will name: the key and
    /// its certificate belong together, and the token signs (logged in, with the mechanism).
    /// Otherwise the key `mismatch`es.
    fn check_public(&self, mismatch: &str) -> Result<(), Error> {
        let probe = b"elfsig: does the key on the token match its public key?";
        let value = self.sign(probe)?;
        let algorithm = self.public.signature_algorithm();
        if self.public.verifies(algorithm, algorithm.hash(), probe, &value) {
            Ok(())
        } else {
            Err(Error::msg(format!("{} {mismatch}", self.describe())))
        }
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Its public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// How messages name it: `object=…;id=… on token 'label'`.
    pub fn describe(&self) -> String {
        format!("{} on {}", self.object, self.token.name)
    }

    /// Signs `message` (hashed here, as [`SignatureAlgorithm::hash`] says) in elfsig's one
    /// encoding.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        let digest = self.public.signature_algorithm().hash().digest(message);
        let session = self.session()?;
        let result = self.sign_digest(&session, &digest);
        self.give_back(session);
        result
    }

    fn sign_digest(&self, session: &Session, digest: &[u8]) -> Result<Vec<u8>, Error> {
        let raw = |mechanism: &Mechanism, data: &[u8]| {
            session.sign(mechanism, self.handle, data).map_err(|e| failed(&self.token.name, "cannot sign", &e))
        };
        // ECDSA: the token's raw r || s, in elfsig's encoding, whose fixed length needs a fresh k
        // now and then; a token with deterministic nonces (RFC 6979) gives the same r || s again.
        let mut last = None;
        let mut fresh = || {
            let value = raw(&Mechanism::Ecdsa, digest)?;
            if last.as_ref() == Some(&value) {
                return Err(Error::msg(format!(
                    "{} makes the same ECDSA signature twice (deterministic nonces), and elfsig's fixed-length \
                     encoding needs another for this file: sign with an RSA key on this token",
                    self.token.name
                )));
            }
            last = Some(value.clone());
            Ok(value)
        };
        match self.algorithm {
            Algorithm::Rsa => raw(&Mechanism::RsaPkcs, &[SHA512_DIGEST_INFO, digest].concat()),
            Algorithm::EcdsaP256 => ecdsa::fixed_len(self.public.signature_len(), || {
                Ok(ecdsa::p256_value(p256::ecdsa::Signature::from_slice(&fresh()?).map_err(bad_ecdsa)?))
            }),
            Algorithm::EcdsaP384 => ecdsa::fixed_len(self.public.signature_len(), || {
                Ok(ecdsa::p384_value(p384::ecdsa::Signature::from_slice(&fresh()?).map_err(bad_ecdsa)?))
            }),
        }
    }

    /// An idle session, a new one while under the limit, or the next one given back.
    fn session(&self) -> Result<Session, Error> {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(session) = pool.idle.pop() {
                return Ok(session);
            }
            if pool.open < pool.limit {
                pool.open += 1;
                drop(pool);
                // Sessions opened after the login share it.
                match self.token.context.open_ro_session(self.token.slot) {
                    Ok(session) => return Ok(session),
                    Err(P11Error::Pkcs11(RvError::SessionCount, _)) => {
                        pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
                        pool.open -= 1;
                        pool.limit = pool.open.max(1);
                    }
                    Err(e) => {
                        self.pool.lock().unwrap_or_else(PoisonError::into_inner).open -= 1;
                        // A worker waiting for a session may open this one instead.
                        self.returned.notify_one();
                        return Err(failed(&self.token.name, "cannot open a session", &e));
                    }
                }
                continue;
            }
            pool = self.returned.wait(pool).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn give_back(&self, session: Session) {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner).idle.push(session);
        self.returned.notify_one();
    }
}

/// Removes the key pair with `id` (both its objects carry it) from `token`, after `error`;
/// returns `error`, saying so when the pair (`described`) stays.
fn undone(token: &Token, id: &[u8], described: &str, error: Error) -> Error {
    let removed = token.context.open_rw_session(token.slot).and_then(|session| {
        session.find_objects(&[Attribute::Id(id.to_vec())])?.into_iter().try_for_each(|o| session.destroy_object(o))
    });
    match removed {
        Ok(()) => error,
        Err(e) => Error::msg(format!(
            "{error}; and the key pair made as {described} stays on the token ({}): remove it with the token's tools",
            short(&e)
        )),
    }
}

/// The token `uri` names, and a session on it (read-write when `rw`), logged in.
fn log_in(uri: &Pkcs11Uri, rw: bool) -> Result<(Token, Session), Error> {
    let token = open_token(uri)?;
    let opened = if rw { token.context.open_rw_session(token.slot) } else { token.context.open_ro_session(token.slot) };
    let session = opened.map_err(|e| failed(&token.name, "cannot open a session", &e))?;
    login(&token, &session, uri)?;
    Ok((token, session))
}

/// Loads the module, and finds the one token `uri` names.
fn open_token(uri: &Pkcs11Uri) -> Result<Token, Error> {
    let module = match (&uri.module_path, std::env::var_os(MODULE_VARIABLE)) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) if !path.is_empty() => PathBuf::from(path),
        _ => {
            return Err(Error::Usage(format!(
                "which PKCS#11 module? Add module-path=/path/to/module.so to the URI's query, or set {MODULE_VARIABLE}"
            )));
        }
    };
    if !module.is_file() {
        return Err(Error::msg(format!("PKCS#11 module {} does not exist", module.display())));
    }
    let context = Pkcs11::new(&module)
        .map_err(|e| Error::msg(format!("cannot load the PKCS#11 module {}: {e}", module.display())))?;
    match context.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(P11Error::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => {
            return Err(Error::msg(format!("PKCS#11 module {} failed to start: {}", module.display(), short(&e))));
        }
    }
    let slots = context.get_slots_with_token().map_err(|e| {
        Error::msg(format!("PKCS#11 module {}: cannot list its tokens: {}", module.display(), short(&e)))
    })?;
    let mut present = Vec::new();
    let mut matching = Vec::new();
    for slot in slots {
        let Ok(info) = context.get_token_info(slot) else { continue };
        if !info.token_initialized() {
            continue;
        }
        present.push(format!("'{}' (slot {}, serial {})", info.label(), slot.id(), info.serial_number()));
        if selects(uri, slot, &info) {
            matching.push((slot, info.label().to_owned()));
        }
    }
    match matching.as_slice() {
        [(slot, label)] => Ok(Token { context, slot: *slot, name: format!("token '{label}'") }),
        [] if present.is_empty() => Err(Error::msg(format!(
            "no token matches {}: PKCS#11 module {} has no initialized token",
            uri.describe_token(),
            module.display()
        ))),
        [] => Err(Error::msg(format!(
            "no token matches {}; {} has {}",
            uri.describe_token(),
            module.display(),
            present.join(", ")
        ))),
        _ => Err(Error::msg(format!(
            "{} tokens match {}; tell them apart with token= or serial=: {}",
            matching.len(),
            uri.describe_token(),
            present.join(", ")
        ))),
    }
}

/// Whether the token in `slot` is one `uri` names.
fn selects(uri: &Pkcs11Uri, slot: Slot, info: &TokenInfo) -> bool {
    let is = |wanted: &Option<String>, actual: &str| wanted.as_deref().is_none_or(|w| w == actual);
    is(&uri.token, info.label())
        && is(&uri.manufacturer, info.manufacturer_id())
        && is(&uri.model, info.model())
        && is(&uri.serial, info.serial_number())
        && uri.slot_id.is_none_or(|id| id == slot.id())
}

/// Logs in as the user, with the PIN from the URI, a PIN file or the environment, when the token
/// wants one.
fn login(token: &Token, session: &Session, uri: &Pkcs11Uri) -> Result<(), Error> {
    let (context, slot, token) = (&token.context, token.slot, token.name.as_str());
    let info = context.get_token_info(slot).map_err(|e| failed(token, "cannot read its state", &e))?;
    if !info.login_required() {
        return Ok(());
    }
    if info.user_pin_locked() {
        return Err(Error::msg(format!("the user PIN of {token} is locked; its security officer must unlock it")));
    }
    // A token with a PIN pad takes the PIN there, when none is given here.
    let pin = match pin(uri, token) {
        Ok(pin) => Some(pin),
        Err(_) if info.protected_authentication_path() && uri.pin.is_none() => {
            eprintln!("elfsig: enter the PIN of {token} on its PIN pad");
            None
        }
        Err(e) => return Err(e),
    };
    match session.login(UserType::User, pin.as_ref()) {
        Ok(()) | Err(P11Error::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => Ok(()),
        Err(P11Error::Pkcs11(rv, _)) => {
            let after = context.get_token_info(slot).ok();
            Err(Error::msg(login_refused(rv, token, after.as_ref())))
        }
        Err(e) => Err(failed(token, "cannot log in", &e)),
    }
}

/// What a refused login means, for `token` (whose state after the attempt is `after`).
fn login_refused(rv: RvError, token: &str, after: Option<&TokenInfo>) -> String {
    let mut message = match rv {
        RvError::PinIncorrect | RvError::PinLenRange | RvError::PinInvalid => format!("wrong PIN for {token}"),
        RvError::PinLocked => format!("the user PIN of {token} is locked; its security officer must unlock it"),
        RvError::PinExpired => format!("the user PIN of {token} has expired; set a new one with the token's tools"),
        RvError::UserPinNotInitialized => {
            format!(
                "{token} has no user PIN yet; set one with the token's tools (softhsm2-util, pkcs11-tool --init-pin)"
            )
        }
        other => format!("cannot log in to {token}: {other:?}"),
    };
    if let Some(info) = after {
        if info.user_pin_locked() && rv != RvError::PinLocked {
            message.push_str("; the PIN is now locked");
        } else if info.user_pin_final_try() {
            message.push_str("; one more wrong PIN locks it");
        } else if info.user_pin_count_low() {
            message.push_str("; few tries are left before it locks");
        }
    }
    message
}

/// The PIN: `pin-value`, the file `pin-source` names, or [`PIN_VARIABLE`].
fn pin(uri: &Pkcs11Uri, token: &str) -> Result<AuthPin, Error> {
    let text: Zeroizing<String> = match &uri.pin {
        Some(Pin::Value(value)) => value.clone(),
        Some(Pin::Source(path)) => {
            let bytes =
                Zeroizing::new(std::fs::read(path).map_err(|e| Error::io("cannot read the PIN from", path, e))?);
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| Error::msg(format!("the PIN in {} is not UTF-8", path.display())))?;
            // One line: a trailing newline is the file's, not the PIN's.
            let line = text.strip_suffix('\n').unwrap_or(text);
            Zeroizing::new(line.strip_suffix('\r').unwrap_or(line).to_owned())
        }
        // Set but empty is unset, as for the module: an empty PIN would spend one of the tries.
        None => match std::env::var(PIN_VARIABLE) {
            Ok(value) if !value.is_empty() => Zeroizing::new(value),
            _ => {
                return Err(Error::Usage(format!(
                    "{token} needs its PIN: add pin-source=file:/path/to/pin to the URI's query, or set {PIN_VARIABLE}"
                )));
            }
        },
    };
    Ok(AuthPin::from(text.as_str()))
}

/// The one private key `uri` names on the token.
fn one_private_key(session: &Session, uri: &Pkcs11Uri, token: &str) -> Result<ObjectHandle, Error> {
    let mut template = vec![Attribute::Class(ObjectClass::PRIVATE_KEY)];
    template.extend(uri.object.as_ref().map(|label| Attribute::Label(label.clone().into_bytes())));
    template.extend(uri.id.as_ref().map(|id| Attribute::Id(id.clone())));
    let found = session.find_objects(&template).map_err(|e| failed(token, "cannot search", &e))?;
    match found.as_slice() {
        [one] => Ok(*one),
        [] => {
            let all = session.find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)]).unwrap_or_default();
            let labels: Vec<String> = all.iter().filter_map(|&h| label_of(session, h)).collect();
            let held = if labels.is_empty() { "none".into() } else { labels.join(", ") };
            Err(Error::msg(format!("no private key {} on {token} (its private keys: {held})", uri.describe_key())))
        }
        many => Err(Error::msg(format!(
            "{} private keys match {} on {token}; name one with object= and id=",
            many.len(),
            uri.describe_key()
        ))),
    }
}

fn label_of(session: &Session, handle: ObjectHandle) -> Option<String> {
    match session.get_attributes(handle, &[AttributeType::Label]).ok()?.as_slice() {
        [Attribute::Label(label)] => Some(format!("'{}'", String::from_utf8_lossy(label))),
        _ => None,
    }
}

/// RSA, or ECDSA on the curve the key's CKA_EC_PARAMS names.
fn key_algorithm(session: &Session, handle: ObjectHandle, object: &str, token: &str) -> Result<Algorithm, Error> {
    let attributes = session
        .get_attributes(handle, &[AttributeType::KeyType, AttributeType::EcParams])
        .map_err(|e| failed(token, "cannot read the key's type", &e))?;
    let key_type = attributes.iter().find_map(|a| if let Attribute::KeyType(t) = a { Some(*t) } else { None });
    let params = attributes.iter().find_map(|a| if let Attribute::EcParams(p) = a { Some(p.as_slice()) } else { None });
    match (key_type, params) {
        (Some(KeyType::RSA), _) => Ok(Algorithm::Rsa),
        (Some(KeyType::EC), Some(P256_PARAMS)) => Ok(Algorithm::EcdsaP256),
        (Some(KeyType::EC), Some(P384_PARAMS)) => Ok(Algorithm::EcdsaP384),
        (Some(KeyType::EC), _) => Err(Error::msg(format!(
            "{object} on {token} is an EC key on a curve elfsig does not sign with (P-256, P-384)"
        ))),
        (other, _) => Err(Error::msg(format!(
            "{object} on {token} is a {} key, neither RSA nor EC",
            other.map_or_else(|| "typeless".into(), |t| t.to_string())
        ))),
    }
}

/// The public key of the private key `handle`: from the public key object with the same id (or
/// label), else from an RSA private key's own modulus and exponent.
fn public_key(session: &Session, handle: ObjectHandle, uri: &Pkcs11Uri, algorithm: Algorithm) -> Option<PublicKey> {
    let wanted = match algorithm {
        Algorithm::Rsa => vec![AttributeType::Modulus, AttributeType::PublicExponent],
        Algorithm::EcdsaP256 | Algorithm::EcdsaP384 => vec![AttributeType::EcPoint],
    };
    let own_id = match session.get_attributes(handle, &[AttributeType::Id]).ok()?.as_slice() {
        [Attribute::Id(id)] if !id.is_empty() => Some(id.clone()),
        _ => uri.id.clone(),
    };
    let mut template = vec![Attribute::Class(ObjectClass::PUBLIC_KEY)];
    match (own_id, &uri.object) {
        (Some(id), _) => template.push(Attribute::Id(id)),
        (None, Some(label)) => template.push(Attribute::Label(label.clone().into_bytes())),
        (None, None) => {}
    }
    let objects = session.find_objects(&template).unwrap_or_default();
    let candidates = match objects.as_slice() {
        [public] => vec![*public, handle],
        _ => vec![handle],
    };
    candidates.into_iter().find_map(|object| {
        let attributes = session.get_attributes(object, &wanted).ok()?;
        decode_public(algorithm, &attributes)
    })
}

fn decode_public(algorithm: Algorithm, attributes: &[Attribute]) -> Option<PublicKey> {
    let find = |wanted: AttributeType| {
        attributes.iter().find_map(|a| match (a, wanted) {
            (Attribute::Modulus(v), AttributeType::Modulus)
            | (Attribute::PublicExponent(v), AttributeType::PublicExponent)
            | (Attribute::EcPoint(v), AttributeType::EcPoint) => Some(v.as_slice()),
            _ => None,
        })
    };
    match algorithm {
        Algorithm::Rsa => {
            let (n, e) = (find(AttributeType::Modulus)?, find(AttributeType::PublicExponent)?);
            rsa::RsaPublicKey::new(BigUint::from_bytes_be(n), BigUint::from_bytes_be(e)).ok().map(PublicKey::Rsa)
        }
        Algorithm::EcdsaP256 => {
            p256::ecdsa::VerifyingKey::from_sec1_bytes(&ec_point(find(AttributeType::EcPoint)?, 32)?)
                .ok()
                .map(PublicKey::P256)
        }
        Algorithm::EcdsaP384 => {
            p384::ecdsa::VerifyingKey::from_sec1_bytes(&ec_point(find(AttributeType::EcPoint)?, 48)?)
                .ok()
                .map(PublicKey::P384)
        }
    }
}

/// An uncompressed point from CKA_EC_POINT: a DER OCTET STRING around it, as PKCS#11 says, or the
/// bare point, as some tokens give it.
fn ec_point(value: &[u8], field_bytes: usize) -> Option<Vec<u8>> {
    let len = 2 * field_bytes + 1;
    if value.len() == len && value.first() == Some(&4) {
        return Some(value.to_vec());
    }
    use der::Decode;
    let inner = der::asn1::OctetString::from_der(value).ok()?;
    (inner.as_bytes().len() == len).then(|| inner.as_bytes().to_vec())
}

fn bad_ecdsa(e: p256::ecdsa::Error) -> Error {
    Error::msg(format!("the token's ECDSA signature is not r || s: {e}"))
}

/// A PKCS#11 failure on `token`, short: the function and the CKR name.
fn failed(token: &str, what: &str, error: &P11Error) -> Error {
    Error::msg(format!("{token}: {what}: {}", short(error)))
}

fn short(error: &P11Error) -> String {
    match error {
        P11Error::Pkcs11(rv, function) => format!("{function} returned {rv:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_a_refused_login_means() {
        let token = "token 'build'";
        for (rv, says) in [
            (RvError::PinIncorrect, "wrong PIN for token 'build'"),
            (RvError::PinLocked, "is locked; its security officer must unlock it"),
            (RvError::PinExpired, "has expired"),
            (RvError::UserPinNotInitialized, "has no user PIN yet"),
            (RvError::DeviceError, "cannot log in to token 'build': DeviceError"),
        ] {
            let message = login_refused(rv, token, None);
            assert!(message.contains(says), "{rv:?}: {message}");
        }
    }

    #[test]
    fn reads_ec_points_wrapped_or_bare() {
        let point = [&[4u8][..], &[7; 64]].concat();
        let wrapped = [&[0x04, 65][..], &point].concat();
        assert_eq!(ec_point(&wrapped, 32).as_deref(), Some(&point[..]));
        assert_eq!(ec_point(&point, 32).as_deref(), Some(&point[..]));
        assert_eq!(ec_point(&point[..64], 32), None);
        assert_eq!(ec_point(&wrapped, 48), None);
    }
}
