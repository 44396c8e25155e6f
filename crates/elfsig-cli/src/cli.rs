//! The command line, as clap derives it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Sign ELF binaries so that the elfsig kernel module lets them run.
///
/// Exit status: 0 when every file succeeded, 1 when any failed, 2 on usage errors.
#[derive(Debug, Parser)]
#[command(name = "elfsig", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Print only errors: no progress, notes or per-file success lines.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate an RSA signing key and its self-signed certificate.
    Keygen(KeygenArgs),
    /// Sign ELF files in place (or into --output).
    Sign(SignArgs),
    /// Check that files carry a valid signature by a trusted certificate.
    Verify(VerifyArgs),
    /// Show what a file's signature says, without checking it.
    Inspect(InspectArgs),
    /// Remove the signature, restoring the original file byte for byte.
    Remove(RemoveArgs),
    /// Show the kernel module's state: mode, lock, loader policy, mapping guard, trusted keys,
    /// counters and cache.
    Status(StatusArgs),
    /// Show the module's mode, or set it (root): enforce refuses, permissive logs and allows.
    Mode(ModeArgs),
    /// Show or set (root) whether running the dynamic loader directly (`ld.so ./program`) is
    /// refused.
    Loader(LoaderArgs),
    /// Show or set (root) what happens to programs and libraries on mounts the kernel does not
    /// trust: a user namespace's (rootless overlayfs, tmpfs) and FUSE.
    Untrusted(UntrustedArgs),
    /// Show or set (root) whether processes whose program is not signed with the jit
    /// entitlement are refused executable memory that is no signed file's (W^X).
    Runtime(RuntimeArgs),
    /// Empty the module's verdict cache (root), after removing a key from a trusted keyring.
    Flush,
    /// Re-sign the ELF files inside Debian packages, or check them before dpkg installs them.
    Deb(DebArgs),
    /// Re-sign the ELF files inside container images (OCI image layouts and archives), or check
    /// them.
    Oci(OciArgs),
    /// Write, sign and inspect a policy: signed files and certificates revoked, certificates
    /// trusted beyond the module's own, with a serial number that only grows.
    Policy(PolicyArgs),
}

/// `elfsig policy`.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// What to do with a policy.
    #[command(subcommand)]
    pub command: PolicyCommand,
}

/// The `policy` commands.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Write a policy: signed with --key and --cert (a policy key), or unsigned, for `policy
    /// sign` to sign where the policy key is.
    Create(PolicyCreateArgs),
    /// Sign a policy, or sign it again (its signature replaced).
    Sign(PolicySignArgs),
    /// Show what a policy says; with --cert, check its signature too (exit status 1 when it
    /// does not verify).
    Inspect(PolicyInspectArgs),
    /// Load a signed policy into the module (root): refused, with nothing changed, unless it
    /// is signed by a policy key the module trusts and its serial is above the loaded one's.
    Load(PolicyLoadArgs),
    /// Show the policy the module has loaded.
    Show(PolicyShowArgs),
    /// Unload the module's policy (root); refused while locked.
    Clear,
}

/// `elfsig policy load`.
#[derive(Debug, Args)]
pub struct PolicyLoadArgs {
    /// The signed policy.
    #[arg(value_name = "POLICY")]
    pub policy: PathBuf,
}

/// `elfsig policy show`.
#[derive(Debug, Args)]
pub struct PolicyShowArgs {
    /// One JSON object (schema in docs/POLICY.md).
    #[arg(long)]
    pub json: bool,
}

/// `elfsig policy create`.
#[derive(Debug, Args)]
pub struct PolicyCreateArgs {
    /// The policy's serial number: the module only takes a policy whose serial is above the
    /// loaded one's. With --from, that policy's plus one by default.
    #[arg(long)]
    pub serial: Option<u64>,
    /// Start from this policy's lists (signed or not), and add to them.
    #[arg(long, value_name = "POLICY")]
    pub from: Option<PathBuf>,
    /// Revoke a signed file: its path, or the digest its signature covers as sha256:HEX (what
    /// `elfsig inspect` shows); may be repeated.
    #[arg(long, value_name = "FILE|sha256:HEX")]
    pub revoke: Vec<String>,
    /// Revoke a certificate (PEM, possibly several, or DER): files it signed are refused, whatever
    /// keyring trusts it; may be repeated.
    #[arg(long, value_name = "CERT")]
    pub revoke_cert: Vec<PathBuf>,
    /// Trust a certificate (PEM, possibly several, or DER) to sign programs, beyond the module's
    /// own and the kernel's keyrings; may be repeated.
    #[arg(long, value_name = "CERT")]
    pub trust: Vec<PathBuf>,
    /// The policy key: a file, or a `pkcs11:` URI, as for `sign`.
    #[arg(long, value_name = "KEY", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The policy key's certificate.
    #[arg(long, value_name = "CERT", requires = "key")]
    pub cert: Option<PathBuf>,
    /// Where to write the policy.
    #[arg(short, long, value_name = "POLICY")]
    pub output: PathBuf,
}

/// `elfsig policy sign`.
#[derive(Debug, Args)]
#[command(mut_arg("key", |key| key.help("The policy key: a file, or a `pkcs11:` URI, as for `sign`")))]
#[command(mut_arg("cert", |cert| cert.help("The policy key's certificate")))]
pub struct PolicySignArgs {
    /// The policy key and its certificate.
    #[command(flatten)]
    pub signing: SigningKeyArgs,
    /// Write the signed policy here instead of replacing POLICY.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// The policy to sign.
    #[arg(value_name = "POLICY")]
    pub policy: PathBuf,
}

/// `elfsig policy inspect`.
#[derive(Debug, Args)]
pub struct PolicyInspectArgs {
    /// One JSON object (schema in docs/POLICY.md).
    #[arg(long)]
    pub json: bool,
    /// A policy certificate to check the signature with (PEM, possibly several, or DER); may be
    /// repeated.
    #[arg(long, value_name = "CERT")]
    pub cert: Vec<PathBuf>,
    /// The policy.
    #[arg(value_name = "POLICY")]
    pub policy: PathBuf,
}

/// `elfsig deb`.
#[derive(Debug, Args)]
pub struct DebArgs {
    /// What to do with the packages.
    #[command(subcommand)]
    pub command: DebCommand,
}

/// The `deb` commands.
#[derive(Debug, Subcommand)]
pub enum DebCommand {
    /// Sign every ELF file in Debian packages that `sign --recursive` would sign, keeping every
    /// other byte of each package (owners, modes, links, order, times, compression); md5sums
    /// and Installed-Size follow. Packages are done on all cores.
    Sign(DebSignArgs),
    /// Check that every ELF file in Debian packages that the module checks carries a valid
    /// signature by a trusted certificate: the gate that keeps dpkg from installing what the
    /// module would refuse.
    Verify(DebVerifyArgs),
}

/// `elfsig deb sign`.
#[derive(Debug, Args)]
#[command(mut_arg("key", |key| key.help("The private key, as for `sign`: a file, or a `pkcs11:` URI")))]
#[command(mut_arg("cert", |cert| cert.help("The key's certificate (PEM or DER)")))]
pub struct DebSignArgs {
    /// The key and its certificate.
    #[command(flatten)]
    pub signing: SigningKeyArgs,
    /// Write the signed packages into DIR (a package found under a directory keeps its path
    /// below it) instead of replacing them.
    #[arg(short, long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// The Debian architecture of the hosts the packages are for: decides which ELF files in
    /// packages for all architectures are foreign, and left alone. This machine's by default.
    #[arg(long, value_name = "ARCH", default_value = crate::architecture::Machines::host_debian())]
    pub architecture: String,
    /// Entitle the program installed as FILE (an absolute path, as in the package's listing) to
    /// what `sign --entitle` names, comma-separated (`/usr/bin/python3.13=jit`); may be
    /// repeated, once per file. `none` grants nothing. Other files keep what their signature
    /// granted. A FILE that no package given holds as an ELF file it signs is an error.
    #[arg(long, value_name = "FILE=ENTITLEMENTS", value_parser = parse_file_entitlements)]
    pub entitle: Vec<(PathBuf, Vec<Option<elfsig_core::Entitlement>>)>,
    /// Packages (.deb), or directories holding them (searched recursively).
    #[arg(value_name = "PACKAGE", required = true)]
    pub packages: Vec<PathBuf>,
}

/// `elfsig deb verify`.
#[derive(Debug, Args)]
pub struct DebVerifyArgs {
    /// A trusted certificate (PEM, possibly several, or DER); may be repeated.
    #[arg(long, value_name = "CERT", required = true)]
    pub cert: Vec<PathBuf>,
    /// The Debian architecture of this host, as for `deb sign`.
    #[arg(long, value_name = "ARCH", default_value = crate::architecture::Machines::host_debian())]
    pub architecture: String,
    /// Also read package names from standard input, one per line, as APT's
    /// `DPkg::Pre-Install-Pkgs` gives them.
    #[arg(long)]
    pub apt_hook: bool,
    /// Packages (.deb), or directories holding them (searched recursively).
    #[arg(value_name = "PACKAGE", required_unless_present = "apt_hook")]
    pub packages: Vec<PathBuf>,
}

/// `elfsig oci`.
#[derive(Debug, Args)]
pub struct OciArgs {
    /// What to do with the image.
    #[command(subcommand)]
    pub command: OciCommand,
}

/// The `oci` commands.
#[derive(Debug, Subcommand)]
pub enum OciCommand {
    /// Sign every ELF file in an image's layers that `sign --recursive` would sign, keeping
    /// every other byte of each layer (owners, modes, extended attributes, links, whiteouts,
    /// times, order); the layers' digests, the configuration's diff_ids, the configuration,
    /// manifest and index follow. The result is a new image: signatures made of the old one no
    /// longer match it. Layers are done on all cores.
    Sign(OciSignArgs),
    /// Check that every ELF file in an image's layers that the module checks carries a valid
    /// signature by a trusted certificate, and name, layer by layer, each one it would refuse.
    Verify(OciVerifyArgs),
}

/// `elfsig oci sign`.
#[derive(Debug, Args)]
#[command(mut_arg("key", |key| key.help("The private key, as for `sign`: a file, or a `pkcs11:` URI")))]
#[command(mut_arg("cert", |cert| cert.help("The key's certificate (PEM or DER)")))]
pub struct OciSignArgs {
    /// The key and its certificate.
    #[command(flatten)]
    pub signing: SigningKeyArgs,
    /// Write the signed image to OUTPUT (a new directory for a layout, a file for an archive)
    /// instead of replacing IMAGE in place (a layout keeps the old blobs beside the new).
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: Option<PathBuf>,
    /// The images to sign in a multi-platform image, by OCI architecture (amd64, arm64, ...);
    /// may be repeated; `all` for every one. This machine's by default; the others are left as
    /// they are.
    #[arg(long = "architecture", value_name = "ARCH")]
    pub architectures: Vec<String>,
    /// Entitle the program at FILE (an absolute path in the image) to what `sign --entitle`
    /// names, comma-separated (`/usr/bin/python3.13=jit`); may be repeated, once per file.
    /// `none` grants nothing. Other files keep what their signature granted.
    #[arg(long, value_name = "FILE=ENTITLEMENTS", value_parser = parse_file_entitlements)]
    pub entitle: Vec<(PathBuf, Vec<Option<elfsig_core::Entitlement>>)>,
    /// The image: an OCI image layout (a directory) or an OCI archive (a file).
    #[arg(value_name = "IMAGE")]
    pub image: PathBuf,
}

/// `elfsig oci verify`.
#[derive(Debug, Args)]
pub struct OciVerifyArgs {
    /// A trusted certificate (PEM, possibly several, or DER); may be repeated.
    #[arg(long, value_name = "CERT", required = true)]
    pub cert: Vec<PathBuf>,
    /// The images to check in a multi-platform image, as for `oci sign`.
    #[arg(long = "architecture", value_name = "ARCH")]
    pub architectures: Vec<String>,
    /// The image: an OCI image layout (a directory) or an OCI archive (a file).
    #[arg(value_name = "IMAGE")]
    pub image: PathBuf,
}

/// `elfsig status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One JSON object (schema in kmod/README.md).
    #[arg(long)]
    pub json: bool,
}

/// `elfsig mode`.
#[derive(Debug, Args)]
pub struct ModeArgs {
    /// The mode to set; without it, the mode is shown. Permissive is refused while locked.
    #[arg(value_enum)]
    pub mode: Option<ModeArg>,
}

/// A mode, as the command line names it.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Refuse (EACCES) what does not verify.
    Enforce,
    /// Log and count what would be refused, and allow it.
    Permissive,
}

/// `elfsig loader`.
#[derive(Debug, Args)]
pub struct LoaderArgs {
    /// The policy to set; without it, the policy is shown. Allow is refused while locked.
    #[arg(value_enum)]
    pub policy: Option<LoaderArg>,
}

/// A loader policy, as the command line names it.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LoaderArg {
    /// Let the loader run programs directly; the mapping guard checks what it maps.
    Allow,
    /// Refuse running the loader directly.
    Deny,
}

/// `elfsig runtime`.
#[derive(Debug, Args)]
pub struct RuntimeArgs {
    /// The setting; without it, the setting is shown. Off is refused while locked.
    #[arg(value_enum)]
    pub rules: Option<RuntimeArg>,
}

/// The run-time rules, as the command line names them.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RuntimeArg {
    /// Refuse executable memory that is no signed file's to programs without jit (the default).
    Enforce,
    /// Allow it.
    Off,
}

/// `elfsig untrusted`.
#[derive(Debug, Args)]
pub struct UntrustedArgs {
    /// The policy to set; without it, the policy is shown. Verify is refused while locked.
    #[arg(value_enum)]
    pub policy: Option<UntrustedArg>,
}

/// What happens to files on untrusted mounts, as the command line names it.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum UntrustedArg {
    /// Refuse them (the default).
    Refuse,
    /// Verify them at every exec and mapping, never caching a verdict: their owner or daemon
    /// decides what later reads return.
    Verify,
}

/// `elfsig keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the private key (PKCS#8 PEM, mode 0600); or a `pkcs11:` URI naming a
    /// token and object=LABEL, to make the key pair on the token, whose private key never
    /// leaves it.
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    /// Where to write the certificate (PEM; DER with --der).
    #[arg(long, value_name = "CERT")]
    pub cert: PathBuf,
    /// The key's algorithm: RSA (the default, of --bits bits), or ECDSA on NIST P-256 or P-384
    /// (the kernel verifies ECDSA when built with CONFIG_CRYPTO_ECDSA).
    #[arg(long, value_enum, default_value_t = crate::crypto::public_key::Algorithm::Rsa)]
    pub algorithm: crate::crypto::public_key::Algorithm,
    /// RSA key size (3072 when not given).
    #[arg(long, value_parser = parse_bits)]
    pub bits: Option<usize>,
    /// Certificate subject: an RFC 4514 name such as "CN=Build key,O=Example", or a plain
    /// common name.
    #[arg(long, value_name = "NAME", default_value = crate::crypto::cert::DEFAULT_SUBJECT)]
    pub subject: String,
    /// Write the certificate as DER (for `keyctl padd asymmetric`) instead of PEM.
    #[arg(long)]
    pub der: bool,
    /// Overwrite KEY and CERT if they exist.
    #[arg(long)]
    pub force: bool,
}

/// `elfsig sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The key and its certificate.
    #[command(flatten)]
    pub signing: SigningKeyArgs,
    /// Write the signed file here instead of replacing FILE (one FILE only).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Entitle the program, in its signature, to what the kernel otherwise refuses: `jit`
    /// (make memory executable at run time) or `debugger` (write other processes' code); may
    /// be repeated. `none` grants nothing. Without it, a signed file re-signed keeps what its
    /// signature granted.
    #[arg(long, value_name = "ENTITLEMENT", value_parser = parse_entitlement)]
    pub entitle: Vec<Option<elfsig_core::Entitlement>>,
    /// The files to sign.
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// `elfsig verify`.
#[derive(Debug, Args)]
#[command(mut_arg("recursive", |recursive| recursive.help(
    "Verify every ELF program and library under DIR (may be repeated), leaving alone what `sign --recursive` \
     leaves alone"
)))]
#[command(mut_arg("files", |files| files.help("Files to verify")))]
pub struct VerifyArgs {
    /// A trusted certificate (PEM, possibly several, or DER); may be repeated.
    #[arg(long, value_name = "CERT", required = true)]
    pub cert: Vec<PathBuf>,
    /// The files to verify.
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// `--key` and `--cert`, the key that signs and its certificate, as `sign` describes them;
/// `deb sign` and `policy sign` take them alike and word their help their own way (`mut_arg`).
#[derive(Debug, Args)]
pub struct SigningKeyArgs {
    /// The private key: a file (PKCS#8, PKCS#1 or SEC1 PEM), or a `pkcs11:` URI naming a key
    /// on a token (RFC 7512: token=, object=, id=; pin-source=, module-path= or
    /// ELFSIG_PKCS11_MODULE; the PIN from pin-source, or ELFSIG_PKCS11_PIN).
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    /// The key's certificate (PEM or DER); it names the signer.
    #[arg(long, value_name = "CERT")]
    pub cert: PathBuf,
}

/// FILE arguments and `--recursive` directories, as `sign` describes them; `verify` takes them
/// alike and words their help its own way (`mut_arg`).
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Sign every ELF program and library under DIR (may be repeated); kernel modules, objects,
    /// debug files, firmware and files that are not ELF are left alone, and counted.
    #[arg(short, long, value_name = "DIR")]
    pub recursive: Vec<PathBuf>,
    /// Files to sign; signed files are re-signed, replacing their signature.
    #[arg(value_name = "FILE", required_unless_present = "recursive")]
    pub files: Vec<PathBuf>,
}

/// `elfsig inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// One JSON object per file, one per line (schema in docs/FORMAT.md).
    #[arg(long)]
    pub json: bool,
    /// Files to inspect.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// `elfsig remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Files to restore to what they were before signing.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// An entitlement's name, or `none` (`None`).
fn parse_entitlement(value: &str) -> Result<Option<elfsig_core::Entitlement>, String> {
    use elfsig_core::Entitlement;
    if value == "none" {
        return Ok(None);
    }
    Entitlement::from_name(value.as_bytes()).map(Some).ok_or_else(|| {
        let names: Vec<&str> = Entitlement::ALL.iter().map(|e| e.name()).collect();
        format!("must be one of {}, or none", names.join(", "))
    })
}

/// `FILE=ENTITLEMENT[,ENTITLEMENT...]`, FILE an absolute path to a file, without `..` or a
/// trailing `/` (repeated `/`s are one, a `.` inside is dropped); the last `=` ends it.
fn parse_file_entitlements(value: &str) -> Result<(PathBuf, Vec<Option<elfsig_core::Entitlement>>), String> {
    use std::path::{Component, Path};
    let (file, words) = value.rsplit_once('=').ok_or("must be FILE=ENTITLEMENTS, as /usr/bin/python3.13=jit")?;
    let mut normal = PathBuf::from("/");
    for component in Path::new(file).components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => normal.push(name),
            _ => return Err(format!("{file:?}: name the file without .. (or a leading .)")),
        }
    }
    if !file.starts_with('/') || file.ends_with('/') || normal == Path::new("/") {
        return Err(format!("{file:?} is not an absolute path to a file"));
    }
    let entitlements = words.split(',').map(parse_entitlement).collect::<Result<_, _>>()?;
    Ok((normal, entitlements))
}

fn parse_bits(value: &str) -> Result<usize, String> {
    let bits = crate::crypto::key::KEY_BITS;
    value
        .parse()
        .ok()
        .filter(|b| bits.contains(b))
        .ok_or_else(|| format!("must be one of {}", bits.map(|b| b.to_string()).join(", ")))
}
