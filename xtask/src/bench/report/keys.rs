//! report.md's `keys` suite: what the signature's algorithm costs a first exec.

use std::fmt::Write as _;

use crate::bench::results::{Results, mean_sd};

/// What the signature's algorithm costs a first exec, in the VM: the same program signed with
/// RSA-3072 and with ECDSA P-256, every exec cold.
pub(super) fn section(md: &mut String, results: &Results) {
    md.push_str(
        "## keys: a first exec by signature algorithm

The exec suite's tiny static program, signed \
         with RSA-3072 and with ECDSA P-256, executed alternately with the verdict cache flushed before every \
         exec (`elfsig-cold`): the difference is the kernel's signature verification.\n\n\
         | key | µs per cold exec (mean ± sd) | vs RSA-3072 (95% interval) |\n|---|---:|---:|\n",
    );
    for (key, _) in elfsig_guest::image::BENCH_HELLO_BY_KEY {
        let (mean, sd) = mean_sd(&results.values("keys", "cold-exec", key));
        let versus = match results.paired_difference("keys", "cold-exec", key, "rsa-3072") {
            Some((difference, half)) if key != "rsa-3072" => {
                format!("{:+.1}% ± {:.1}%", difference * 100.0, half * 100.0)
            }
            _ => "-".into(),
        };
        let _ = writeln!(md, "| {key} | {mean:.0} ± {sd:.0} | {versus} |");
    }
    md.push('\n');
}
