//! Which SHA-256 the guest's kernel runs, for the report. elfsig's module and IMA both ask the
//! kernel's crypto API for `sha256` and get its best implementation: `sha256-ni`, the x86 SHA
//! extensions, on 6.12 when the CPU has them; from 6.16 on the crypto API's `sha256-lib`, whose
//! library code picks SHA-NI by the same CPU flag. QEMU's TCG emulates the extensions from 8.2
//! on; without them the kernel hashes with AVX2 or generic code, several times the instructions.

/// Whether the kernel's `sha256` runs the SHA extensions.
pub(crate) fn uses_sha_ni() -> bool {
    let crypto = std::fs::read_to_string("/proc/crypto").unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_has = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "sha_ni"));
    match best_driver(&crypto).as_deref() {
        Some("sha256-ni") => true,
        Some("sha256-lib") => cpu_has,
        _ => false,
    }
}

/// The driver of `/proc/crypto`'s highest-priority `sha256`.
fn best_driver(crypto: &str) -> Option<String> {
    crypto
        .split("\n\n")
        .filter_map(|entry| {
            let field = |key: &str| {
                entry.lines().find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    (name.trim() == key).then(|| value.trim().to_owned())
                })
            };
            (field("name")? == "sha256").then_some(())?;
            Some((field("priority")?.parse::<i64>().ok()?, field("driver")?))
        })
        .max_by_key(|(priority, _)| *priority)
        .map(|(_, driver)| driver)
}

#[cfg(test)]
mod tests {
    use super::best_driver;

    #[test]
    fn the_highest_priority_sha256_is_the_one_used() {
        let crypto = "name         : sha256\ndriver       : sha256-generic\npriority     : 100\n\n\
                      name         : sha224\ndriver       : sha224-ni\npriority     : 250\n\n\
                      name         : sha256\ndriver       : sha256-ni\npriority     : 250\n\n\
                      name         : sha256\ndriver       : sha256-avx2\npriority     : 170\n";
        assert_eq!(best_driver(crypto).as_deref(), Some("sha256-ni"));
        assert_eq!(best_driver("name : sha1\ndriver : sha1-generic\npriority : 100\n"), None);
    }
}
