//! Any bytes as a policy, signed or a body alone, as the kernel module reads what root writes
//! to its control file: parsing never panics, what parses is consistent (every listed digest
//! found, nothing else), and writing what was read gives the same bytes back: one policy, one
//! encoding.
#![no_main]

use elfsig_core::policy::{self, Counts, Policy, SignedPolicy, DIGEST_LEN};
use libfuzzer_sys::fuzz_target;

fn check(body: &[u8], policy: &Policy<'_>) {
    let digests: Vec<[u8; DIGEST_LEN]> = policy.digests().collect();
    let revoked: Vec<&[u8]> = policy.revoked_certs().collect();
    let trusted: Vec<&[u8]> = policy.trusted_certs().collect();
    let counts = policy.counts();
    assert_eq!(
        counts,
        Counts {
            digests: digests.len() as u32,
            revoked_certs: revoked.len() as u32,
            trusted_certs: trusted.len() as u32
        }
    );
    for digest in &digests {
        assert!(policy.revokes(digest));
    }
    // A digest next to each listed one is found exactly when it is listed too.
    for digest in &digests {
        let mut near = *digest;
        near[DIGEST_LEN - 1] = near[DIGEST_LEN - 1].wrapping_add(1);
        assert_eq!(policy.revokes(&near), digests.contains(&near));
    }
    let cert_bytes = revoked.iter().chain(&trusted).map(|c| c.len()).sum();
    let mut written = vec![0u8; policy::body_len(counts, cert_bytes).unwrap()];
    policy::write_body(&mut written, policy.serial, &digests, &revoked, &trusted).unwrap();
    assert_eq!(written, body);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(signed) = SignedPolicy::parse(data) {
        check(signed.body, &signed.policy);
        let trailer = policy::write_trailer(signed.signature.len()).unwrap();
        let mut whole = signed.body.to_vec();
        whole.extend_from_slice(signed.signature);
        whole.extend_from_slice(&trailer);
        assert_eq!(whole, data);
    }
    if let Ok(policy) = Policy::parse(data) {
        check(data, &policy);
    }
});
