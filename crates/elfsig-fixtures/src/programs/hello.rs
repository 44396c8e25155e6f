//! elfsig test program. The greeting is in .rodata and the counter in .data, so the output
//! proves that both were loaded correctly.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

static GREETING: &str = "hello from an elfsig Rust fixture";
static COUNTER: AtomicU32 = AtomicU32::new(41);

fn main() {
    let counter = COUNTER.fetch_add(1, Ordering::SeqCst) + 1;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{GREETING}: counter={counter}").expect("write to stdout");
}
