//! How long the kernel spent in one of its functions while something ran, from tracefs's
//! function graph tracer limited to that function: the sum of its calls' durations, on the
//! guest's clock (under `-icount`, instructions). The tracer is set up before and taken down
//! after the work, so the ftrace updates that costs fall outside what the caller times.

use elfsig_guest::harness::Context;

const TRACEFS: &str = "/sys/kernel/tracing";

/// Runs `work` with `function`'s calls traced; its result, and the milliseconds the calls took
/// (0 when it was not called).
pub(crate) fn around<T>(function: &str, work: impl FnOnce() -> T) -> Result<(T, f64), String> {
    let write = |file: &str, value: &str| {
        std::fs::write(format!("{TRACEFS}/{file}"), value).context(&format!("write {value:?} to {TRACEFS}/{file}"))
    };
    write("tracing_on", "0")?;
    write("current_tracer", "nop")?;
    write("set_ftrace_filter", function)?;
    write("trace", "")?;
    write("current_tracer", "function_graph")?;
    write("tracing_on", "1")?;
    let result = work();
    write("tracing_on", "0")?;
    let trace = std::fs::read_to_string(format!("{TRACEFS}/trace")).context("read the trace")?;
    write("current_tracer", "nop")?;
    write("set_ftrace_filter", "")?;
    Ok((result, milliseconds(&trace, function)?))
}

/// The durations of `function`'s calls in a function graph (`0) * 67889.08 us |  cryptomgr_test();`,
/// or `}` with the name in a comment when the graph shows its children), summed, in ms.
fn milliseconds(trace: &str, function: &str) -> Result<f64, String> {
    let call = format!("{function}();");
    let end = format!("/* {function} */");
    let mut total = 0.0;
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let Some((duration, name)) = line.split_once('|') else { continue };
        let name = name.trim();
        if name != call && !(name.starts_with('}') && name.ends_with(&end)) {
            continue;
        }
        let us = duration
            .trim_end()
            .strip_suffix("us")
            .and_then(|d| d.split_whitespace().last())
            .and_then(|d| d.parse::<f64>().ok())
            .ok_or_else(|| format!("no duration in the function graph's line {line:?}"))?;
        total += us / 1000.0;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::milliseconds;

    /// A leaf call, a call whose children were traced, markers and other functions' lines.
    #[test]
    fn durations_are_summed_from_the_graph() {
        let trace = "# tracer: function_graph\n\
                     #\n \
                     0) * 67889.08 us |  cryptomgr_test();\n \
                     0)               |  cryptomgr_test() {\n \
                     0)   1.500 us    |    alg_test();\n \
                     0) + 10.920 us   |  } /* cryptomgr_test */\n \
                     0)   3.000 us    |  alg_test();\n";
        let ms = milliseconds(trace, "cryptomgr_test").unwrap();
        assert!((ms - 67.90000).abs() < 1e-9, "{ms}");
        assert_eq!(milliseconds("# tracer: function_graph\n", "cryptomgr_test").unwrap(), 0.0);
        assert!(milliseconds(" 0) * x us |  cryptomgr_test();\n", "cryptomgr_test").is_err());
    }
}
