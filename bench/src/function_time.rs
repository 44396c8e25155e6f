//! How long the kernel spent in one of its functions while something ran, from tracefs's
//! function graph tracer limited to that function, on the guest's clock (under `-icount`,
//! instructions): the time during which at least one call was under way, between two markers
//! written around the work. Calls may overlap (the kernel's crypto self-tests run in their own
//! threads, one waiting on another's), so their durations are not summed: a moment counts once.
//! The tracer is set up before and taken down after the work (whatever happens), so the ftrace
//! updates this costs fall outside what the caller times. The function must return: one that
//! ends its task (a kthread's main function) never shows a duration.

use std::time::{Duration, Instant};

use elfsig_guest::harness::Context;

const TRACEFS: &str = "/sys/kernel/tracing";
const STARTED: &str = "elfsig-bench: work started";
const ENDED: &str = "elfsig-bench: work ended";
/// How long calls started during the work may take to return once it ended (a self-test the
/// work set off, still running in its thread).
const SETTLE: Duration = Duration::from_secs(30);

/// Runs `work` with `function`'s calls traced; its result, and the milliseconds during which a
/// call was under way while it ran (0 when it was not called).
pub(crate) fn around<T>(function: &str, work: impl FnOnce() -> T) -> Result<(T, f64), String> {
    let tracer = Tracer::start(function)?;
    write("trace_marker", STARTED)?;
    let result = work();
    write("trace_marker", ENDED)?;
    let trace = tracer.settled(function)?;
    Ok((result, milliseconds(&trace, function)?))
}

fn write(file: &str, value: &str) -> Result<(), String> {
    std::fs::write(format!("{TRACEFS}/{file}"), value).context(&format!("write {value:?} to {TRACEFS}/{file}"))
}

fn read_trace() -> Result<String, String> {
    std::fs::read_to_string(format!("{TRACEFS}/trace")).context("read the trace")
}

/// The settings the parsing relies on, as `(file, value)`: the function's name on its return
/// line too, when other events came between its call and its return (a bare `}` otherwise);
/// every line's time, on the clock the durations are on; durations with the time slept (the
/// waits on other threads are what is measured); no return values, arguments or return
/// addresses on the lines; tracing not paused while the trace is read. An option this kernel
/// does not have is left alone.
const SETTINGS: [(&str, &str); 8] = [
    ("trace_clock", "local"),
    ("options/funcgraph-tail", "1"),
    ("options/funcgraph-abstime", "1"),
    ("options/sleep-time", "1"),
    ("options/funcgraph-retval", "0"),
    ("options/funcgraph-args", "0"),
    ("options/funcgraph-retaddr", "0"),
    ("options/pause-on-trace", "0"),
];

/// The function graph tracer, on: taken down when dropped, however the work ended, and the
/// settings it changed put back.
struct Tracer {
    changed: Vec<(&'static str, String)>,
}

impl Tracer {
    fn start(function: &str) -> Result<Tracer, String> {
        write("tracing_on", "0")?;
        write("current_tracer", "nop")?;
        let mut tracer = Tracer { changed: Vec::new() };
        for (file, value) in SETTINGS {
            let Ok(was) = std::fs::read_to_string(format!("{TRACEFS}/{file}")) else { continue };
            // trace_clock lists every clock, the one in use in brackets.
            let was = match was.split_once('[') {
                Some((_, rest)) => rest.split(']').next().unwrap_or_default().to_owned(),
                None => was.trim().to_owned(),
            };
            if was != value {
                write(file, value)?;
                tracer.changed.push((file, was));
            }
        }
        write("set_ftrace_filter", function)?;
        write("trace", "")?;
        write("current_tracer", "function_graph")?;
        write("tracing_on", "1")?;
        Ok(tracer)
    }

    /// The trace, the tracer stopped once every call it shows has returned (or [`SETTLE`] has
    /// passed: [`milliseconds`] then refuses it).
    fn settled(self, function: &str) -> Result<String, String> {
        let waiting = Instant::now();
        while waiting.elapsed() < SETTLE {
            let (entries, returns) = calls(&read_trace()?, function);
            if entries == returns {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        write("tracing_on", "0")?;
        read_trace()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        for (file, value) in [("tracing_on", "0"), ("current_tracer", "nop"), ("set_ftrace_filter", "")] {
            let _ = write(file, value);
        }
        for (file, value) in &self.changed {
            let _ = write(file, value);
        }
    }
}

/// One line of a function graph with `funcgraph-abstime` (`  58.312345 |   0) * 67889.08 us |
/// alg_test();`): its time in seconds, and the text after its last `|` with what comes before.
fn fields(line: &str) -> Option<(f64, &str, &str)> {
    let (time, rest) = line.split_once('|')?;
    let time = time.trim().parse::<f64>().ok()?;
    let (duration, name) = rest.rsplit_once('|')?;
    Some((time, duration, name.trim()))
}

/// What a line is, for `function`.
enum Line {
    /// A call whose children or other events follow: its return comes later.
    Entry,
    /// A call from its entry at the line's time, for `f64` µs (no children between).
    Leaf(f64),
    /// A return at the line's time, of a call that took `f64` µs.
    Return(f64),
    /// A marker written to `trace_marker`.
    Marker,
    Other,
}

fn classify(duration: &str, name: &str, function: &str) -> Result<Line, String> {
    let us = || {
        duration
            .trim_end()
            .strip_suffix("us")
            .and_then(|d| d.split_whitespace().last())
            .and_then(|d| d.parse::<f64>().ok())
            .ok_or_else(|| format!("no duration in the function graph's line for {name:?}"))
    };
    Ok(if name == format!("{function}() {{") {
        Line::Entry
    } else if name == format!("{function}();") {
        Line::Leaf(us()?)
    } else if name.starts_with('}') && name.ends_with(&format!("/* {function} */")) {
        Line::Return(us()?)
    } else if name.starts_with("/* ") && name.contains("elfsig-bench: ") {
        Line::Marker
    } else if name.contains(function) {
        return Err(format!("a function graph line for {function} of an unknown form: {name:?}"));
    } else {
        Line::Other
    })
}

/// The time of the marker written once the work ended, if the trace has it.
fn ended(trace: &str) -> Option<f64> {
    trace.lines().filter_map(fields).find(|(_, _, name)| name.starts_with("/* ") && name.contains(ENDED)).map(|l| l.0)
}

/// How many calls of `function` the trace shows begun before the work ended (all, without the
/// marker), and how many of those returned. Later calls are cut away anyway.
fn calls(trace: &str, function: &str) -> (usize, usize) {
    let end = ended(trace).unwrap_or(f64::INFINITY);
    let (mut entries, mut returns) = (0, 0);
    for (time, duration, name) in trace.lines().filter_map(fields) {
        match classify(duration, name, function) {
            Ok(Line::Entry) if time < end => entries += 1,
            Ok(Line::Leaf(_)) if time < end => {
                entries += 1;
                returns += 1;
            }
            Ok(Line::Return(us)) if time - us / 1e6 < end => returns += 1,
            _ => {}
        }
    }
    (entries, returns)
}

/// The milliseconds between the markers during which at least one call of `function` was under
/// way. A call without its return, a lost event or a missing marker is an error: the figure
/// would be short.
fn milliseconds(trace: &str, function: &str) -> Result<f64, String> {
    let mut started = None;
    let mut spans = Vec::new();
    for line in trace.lines().filter(|l| !l.trim_start().starts_with('#')) {
        if line.contains("LOST") && line.contains("EVENTS") {
            return Err(format!("the function graph lost events: {line:?}"));
        }
        let Some((time, duration, name)) = fields(line) else { continue };
        match classify(duration, name, function).map_err(|e| format!("{e}: {line:?}"))? {
            Line::Leaf(us) => spans.push((time, time + us / 1e6)),
            Line::Return(us) => spans.push((time - us / 1e6, time)),
            Line::Marker if name.contains(STARTED) => started = Some(time),
            Line::Entry | Line::Marker | Line::Other => {}
        }
    }
    let (Some(started), Some(ended)) = (started, ended(trace)) else {
        return Err(format!("the trace lacks the markers written around the work ({STARTED:?}, {ENDED:?})"));
    };
    let (entries, returns) = calls(trace, function);
    if entries != returns {
        return Err(format!(
            "{function} was entered {entries} times before the work ended and returned {returns} times in the trace"
        ));
    }
    // The union of the spans, each cut to the work's.
    let mut spans: Vec<(f64, f64)> =
        spans.into_iter().map(|(a, b)| (a.max(started), b.min(ended))).filter(|(a, b)| a < b).collect();
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut total, mut reach) = (0.0, f64::NEG_INFINITY);
    for (a, b) in spans {
        if b > reach {
            total += b - a.max(reach);
            reach = b;
        }
    }
    Ok(total * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::{calls, milliseconds};

    const HEAD: &str = "# tracer: function_graph\n#\n";

    fn marked(body: &str) -> String {
        format!(
            "{HEAD}  10.000000 |   0)  modprob-325  |               |  /* elfsig-bench: work started */\n\
             {body}  20.000000 |   0)  sh-1         |               |  /* elfsig-bench: work ended */\n"
        )
    }

    /// A leaf call and a call whose return came after other events; two calls overlapping
    /// (counted once); a call partly outside the markers (cut); other functions' lines.
    #[test]
    fn the_time_under_way_is_measured_once() {
        let trace = marked(
            "  11.000000 |   0) * 1000.000 us |  alg_test();\n\
             \x20 12.000000 |   0)               |  alg_test() {\n\
             \x20 12.500000 |   0)               |  alg_test() {\n\
             \x20 12.600000 |   0) + 100.000 us   |  } /* alg_test */\n\
             \x20 13.000000 |   0) * 1000000 us   |  } /* alg_test */\n\
             \x20 13.500000 |   0)   3.000 us     |  cryptomgr_probe();\n\
             \x20  9.000000 |   0) * 2000000 us   |  alg_test();\n",
        );
        let ms = milliseconds(&trace, "alg_test").unwrap();
        // 11.000-11.001, 12.0-13.0 (once), and 10.0-11.0 of the call from 9.0 to 11.0.
        assert!((ms - 2001.0).abs() < 1e-6, "{ms}");
        assert_eq!(calls(&trace, "alg_test"), (4, 4));
        assert_eq!(milliseconds(&marked(""), "alg_test").unwrap(), 0.0);
        // A call begun after the work ended, still open: cut away, not waited for.
        let late = format!("{trace}  21.000000 |   0)               |  alg_test() {{\n");
        assert_eq!(calls(&late, "alg_test"), (4, 4));
        assert!((milliseconds(&late, "alg_test").unwrap() - 2001.0).abs() < 1e-6);
    }

    /// A call that never returned, lost events, no duration, no markers: refused.
    #[test]
    fn a_short_trace_is_refused() {
        let open = marked("  12.000000 |   0)               |  alg_test() {\n");
        assert_eq!(calls(&open, "alg_test"), (1, 0));
        assert!(milliseconds(&open, "alg_test").is_err());
        assert!(milliseconds(&marked(" CPU:0 [LOST 12 EVENTS]\n"), "alg_test").is_err());
        assert!(milliseconds(&marked("  12.000000 |   0) * x us |  alg_test();\n"), "alg_test").is_err());
        assert!(milliseconds(HEAD, "alg_test").is_err());
        // A form the parsing does not know (an option it did not set): refused, not skipped.
        assert!(
            milliseconds(&marked("  12.000000 |   0) * 1.000 us |  alg_test(); /* ret=0 */\n"), "alg_test").is_err()
        );
    }
}
