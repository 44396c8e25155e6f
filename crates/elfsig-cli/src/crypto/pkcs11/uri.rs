//! RFC 7512 `pkcs11:` URIs, as `--key` takes them: which token, which key on it, where the PIN
//! comes from and which module to load.
//!
//! `pkcs11:` path `;`-separated `name=value` attributes, then optionally `?` and `&`-separated
//! query attributes; values percent-encoded. Anything elfsig would not act on is refused rather
//! than ignored, so that a URI never picks a different key than its writer meant.

use std::fmt;
use std::path::PathBuf;

use zeroize::Zeroizing;

/// The scheme.
pub const SCHEME: &str = "pkcs11:";

/// Where the PIN comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum Pin {
    /// `pin-value=`: the PIN itself (visible to anyone who can see the command line).
    Value(Zeroizing<String>),
    /// `pin-source=`: a file holding the PIN (`file:` URI or absolute path).
    Source(PathBuf),
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pin::Value(_) => f.write_str("Pin::Value(hidden)"),
            Pin::Source(path) => write!(f, "Pin::Source({})", path.display()),
        }
    }
}

/// A parsed `pkcs11:` URI. Its `Debug` and `Display` never show a PIN.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Pkcs11Uri {
    /// `token=`: the token's label.
    pub token: Option<String>,
    /// `manufacturer=`: the token's manufacturer.
    pub manufacturer: Option<String>,
    /// `model=`: the token's model.
    pub model: Option<String>,
    /// `serial=`: the token's serial number.
    pub serial: Option<String>,
    /// `slot-id=`: the slot's number.
    pub slot_id: Option<u64>,
    /// `object=`: the key's label (CKA_LABEL).
    pub object: Option<String>,
    /// `id=`: the key's CKA_ID, raw bytes.
    pub id: Option<Vec<u8>>,
    /// `pin-value=` or `pin-source=`.
    pub pin: Option<Pin>,
    /// `module-path=`: the PKCS#11 module (shared library) to load.
    pub module_path: Option<PathBuf>,
}

/// Path attributes this parser knows and elfsig acts on.
const PATH_ATTRIBUTES: &[&str] = &["token", "manufacturer", "model", "serial", "slot-id", "object", "id", "type"];
/// RFC 7512 attributes elfsig does not select by: refused, naming what it does take.
const UNSUPPORTED: &[&str] =
    &["library-manufacturer", "library-description", "library-version", "slot-manufacturer", "slot-description"];

impl Pkcs11Uri {
    /// Whether `key` (as given to `--key`) is a `pkcs11:` URI rather than a file.
    /// The scheme is case-insensitive, as every URI scheme is: `PKCS11:…` is a URI too, never a
    /// file name (a key written to, or read from, a file named after a URI with its PIN).
    pub fn is_uri(key: &std::ffi::OsStr) -> bool {
        key.as_encoded_bytes().get(..SCHEME.len()).is_some_and(|start| start.eq_ignore_ascii_case(SCHEME.as_bytes()))
    }

    /// Parses `text`. Errors never quote a PIN.
    pub fn parse(text: &str) -> Result<Pkcs11Uri, String> {
        let rest = text
            .get(..SCHEME.len())
            .filter(|start| start.eq_ignore_ascii_case(SCHEME))
            .and_then(|_| text.get(SCHEME.len()..))
            .ok_or_else(|| format!("a PKCS#11 URI starts with {SCHEME}"))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        // A PIN with an unencoded `&` splits the query there, and what follows looks like an
        // attribute's name: with a pin-value in the query, messages name no query attribute.
        let hide_query_names = query.contains("pin-value");
        let mut uri = Pkcs11Uri::default();
        let mut seen: Vec<String> = Vec::new();
        let attributes = path.split(';').map(|a| (a, true)).chain(query.split('&').map(|a| (a, false)));
        for (attribute, in_path) in attributes.filter(|(a, _)| !a.is_empty()) {
            // Not quoted: a mistyped `pin-value` would show the PIN.
            let (name, value) =
                attribute.split_once('=').ok_or("a PKCS#11 URI attribute has no value: each is name=value")?;
            let shown = if in_path || !hide_query_names {
                name
            } else {
                "(not named here, as it may be part of the PIN: write & in a pin-value as %26)"
            };
            if seen.iter().any(|s| s == name) {
                return Err(format!("PKCS#11 URI names {shown} twice"));
            }
            seen.push(name.to_owned());
            let bytes = decode(value).map_err(|e| format!("PKCS#11 URI attribute {shown}: {e}"))?;
            let text =
                || String::from_utf8(bytes.clone()).map_err(|_| format!("PKCS#11 URI attribute {shown} is not UTF-8"));
            match (name, in_path) {
                ("token", true) => uri.token = Some(text()?),
                ("manufacturer", true) => uri.manufacturer = Some(text()?),
                ("model", true) => uri.model = Some(text()?),
                ("serial", true) => uri.serial = Some(text()?),
                ("slot-id", true) => {
                    let id = text()?;
                    let number = id.parse().ok().filter(|_| id.bytes().all(|b| b.is_ascii_digit()));
                    uri.slot_id = Some(number.ok_or_else(|| format!("slot-id {id:?} is not a decimal number"))?);
                }
                ("object", true) => uri.object = Some(text()?),
                ("id", true) => uri.id = Some(bytes),
                ("type", true) => {
                    let kind = text()?;
                    if kind != "private" {
                        return Err(format!("type={kind}: elfsig signs with a private key (type=private)"));
                    }
                }
                ("pin-value", false) => uri.pin = Some(Pin::Value(Zeroizing::new(text()?))),
                ("pin-source", false) => uri.pin = Some(Pin::Source(pin_source(&text()?)?)),
                ("module-path", false) => {
                    let path = PathBuf::from(text()?);
                    if !path.is_absolute() {
                        return Err(format!("module-path {} is not an absolute path", path.display()));
                    }
                    uri.module_path = Some(path);
                }
                ("module-name", false) => {
                    return Err(
                        "module-name: elfsig does not search for modules; name the library with module-path".into()
                    );
                }
                (name, _) if UNSUPPORTED.contains(&name) => {
                    return Err(format!(
                        "PKCS#11 URI attribute {name}: elfsig selects tokens by {} only",
                        PATH_ATTRIBUTES.join(", ")
                    ));
                }
                (name, true) => return Err(format!("unknown PKCS#11 URI path attribute {name}")),
                (_, false) => return Err(format!("unknown PKCS#11 URI query attribute {shown}")),
            }
        }
        if seen.iter().any(|s| s == "pin-value") && seen.iter().any(|s| s == "pin-source") {
            return Err("a PKCS#11 URI gives pin-value or pin-source, not both".into());
        }
        Ok(uri)
    }

    /// How messages name the key: `object=…;id=…`.
    pub fn describe_key(&self) -> String {
        let parts = self.key_attributes();
        if parts.is_empty() { "any private key".into() } else { parts.join(";") }
    }

    /// How messages name the token: `token=…;serial=…`.
    pub fn describe_token(&self) -> String {
        let parts = self.token_attributes();
        if parts.is_empty() { "any token".into() } else { parts.join(";") }
    }

    fn token_attributes(&self) -> Vec<String> {
        let text = |name: &str, value: &Option<String>| {
            value.as_ref().map(|v| format!("{name}={}", encode(v.as_bytes(), false)))
        };
        let mut path = Vec::new();
        path.extend(text("token", &self.token));
        path.extend(text("manufacturer", &self.manufacturer));
        path.extend(text("model", &self.model));
        path.extend(text("serial", &self.serial));
        path.extend(self.slot_id.map(|s| format!("slot-id={s}")));
        path
    }

    fn key_attributes(&self) -> Vec<String> {
        let mut path = Vec::new();
        path.extend(self.object.as_ref().map(|o| format!("object={}", encode(o.as_bytes(), false))));
        // Every byte of an id encoded, as p11tool writes it: ids are binary.
        path.extend(
            self.id.as_ref().map(|id| format!("id={}", id.iter().map(|b| format!("%{b:02X}")).collect::<String>())),
        );
        path
    }
}

impl fmt::Display for Pkcs11Uri {
    /// The URI without its PIN, percent-encoded as RFC 7512 writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = [self.token_attributes(), self.key_attributes()].concat();
        write!(f, "{SCHEME}{}", path.join(";"))?;
        let mut query = Vec::new();
        match &self.pin {
            Some(Pin::Value(_)) => query.push("pin-value=(hidden)".to_owned()),
            Some(Pin::Source(source)) => {
                query.push(format!("pin-source=file:{}", encode(source.as_os_str().as_encoded_bytes(), true)));
            }
            None => {}
        }
        if let Some(module) = &self.module_path {
            query.push(format!("module-path={}", encode(module.as_os_str().as_encoded_bytes(), true)));
        }
        if !query.is_empty() {
            write!(f, "?{}", query.join("&"))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Pkcs11Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pkcs11Uri({self})")
    }
}

/// A `pin-source`: a `file:` URI or an absolute path.
fn pin_source(source: &str) -> Result<PathBuf, String> {
    let path = source.strip_prefix("file://").or_else(|| source.strip_prefix("file:")).unwrap_or(source);
    let path = PathBuf::from(path);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!(
            "pin-source {source:?}: elfsig reads the PIN from a file, named by an absolute path or a file: URI"
        ))
    }
}

/// Percent-decodes `value`.
fn decode(value: &str) -> Result<Vec<u8>, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte =
                hex.filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit())).and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(byte.ok_or("a % not followed by two hexadecimal digits")?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(out)
}

/// Percent-encodes `bytes` for a path attribute, or a query one: RFC 3986's unreserved
/// characters and those RFC 7512 lets through stay, everything else is `%XX`.
fn encode(bytes: &[u8], query: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~:@!$'()*+,=".contains(&b) || (query && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_p11tool_and_sign_file_users_write() {
        let uri = Pkcs11Uri::parse(
            "pkcs11:model=SoftHSM%20v2;manufacturer=SoftHSM%20project;serial=8a1b;token=elfsig;\
             id=%01%ff;object=release%20key;type=private?pin-source=file:/run/pin&module-path=/usr/lib/softhsm/libsofthsm2.so",
        )
        .unwrap();
        assert_eq!(uri.token.as_deref(), Some("elfsig"));
        assert_eq!(uri.model.as_deref(), Some("SoftHSM v2"));
        assert_eq!(uri.manufacturer.as_deref(), Some("SoftHSM project"));
        assert_eq!(uri.serial.as_deref(), Some("8a1b"));
        assert_eq!(uri.object.as_deref(), Some("release key"));
        assert_eq!(uri.id.as_deref(), Some(&[0x01, 0xff][..]));
        assert!(matches!(&uri.pin, Some(Pin::Source(p)) if p == std::path::Path::new("/run/pin")));
        assert_eq!(uri.module_path.as_deref(), Some(std::path::Path::new("/usr/lib/softhsm/libsofthsm2.so")));
        // Display round-trips (minus what elfsig does not keep) and percent-encodes.
        assert_eq!(Pkcs11Uri::parse(&uri.to_string()).unwrap(), uri);
        assert_eq!(Pkcs11Uri::parse("pkcs11:slot-id=7").unwrap().slot_id, Some(7));
        assert_eq!(Pkcs11Uri::parse("pkcs11:").unwrap(), Pkcs11Uri::default());
        assert_eq!(Pkcs11Uri::parse("pkcs11:token=a%3Bb").unwrap().token.as_deref(), Some("a;b"));
        // Schemes are case-insensitive: never a file named like a URI.
        assert_eq!(Pkcs11Uri::parse("PKCS11:token=t").unwrap().token.as_deref(), Some("t"));
        for (key, is) in [("PKCS11:token=t", true), ("Pkcs11:", true), ("pkcs11", false), ("./pkcs11:x", false)] {
            assert_eq!(Pkcs11Uri::is_uri(std::ffi::OsStr::new(key)), is, "{key}");
        }
    }

    #[test]
    fn never_shows_a_pin() {
        let uri = Pkcs11Uri::parse("pkcs11:token=t;object=k?pin-value=s3cr3t-1234").unwrap();
        assert!(matches!(&uri.pin, Some(Pin::Value(v)) if v.as_str() == "s3cr3t-1234"));
        for shown in [uri.to_string(), format!("{uri:?}"), uri.describe_key()] {
            assert!(!shown.contains("s3cr3t"), "{shown}");
        }
        // A PIN with an unencoded `&` (or `%`) in it: the rest would look like an attribute.
        for bad in [
            "pkcs11:token=t?pin-value=s3cr3t-1234&pin-value=s3cr3t-1234",
            "pkcs11:token=t?pin-values3cr3t-1234",
            "pkcs11:token=t?pin-value=12&s3cr3t=34",
            "pkcs11:token=t?pin-value=12&s3cr3t=3%4",
            "pkcs11:token=t?pin-value=12&s3cr3t=%ff&module-path=/m.so",
            "pkcs11:token=t?pin-value=12&s3cr3t=1&s3cr3t=1",
        ] {
            let error = Pkcs11Uri::parse(bad).unwrap_err();
            assert!(!error.contains("s3cr3t"), "{error}");
        }
    }

    #[test]
    fn refuses_what_it_would_not_act_on() {
        for (uri, says) in [
            ("file:key.pem", "starts with pkcs11:"),
            ("pkcs11:token=a;token=b", "twice"),
            ("pkcs11:token=a?pin-value=1&pin-source=/p", "not both"),
            ("pkcs11:token=%4", "two hexadecimal"),
            ("pkcs11:token=%zz", "two hexadecimal"),
            ("pkcs11:token=%ff", "not UTF-8"),
            ("pkcs11:type=cert", "type=private"),
            ("pkcs11:slot-id=-1", "decimal"),
            ("pkcs11:slot-id=+1", "decimal"),
            ("pkcs11:library-version=2", "selects tokens by"),
            ("pkcs11:colour=blue", "unknown PKCS#11 URI path attribute colour"),
            ("pkcs11:token=t?module-path=lib.so", "absolute"),
            ("pkcs11:token=t?pin-source=pin.txt", "absolute"),
            ("pkcs11:token=t?module-name=softhsm2", "module-path"),
            ("pkcs11:token=t?verbose=1", "query attribute verbose"),
            ("pkcs11:token", "has no value"),
        ] {
            let error = Pkcs11Uri::parse(uri).unwrap_err();
            assert!(error.contains(says), "{uri}: {error}");
        }
    }
}
