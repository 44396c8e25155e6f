//! The raw measurements: parsed from the guest's `ELFSIG-BENCH` lines, written to results.csv,
//! and queried by the report.

use crate::Result;
use elfsig_guest::image;

/// One measurement.
#[derive(Debug, Clone)]
pub struct Record {
    /// Suite (`coreutils`, `exec`, ...).
    pub suite: String,
    /// Case within the suite.
    pub case: String,
    /// Configuration (`baseline`, `elfsig-cold`, `elfsig-warm`, `ima`, or `-`).
    pub config: String,
    /// Run (round) number.
    pub run: usize,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// All measurements of one bench run.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// In the order the guest reported them.
    pub records: Vec<Record>,
}

/// The configurations, in report order.
pub const CONFIGS: [&str; 4] = ["baseline", "elfsig-cold", "elfsig-warm", "ima"];

impl Results {
    /// Parses the consoles of the bench VMs, each of which measured a share of the rounds;
    /// fails unless every one finished without error.
    pub fn parse_all(consoles: &[(&str, &str)]) -> Result<Results> {
        let mut all = Results::default();
        for (label, console) in consoles {
            let part = Results::parse(console).map_err(|e| format!("{label}: {e} (see target/vm/{label}.log)"))?;
            all.records.extend(part.records);
        }
        Ok(all)
    }

    /// Parses one guest's console output; fails unless the guest finished without error.
    pub fn parse(console: &str) -> Result<Results> {
        if let Some(error) = console.lines().find_map(|l| l.strip_prefix(image::BENCH_ERROR)) {
            return Err(format!("the bench failed in the VM: {error}"));
        }
        if !console.lines().any(|l| l.strip_prefix(image::BENCH_DONE) == Some("ok")) {
            return Err("the bench VM did not finish".into());
        }
        let mut records = Vec::new();
        for line in console.lines().filter_map(|l| l.strip_prefix(image::BENCH_MEASUREMENT)) {
            let fields: Vec<&str> = line.split(',').collect();
            let [suite, case, config, run, value, unit] = fields[..] else {
                return Err(format!("bad result line {line:?}"));
            };
            records.push(Record {
                suite: suite.into(),
                case: case.into(),
                config: config.into(),
                run: run.parse().map_err(|_| format!("bad run in {line:?}"))?,
                value: value.parse().map_err(|_| format!("bad value in {line:?}"))?,
                unit: unit.into(),
            });
        }
        if records.is_empty() {
            return Err("the bench VM reported no measurements".into());
        }
        Ok(Results { records })
    }

    /// Fails unless every suite in `suites` reported finite measurements in every
    /// configuration: a suite that silently measured nothing must not make a report.
    pub fn check_complete(&self, suites: &[&str]) -> Result {
        if let Some(bad) = self.records.iter().find(|r| !r.value.is_finite()) {
            return Err(format!("{}/{} ({}) measured {}", bad.suite, bad.case, bad.config, bad.value));
        }
        let mut missing = Vec::new();
        for suite in suites {
            for config in CONFIGS {
                if !self.records.iter().any(|r| r.suite == *suite && r.config == config) {
                    missing.push(format!("{suite} ({config})"));
                }
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("the bench VMs measured nothing for {}", missing.join(", ")))
        }
    }

    /// results.csv: `suite,case,config,run,value,unit`, every raw measurement.
    pub fn csv(&self) -> String {
        let mut out = String::from("suite,case,config,run,value,unit\n");
        for r in &self.records {
            out.push_str(&format!("{},{},{},{},{},{}\n", r.suite, r.case, r.config, r.run, r.value, r.unit));
        }
        out
    }

    /// Each run's ratio of `config` to `reference` for one case, over the runs that measured
    /// both (configurations measured side by side in the same run, so drift between runs
    /// cancels out).
    pub fn paired_ratios_to(&self, suite: &str, case: &str, config: &str, reference: &str) -> Vec<f64> {
        let of = |wanted: &str| -> std::collections::BTreeMap<usize, f64> {
            self.records
                .iter()
                .filter(|r| r.suite == suite && r.case == case && r.config == wanted)
                .map(|r| (r.run, r.value))
                .collect()
        };
        let reference = of(reference);
        of(config)
            .into_iter()
            .filter_map(|(run, value)| reference.get(&run).filter(|b| **b != 0.0).map(|b| value / b))
            .collect()
    }

    /// The mean difference of `config` from `reference` measured in the same run, and the half
    /// width of its 95% interval (Student's t with n - 1 degrees of freedom times the standard
    /// error), both as fractions. One run gives no interval (NaN): nothing can be concluded from
    /// it; two give a very wide one.
    pub fn paired_difference(&self, suite: &str, case: &str, config: &str, reference: &str) -> Option<(f64, f64)> {
        let ratios = self.paired_ratios_to(suite, case, config, reference);
        if ratios.is_empty() {
            return None;
        }
        let (mean, sd) = mean_sd(&ratios);
        let n = ratios.len();
        Some((mean - 1.0, t95(n - 1) * sd / (n as f64).sqrt()))
    }

    /// Whether `suite` measured anything.
    pub fn has(&self, suite: &str) -> bool {
        self.records.iter().any(|r| r.suite == suite)
    }

    /// The values of one case in one configuration, in run order.
    pub fn values(&self, suite: &str, case: &str, config: &str) -> Vec<f64> {
        self.records
            .iter()
            .filter(|r| r.suite == suite && r.case == case && r.config == config)
            .map(|r| r.value)
            .collect()
    }

    /// The unit of a case.
    pub fn unit(&self, suite: &str, case: &str) -> String {
        self.records.iter().find(|r| r.suite == suite && r.case == case).map_or_else(String::new, |r| r.unit.clone())
    }

    /// The cases of a suite, in first-reported order.
    pub fn cases(&self, suite: &str) -> Vec<String> {
        let mut cases: Vec<String> = Vec::new();
        for r in self.records.iter().filter(|r| r.suite == suite) {
            if !cases.contains(&r.case) {
                cases.push(r.case.clone());
            }
        }
        cases
    }
}

/// Sum.
pub fn sum(values: &[f64]) -> f64 {
    values.iter().sum()
}

/// Mean and sample standard deviation.
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = sum(values) / n.max(1.0);
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// The two-sided 95% quantile of Student's t distribution with `df` degrees of freedom (NaN
/// for none), from the usual table; above 30, the normal distribution's 1.96 is close enough.
pub fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => 1.96,
    }
}

/// Median.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console(lines: &[&str]) -> String {
        let mut out = lines.join("\n");
        out.push_str("\nELFSIG-DONE ok\n");
        out
    }

    #[test]
    fn parses_merges_and_pairs_runs() {
        let a = console(&["ELFSIG-BENCH exec,static,baseline,0,100,us", "ELFSIG-BENCH exec,static,ima,0,110,us"]);
        let b =
            console(&["noise", "ELFSIG-BENCH exec,static,baseline,1,200,us", "ELFSIG-BENCH exec,static,ima,1,180,us"]);
        let results = Results::parse_all(&[("a", &a), ("b", &b)]).unwrap();
        assert_eq!(results.values("exec", "static", "baseline"), [100.0, 200.0]);
        assert_eq!(results.paired_ratios_to("exec", "static", "ima", "baseline"), [1.1, 0.9]);
        assert!(results.csv().starts_with("suite,case,config,run,value,unit\nexec,static,baseline,0,100,us\n"));
    }

    #[test]
    fn intervals_follow_students_t_and_one_run_has_none() {
        assert!(t95(0).is_nan());
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(7), 2.365);
        assert_eq!(t95(100), 1.96);
        let one = console(&["ELFSIG-BENCH boot,b,baseline,0,100,s", "ELFSIG-BENCH boot,b,elfsig,0,110,s"]);
        let (diff, interval) =
            Results::parse_all(&[("vm", &one)]).unwrap().paired_difference("boot", "b", "elfsig", "baseline").unwrap();
        assert!((diff - 0.1).abs() < 1e-9 && interval.is_nan());
        // Two runs, ratios 1.1 and 1.3: mean 1.2, sd 0.1414, t(1) = 12.706.
        let two = console(&[
            "ELFSIG-BENCH boot,b,baseline,0,100,s",
            "ELFSIG-BENCH boot,b,elfsig,0,110,s",
            "ELFSIG-BENCH boot,b,baseline,1,100,s",
            "ELFSIG-BENCH boot,b,elfsig,1,130,s",
        ]);
        let (diff, interval) =
            Results::parse_all(&[("vm", &two)]).unwrap().paired_difference("boot", "b", "elfsig", "baseline").unwrap();
        assert!((diff - 0.2).abs() < 1e-9);
        // Half width: t(1) * sd / sqrt(2) = 12.706 * 0.1414 / 1.4142 = 1.2706.
        assert!((interval - 1.2706).abs() < 1e-3, "{interval}");
    }

    #[test]
    fn refuses_unfinished_failed_or_garbled_guests() {
        let unfinished = "ELFSIG-BENCH exec,static,baseline,0,100,us\n";
        let failed = console(&["ELFSIG-BENCH-ERROR coreutils: cp refused"]);
        let garbled = console(&["ELFSIG-BENCH exec,static,baseline,zero,100,us"]);
        let empty = console(&[]);
        for bad in [unfinished, &failed, &garbled, &empty] {
            assert!(Results::parse_all(&[("vm", bad)]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn completeness_wants_every_configuration_of_every_suite() {
        let lines: Vec<String> = CONFIGS.iter().map(|c| format!("ELFSIG-BENCH exec,static,{c},0,100,us")).collect();
        let all = console(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        let results = Results::parse_all(&[("vm", &all)]).unwrap();
        assert!(results.check_complete(&["exec"]).is_ok());
        let err = results.check_complete(&["exec", "apps"]).unwrap_err();
        assert!(err.contains("apps (baseline)"), "{err}");

        let partial = console(&lines[..3].iter().map(String::as_str).collect::<Vec<_>>());
        let err = Results::parse_all(&[("vm", &partial)]).unwrap().check_complete(&["exec"]).unwrap_err();
        assert!(err.contains("exec (ima)"), "{err}");

        let nan = console(&["ELFSIG-BENCH exec,static,baseline,0,NaN,us"]);
        assert!(Results::parse_all(&[("vm", &nan)]).unwrap().check_complete(&[]).is_err());
    }
}
