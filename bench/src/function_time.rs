//! How long the kernel spent in one of its functions while something ran, from tracefs's
//! function graph tracer limited to that function: the sum of its calls' durations, on the
//! guest's clock (under `-icount`, instructions). The tracer is set up before and taken down
//! after the work (whatever happens), so the ftrace updates this costs fall outside what the
//! caller times. The function must return: one that ends its task (a kthread's main function)
//! never shows a duration.

use elfsig_guest::harness::Context;

const TRACEFS: &str = "/sys/kernel/tracing";

/// Runs `work` with `function`'s calls traced; its result, and the milliseconds the calls took
/// (0 when it was not called).
pub(crate) fn around<T>(function: &str, work: impl FnOnce() -> T) -> Result<(T, f64), String> {
    let tracer = Tracer::start(function)?;
    let result = work();
    let trace = tracer.stop()?;
    Ok((result, milliseconds(&trace, function)?))
}

fn write(file: &str, value: &str) -> Result<(), String> {
    std::fs::write(format!("{TRACEFS}/{file}"), value).context(&format!("write {value:?} to {TRACEFS}/{file}"))
}

/// The function graph tracer, on: taken down when dropped, however the work ended.
struct Tracer;

impl Tracer {
    fn start(function: &str) -> Result<Tracer, String> {
        write("tracing_on", "0")?;
        write("current_tracer", "nop")?;
        let tracer = Tracer;
        write("set_ftrace_filter", function)?;
        // The function's name on its return line too, when other events came between its
        // call and its return (a bare `}` otherwise).
        write("options/funcgraph-tail", "1")?;
        write("trace", "")?;
        write("current_tracer", "function_graph")?;
        write("tracing_on", "1")?;
        Ok(tracer)
    }

    /// The trace, the tracer stopped.
    fn stop(self) -> Result<String, String> {
        write("tracing_on", "0")?;
        std::fs::read_to_string(format!("{TRACEFS}/trace")).context("read the trace")
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        for (file, value) in
            [("tracing_on", "0"), ("current_tracer", "nop"), ("set_ftrace_filter", ""), ("options/funcgraph-tail", "0")]
        {
            let _ = write(file, value);
        }
    }
}

/// The durations of `function`'s calls in a function graph (`0) * 67889.08 us |  alg_test();`,
/// or `} /* alg_test */` when the graph shows its children or other events), summed, in ms. A
/// call without its return, or a lost event, is an error: the sum would be short.
fn milliseconds(trace: &str, function: &str) -> Result<f64, String> {
    let leaf = format!("{function}();");
    let entry = format!("{function}() {{");
    let end = format!("/* {function} */");
    let (mut total, mut entries, mut returns) = (0.0, 0, 0);
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        if line.contains("LOST") && line.contains("EVENTS") {
            return Err(format!("the function graph lost events: {line:?}"));
        }
        let Some((duration, name)) = line.rsplit_once('|') else { continue };
        let name = name.trim();
        if name == entry {
            entries += 1;
            continue;
        }
        if name != leaf && !(name.starts_with('}') && name.ends_with(&end)) {
            continue;
        }
        if name != leaf {
            returns += 1;
        }
        let us = duration
            .trim_end()
            .strip_suffix("us")
            .and_then(|d| d.split_whitespace().last())
            .and_then(|d| d.parse::<f64>().ok())
            .ok_or_else(|| format!("no duration in the function graph's line {line:?}"))?;
        total += us / 1000.0;
    }
    if entries != returns {
        return Err(format!("{function} was entered {entries} times and returned {returns} times in the trace"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::milliseconds;

    /// A leaf call, a call whose return came after other events, markers, the process column,
    /// other functions' lines; a call that never returned, lost events and no duration refused.
    #[test]
    fn durations_are_summed_from_the_graph() {
        let trace = "# tracer: function_graph\n\
                     #\n \
                     0) * 67889.08 us |  alg_test();\n \
                     0)               |  alg_test() {\n \
                     ------------------------------------------\n \
                     0) + 10.920 us   |  } /* alg_test */\n \
                     0)  modprob-325  |   3.000 us    |  alg_test();\n \
                     0)   3.000 us    |  cryptomgr_probe();\n";
        let ms = milliseconds(trace, "alg_test").unwrap();
        assert!((ms - 67.903).abs() < 1e-9, "{ms}");
        assert_eq!(milliseconds("# tracer: function_graph\n", "alg_test").unwrap(), 0.0);
        assert!(milliseconds(" 0)               |  alg_test() {\n", "alg_test").is_err());
        assert!(milliseconds(" CPU:0 [LOST 12 EVENTS]\n", "alg_test").is_err());
        assert!(milliseconds(" 0) * x us |  alg_test();\n", "alg_test").is_err());
    }
}
