//! The `elfsig` CLI's admin commands (`status`, `mode`, `loader`, `flush`) against the real
//! module: what they show is what the control files and keyrings hold, what they set is what
//! the module then does, and they refuse where the module refuses (not root, locked). The CLI's
//! own tests run the same commands against a fake control directory.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use elfsig_guest::harness::{Context, Outcome, Suite, control, ensure, refused, run, runs, stats};
use elfsig_guest::image::{self, ELFSIG, HELLO_UNSIGNED, LD_SO};
use serde_json::Value;

/// `elfsig ARGS`, checked to exit with `code`.
fn elfsig(args: &[&str], code: i32) -> Result<Output, String> {
    let out = run(ELFSIG, args).context("exec elfsig")?;
    ensure(out.status.code() == Some(code), || {
        format!("elfsig {args:?} exited with {}, expected {code}: {}", out.status, stderr(&out))
    })?;
    Ok(out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_owned()
}

fn status_json() -> Result<Value, String> {
    let out = elfsig(&["status", "--json"], 0)?;
    serde_json::from_slice(&out.stdout).context("parse elfsig status --json")
}

fn read_control(name: &str) -> Result<String, String> {
    std::fs::read_to_string(control(name)).context(&format!("read {name}"))
}

/// The key ids `status` lists for keyring `name`.
fn key_ids(status: &Value, name: &str) -> Vec<String> {
    status["keyrings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["name"] == name)
        .flat_map(|k| k["keys"].as_array().cloned().unwrap_or_default())
        .filter_map(|key| Some(format!("{}: {}", key["subject"].as_str()?, key["key_id"].as_str()?)))
        .collect()
}

pub(crate) fn cases(suite: &mut Suite<'_>) {
    suite.case("status_shows_what_the_control_files_and_keyrings_hold", || {
        let status = status_json()?;
        let after = stats()?;
        ensure(status["loaded"] == true && status["locked"] == false, || format!("status: {status}"))?;
        ensure(status["mode"].as_str().map(|m| format!("{m}\n")) == Some(read_control("mode")?), || {
            format!("status says mode {}", status["mode"])
        })?;
        ensure(status["loader"].as_str().map(|m| format!("{m}\n")) == Some(read_control("loader")?), || {
            format!("status says loader {}", status["loader"])
        })?;
        ensure(status["mapping_guard"]["state"] == "active", || format!("guard: {}", status["mapping_guard"]))?;
        // Refusals do not move while `status` itself runs (it is signed): they must match.
        for name in ["denied", "mmap_denied", "unsigned", "modified"] {
            ensure(status["counters"][name].as_u64() == after.get(name).copied(), || {
                format!("status says {name} {}, stats {:?}", status["counters"][name], after.get(name))
            })?;
        }
        ensure(status["execs"]["denied"].as_u64() == after.get("denied").copied(), || "execs.denied".into())?;
        ensure(status["refusals"]["unsigned"].as_u64() == after.get("unsigned").copied(), || {
            format!("refusals: {}", status["refusals"])
        })?;
        ensure(status["cache"]["entries"] == 1024 && status["cache"]["used"].as_u64() > Some(0), || {
            format!("cache: {}", status["cache"])
        })?;
        // What applies where: the module's policy, and the filesystems mounted here (/tmp is a
        // tmpfs, whose verdicts are cached).
        let filesystems = &status["filesystems"];
        let cached: Vec<&str> =
            filesystems["cached"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        let policy = read_control("filesystems")?;
        ensure(policy.starts_with(&format!("cache {}\n", cached.join(" "))) && cached.contains(&"ext4"), || {
            format!("status says {filesystems}, the module {policy:?}")
        })?;
        ensure(filesystems["untrusted"] == "refuse" && filesystems["mounted"]["tmpfs"]["policy"] == "cached", || {
            format!("filesystems: {filesystems}")
        })?;
        // Every key listed is one the kernel shows, under the name the kernel gives it.
        let proc_keys = std::fs::read_to_string("/proc/keys").context("read /proc/keys")?;
        let builtin = key_ids(&status, ".builtin_trusted_keys");
        let module = key_ids(&status, ".elfsig");
        // The embedded certificates (on a distribution's kernel the test kernel key's too: its
        // builtin keys are the distribution's).
        let embedded = elfsig_guest::embedded_certs();
        ensure(!builtin.is_empty() && module.len() == embedded, || {
            format!("keyrings: builtin {builtin:?}, module {module:?}: {}", status["keyrings"])
        })?;
        for key in builtin.iter().chain(&module) {
            // (/proc/keys cuts the type to nine characters: `asymmetri`.)
            ensure(proc_keys.lines().any(|l| l.contains(" asymmetri ") && l.contains(key.as_str())), || {
                format!("{key:?} is not in /proc/keys:\n{proc_keys}")
            })?;
        }
        let text = elfsig(&["status"], 0)?;
        let text = String::from_utf8_lossy(&text.stdout);
        let module_key = module[0].rsplit_once(": ").map(|(subject, id)| format!(".elfsig: {subject} (key id {id})"));
        for line in [
            "mode:           enforce\n",
            "mapping guard:  active",
            "untrusted:      refused",
            "memfds:         run and map executable only when sealed",
            &module_key.unwrap_or_default(),
        ] {
            ensure(text.contains(line), || format!("elfsig status has no {line:?}:\n{text}"))?;
        }
        Ok(())
    });

    suite.case("mode_loader_untrusted_and_flush_commands_change_what_the_module_does", || {
        let out = elfsig(&["mode", "permissive"], 0)?;
        ensure(out.stdout == b"permissive\n" && read_control("mode")? == "permissive\n", || "mode permissive".into())?;
        runs(HELLO_UNSIGNED, &[], Some(image::HELLO_OUTPUT))?;
        elfsig(&["mode", "enforce"], 0)?;
        ensure(read_control("mode")? == "enforce\n", || "mode enforce".into())?;
        refused(HELLO_UNSIGNED)?;

        elfsig(&["loader", "deny"], 0)?;
        ensure(read_control("loader")? == "deny\n", || "loader deny".into())?;
        refused(LD_SO)?;
        elfsig(&["-q", "loader", "allow"], 0)?;
        ensure(read_control("loader")? == "allow\n", || "loader allow".into())?;

        let out = elfsig(&["untrusted", "verify"], 0)?;
        ensure(out.stdout == b"verify\n" && read_control("untrusted")? == "verify\n", || "untrusted verify".into())?;
        elfsig(&["-q", "untrusted", "refuse"], 0)?;
        ensure(read_control("untrusted")? == "refuse\n", || "untrusted refuse".into())?;

        ensure(stats()?.get("cache_used").copied() > Some(0), || "the cache is empty before flushing".into())?;
        elfsig(&["flush"], 0)?;
        // `elfsig flush` maps nothing once it has written: the cache holds nothing now.
        let used = stats()?.get("cache_used").copied();
        ensure(used == Some(0), || format!("cache_used is {used:?} after elfsig flush"))
    });

    suite.case("admin_commands_refuse_without_root", || {
        let as_nobody = |args: &[&str]| Command::new(ELFSIG).args(args).uid(65534).gid(65534).output();
        let out = as_nobody(&["mode", "permissive"]).context("exec elfsig as nobody")?;
        let expected = format!("changing {} needs root (CAP_SYS_ADMIN)", control("mode"));
        ensure(out.status.code() == Some(1) && stderr(&out).contains(&expected), || {
            format!("elfsig mode permissive as nobody: {} {}", out.status, stderr(&out))
        })?;
        ensure(read_control("mode")? == "enforce\n", || "the mode changed".into())?;
        let out = as_nobody(&["status"]).context("exec elfsig as nobody")?;
        ensure(out.status.code() == Some(1) && stderr(&out).contains("needs root"), || {
            format!("elfsig status as nobody: {} {}", out.status, stderr(&out))
        })
    });
}

/// What the commands say of a locked module: permissive and allowing the loader refused, with
/// the reason; `status` shows the lock.
pub(crate) fn refused_while_locked() -> Outcome {
    for (args, change) in [
        (&["mode", "permissive"], "switching to permissive"),
        (&["loader", "allow"], "setting the loader policy to allow"),
    ] {
        let out = elfsig(args, 1)?;
        let expected = format!("elfsig: the module is locked until reboot and refuses {change}");
        ensure(stderr(&out) == expected, || format!("elfsig {args:?} said {:?}", stderr(&out)))?;
    }
    ensure(read_control("mode")? == "enforce\n" && read_control("loader")? == "deny\n", || "a setting changed".into())?;
    let status = status_json()?;
    ensure(status["locked"] == true && status["mode"] == "enforce", || format!("status: {status}"))
}
