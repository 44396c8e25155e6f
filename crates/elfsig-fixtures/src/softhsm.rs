//! A real PKCS#11 token for tests and benchmarks: a SoftHSM2 token in a directory of its own,
//! with its own configuration file, initialised with PINs that never appear in any process's
//! arguments.
//!
//! SoftHSM2 reads its configuration from `SOFTHSM2_CONF` when the module starts, and a test
//! process must not change its own environment, so the token is initialised in a child process:
//! the caller's own program, run with the variables below set, calls [`init_from_env`] first
//! thing. `softhsm2-util` would need the PINs on its command line.

use std::path::{Path, PathBuf};
use std::process::Command;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::session::UserType;
use cryptoki::types::AuthPin;

/// Debian's SoftHSM2 module.
pub const MODULE: &str = "/usr/lib/softhsm/libsofthsm2.so";
/// In the child: the label of the token to initialise.
pub const INIT_VARIABLE: &str = "ELFSIG_SOFTHSM_INIT";
/// In the child: the security officer's PIN.
const SO_PIN_VARIABLE: &str = "ELFSIG_SOFTHSM_SO_PIN";
/// In the child: the user's PIN.
const PIN_VARIABLE: &str = "ELFSIG_SOFTHSM_PIN";

/// A SoftHSM2 token in `dir`.
#[derive(Clone, Debug)]
pub struct SoftToken {
    /// Its configuration file: `SOFTHSM2_CONF` for every process that uses it.
    pub conf: PathBuf,
    /// Its label.
    pub label: String,
    /// A file holding the user PIN (mode 0600), for `pin-source=`.
    pub pin_file: PathBuf,
}

impl SoftToken {
    /// The token labelled `label` in `dir`, initialised on first use with `pin` as its user PIN
    /// by `child` (the caller's own program, which calls [`init_from_env`]). An error says
    /// when SoftHSM2 is not installed.
    pub fn create(dir: &Path, label: &str, pin: &str, child: Command) -> Result<SoftToken, String> {
        if !Path::new(MODULE).exists() {
            return Err(format!("{MODULE} is missing: install Debian's softhsm2"));
        }
        let tokens = dir.join("tokens");
        let token = SoftToken { conf: dir.join("softhsm2.conf"), label: label.to_owned(), pin_file: dir.join("pin") };
        if token.conf.exists() && token.pin_file.exists() {
            return Ok(token);
        }
        // Whatever a failed earlier try left there goes: a second token with the same label
        // would make every later use ambiguous.
        let _ = std::fs::remove_dir_all(&tokens);
        std::fs::create_dir_all(&tokens).map_err(|e| format!("cannot create {}: {e}", tokens.display()))?;
        let conf = format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n",
            tokens.display()
        );
        let staged = dir.join("softhsm2.conf.new");
        std::fs::write(&staged, conf).map_err(|e| format!("cannot write {}: {e}", staged.display()))?;
        let mut child = child;
        let status = child
            .env("SOFTHSM2_CONF", &staged)
            .env(INIT_VARIABLE, label)
            .env(SO_PIN_VARIABLE, format!("so-{pin}"))
            .env(PIN_VARIABLE, pin)
            .status()
            .map_err(|e| format!("cannot run {child:?}: {e}"))?;
        if !status.success() {
            return Err(format!("initialising SoftHSM2 token {label} in {} failed: {status}", dir.display()));
        }
        write_private(&token.pin_file, pin)?;
        std::fs::rename(&staged, &token.conf).map_err(|e| format!("cannot write {}: {e}", token.conf.display()))?;
        Ok(token)
    }

    /// The URI of the key labelled `object` on this token, with its PIN file and module.
    pub fn uri(&self, object: &str) -> String {
        format!(
            "pkcs11:token={};object={object}?pin-source=file:{}&module-path={MODULE}",
            self.label,
            self.pin_file.display()
        )
    }

    /// A file holding `pin`, beside the token, for `pin-source=`.
    pub fn pin_file(&self, name: &str, pin: &str) -> Result<PathBuf, String> {
        let path = self.pin_file.with_file_name(name);
        write_private(&path, pin)?;
        Ok(path)
    }
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{text}\n").as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// In a child [`SoftToken::create`] started: initialises the free slot's token and its user
/// PIN, and returns `Some` (the result). Anywhere else, `None`.
pub fn init_from_env() -> Option<Result<(), String>> {
    let label = std::env::var(INIT_VARIABLE).ok()?;
    let secret =
        |name: &str| std::env::var(name).map(|v| AuthPin::from(v.as_str())).map_err(|_| format!("{name} is unset"));
    Some((|| {
        let (so_pin, pin) = (secret(SO_PIN_VARIABLE)?, secret(PIN_VARIABLE)?);
        let p11 = Pkcs11::new(MODULE).map_err(|e| format!("cannot load {MODULE}: {e}"))?;
        p11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)).map_err(|e| e.to_string())?;
        let free = p11
            .get_slots_with_token()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|slot| p11.get_token_info(*slot).is_ok_and(|info| !info.token_initialized()))
            .ok_or("SoftHSM2 has no free slot")?;
        p11.init_token(free, &so_pin, &label).map_err(|e| format!("C_InitToken: {e}"))?;
        // SoftHSM2 moves an initialised token to a new slot: find it by its label.
        let slot = p11
            .get_slots_with_token()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|slot| p11.get_token_info(*slot).is_ok_and(|info| info.label() == label))
            .ok_or("the initialised token is gone")?;
        let session = p11.open_rw_session(slot).map_err(|e| e.to_string())?;
        session.login(UserType::So, Some(&so_pin)).map_err(|e| format!("C_Login as SO: {e}"))?;
        session.init_pin(&pin).map_err(|e| format!("C_InitPIN: {e}"))?;
        Ok(())
    })())
}
