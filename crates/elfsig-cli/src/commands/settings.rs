//! `elfsig mode`, `elfsig loader`, `elfsig untrusted`, `elfsig runtime` and `elfsig flush`: thin
//! clients of the module's control files (`elfsig-control`). Without an argument, `mode`,
//! `loader`, `untrusted` and `runtime` show the setting.

use std::process::ExitCode;

use elfsig_control::{Control, Loader, Mode, Runtime, Untrusted};

use crate::cli::{LoaderArg, LoaderArgs, ModeArg, ModeArgs, RuntimeArg, RuntimeArgs, UntrustedArg, UntrustedArgs};
use crate::error::Error;

/// Sets a setting when one is given, then shows it (unless `quiet` after setting it).
fn set_then_show<T>(
    wanted: Option<T>,
    set: impl FnOnce(T) -> Result<(), elfsig_control::Error>,
    show: impl FnOnce() -> Result<String, elfsig_control::Error>,
    quiet: bool,
) -> Result<ExitCode, Error> {
    let setting = wanted.is_some();
    if let Some(wanted) = wanted {
        set(wanted)?;
    }
    if !(setting && quiet) {
        println!("{}", show()?);
    }
    Ok(ExitCode::SUCCESS)
}

/// `elfsig mode [enforce|permissive]`.
pub fn mode(args: &ModeArgs, quiet: bool) -> Result<ExitCode, Error> {
    let control = Control::system();
    let wanted = args.mode.map(|mode| match mode {
        ModeArg::Enforce => Mode::Enforce,
        ModeArg::Permissive => Mode::Permissive,
    });
    let show = || {
        let locked = if control.locked()? { " (locked until reboot)" } else { "" };
        Ok(format!("{}{locked}", control.mode()?))
    };
    set_then_show(wanted, |mode| control.set_mode(mode), show, quiet)
}

/// `elfsig loader [allow|deny]`.
pub fn loader(args: &LoaderArgs, quiet: bool) -> Result<ExitCode, Error> {
    let control = Control::system();
    let wanted = args.policy.map(|policy| match policy {
        LoaderArg::Allow => Loader::Allow,
        LoaderArg::Deny => Loader::Deny,
    });
    set_then_show(wanted, |policy| control.set_loader(policy), || Ok(control.loader()?.to_string()), quiet)
}

/// `elfsig untrusted [refuse|verify]`.
pub fn untrusted(args: &UntrustedArgs, quiet: bool) -> Result<ExitCode, Error> {
    let control = Control::system();
    let wanted = args.policy.map(|policy| match policy {
        UntrustedArg::Refuse => Untrusted::Refuse,
        UntrustedArg::Verify => Untrusted::Verify,
    });
    set_then_show(wanted, |policy| control.set_untrusted(policy), || Ok(control.untrusted()?.to_string()), quiet)
}

/// `elfsig runtime [enforce|off]`.
pub fn runtime(args: &RuntimeArgs, quiet: bool) -> Result<ExitCode, Error> {
    let control = Control::system();
    let wanted = args.rules.map(|rules| match rules {
        RuntimeArg::Enforce => Runtime::Enforce,
        RuntimeArg::Off => Runtime::Off,
    });
    let show = || {
        Ok(match control.runtime()? {
            Some(runtime) => runtime.to_string(),
            None => "unknown (the module is older than the setting)".to_owned(),
        })
    };
    set_then_show(wanted, |rules| control.set_runtime(rules), show, quiet)
}

/// `elfsig flush`.
pub fn flush(quiet: bool) -> Result<ExitCode, Error> {
    Control::system().flush()?;
    if !quiet {
        eprintln!("elfsig: the verdict cache is empty; every file is verified again at its next use");
    }
    Ok(ExitCode::SUCCESS)
}
