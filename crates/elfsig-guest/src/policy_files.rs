//! Signed policies as the cases handle them: made in the VM by the CLI (`elfsig policy create`),
//! written to the `policy` control file, and cleared.

use elfsig_guest::harness::{Context, Outcome, control, ensure};
use elfsig_guest::image::{ELFSIG, POLICY_CERT, POLICY_KEY};

/// Where the cases write their policies.
pub(crate) const DIR: &str = "/tmp/policies";

/// Runs the CLI, which must succeed.
pub(crate) fn elfsig(args: &[&str]) -> Outcome {
    let out = std::process::Command::new(ELFSIG).args(args).output().context("run elfsig")?;
    ensure(out.status.success(), || {
        format!("elfsig {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())
    })
}

/// `elfsig policy create` into `DIR/name`, signed by the policy key; returns the path.
pub(crate) fn create(name: &str, args: &[&str]) -> Result<String, String> {
    create_signed_by(name, args, POLICY_KEY, POLICY_CERT)
}

pub(crate) fn create_signed_by(name: &str, args: &[&str], key: &str, cert: &str) -> Result<String, String> {
    std::fs::create_dir_all(DIR).context(DIR)?;
    let path = format!("{DIR}/{name}");
    let mut all = vec!["-q", "policy", "create", "--key", key, "--cert", cert, "-o", &path];
    all.extend_from_slice(args);
    elfsig(&all)?;
    Ok(path)
}

/// Writes `bytes` to the `policy` control file in one write, as `elfsig policy load` does.
pub(crate) fn write_policy(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().write(true).open(control("policy"))?;
    let written = file.write(bytes)?;
    if written == bytes.len() { Ok(()) } else { Err(std::io::Error::other("short write")) }
}

pub(crate) fn load(path: &str) -> Outcome {
    write_policy(&std::fs::read(path).context(path)?).context(&format!("load {path}"))
}

/// What `policy` says: `none`, or its lines.
pub(crate) fn loaded() -> Result<String, String> {
    std::fs::read_to_string(control("policy")).context("read policy")
}

/// Makes the policy `DIR/name` with `args` and loads it with the CLI.
pub(crate) fn apply(name: &str, args: &[&str]) -> Outcome {
    let path = create(name, args)?;
    elfsig(&["-q", "policy", "load", &path])
}

/// Unloads the policy.
pub(crate) fn clear() -> Outcome {
    elfsig(&["-q", "policy", "clear"])?;
    ensure(loaded()? == "none\n", || "clear left a policy".into())
}
