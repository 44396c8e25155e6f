//! The system calls std does not offer: mounting, loading and unloading modules, adding keys,
//! the audit netlink socket, powering off. The only module with `unsafe`.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in string"))
}

/// Mounts `fstype` on `target`, creating the directory.
pub fn mount(fstype: &str, target: &str) -> io::Result<()> {
    std::fs::create_dir_all(target)?;
    let (source, fstype_c, target_c) = (cstring(fstype)?, cstring(fstype)?, cstring(target)?);
    // SAFETY: the strings are NUL-terminated and outlive the call; no data argument.
    let ret = unsafe { libc::mount(source.as_ptr(), target_c.as_ptr(), fstype_c.as_ptr(), 0, std::ptr::null()) };
    check(ret.into()).map(|_| ())
}

/// Loads a kernel module from `path` with `params` (`finit_module`).
pub fn load_module(path: &Path, params: &str) -> io::Result<()> {
    let file = File::open(path)?;
    let params = cstring(params)?;
    // SAFETY: a valid open fd and a NUL-terminated parameter string; flags 0.
    let ret = unsafe { libc::syscall(libc::SYS_finit_module, file.as_raw_fd(), params.as_ptr(), 0) };
    check(ret).map(|_| ())
}

/// Unloads the module `name` (`delete_module`), failing rather than waiting when it is in use.
pub fn unload_module(name: &str) -> io::Result<()> {
    let name = cstring(name)?;
    // SAFETY: a NUL-terminated module name; O_NONBLOCK as the kernel expects for rmmod.
    let ret = unsafe { libc::syscall(libc::SYS_delete_module, name.as_ptr(), libc::O_NONBLOCK) };
    check(ret).map(|_| ())
}

/// Adds a key (`add_key`) of `key_type` with `description` and `payload` to keyring `keyring`.
pub fn add_key(key_type: &str, description: &str, payload: &[u8], keyring: i32) -> io::Result<i32> {
    let (key_type, description) = (cstring(key_type)?, cstring(description)?);
    // SAFETY: NUL-terminated strings and a payload slice valid for the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            key_type.as_ptr(),
            description.as_ptr(),
            payload.as_ptr(),
            payload.len(),
            keyring,
        )
    };
    check(ret).map(|serial| serial as i32)
}

/// Unlinks `key` from `keyring` (`keyctl unlink`).
pub fn unlink_key(key: i32, keyring: i32) -> io::Result<()> {
    const KEYCTL_UNLINK: libc::c_long = 9;
    // SAFETY: keyctl with two integer arguments.
    let ret = unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_UNLINK, key, keyring) };
    check(ret).map(|_| ())
}

/// Sets the extended attribute `name` of `path` to `value`.
pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    let (path, name) = (cstring(&path.to_string_lossy())?, cstring(name)?);
    // SAFETY: NUL-terminated strings and a value slice valid for the call.
    let ret = unsafe { libc::setxattr(path.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    check(ret.into()).map(|_| ())
}

/// Drops capability `cap` (e.g. `CAP_SYS_ADMIN`, 21) from this thread's effective and
/// permitted sets, for good: the thread stays root for file permissions but loses the privilege.
pub fn drop_capability(cap: u32) -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let (word, bit) = ((cap / 32) as usize, 1u32 << (cap % 32));
    let mut header = Header { version: VERSION_3, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: a version-3 header and room for its two data words.
    check(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) })?;
    let slot = data.get_mut(word).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    slot.effective &= !bit;
    slot.permitted &= !bit;
    // SAFETY: as above, with the sets read back minus one capability.
    check(unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) }).map(|_| ())
}

/// Forks; the child runs `child` and exits with its return value without unwinding or running
/// destructors. Returns the child's pid. Only for single-threaded callers.
pub fn fork(child: impl FnOnce() -> i32) -> io::Result<libc::pid_t> {
    // SAFETY: the caller is single-threaded, so the child inherits no lock held by another
    // thread; the child leaves through _exit.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            let code = child();
            // SAFETY: ends the child without running the parent's atexit handlers.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(pid),
    }
}

/// Waits for child `pid`; returns its exit status.
pub fn wait(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: a valid out-parameter for the status.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        match check(ret.into()) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            result => return result.map(|_| status),
        }
    }
}

/// How an exec went, seen by a tracer. A program counts as run only if the kernel loaded it:
/// the tracer sees the stop that follows a successful `execve`, before the program's first
/// instruction. Anything that dies before that stop never ran a single instruction of it,
/// whatever killed it.
#[derive(Debug)]
pub enum Traced {
    /// `execve` failed with this errno; nothing was loaded.
    NotLoaded(i32),
    /// The child died of this signal before its exec completed (the kernel kills a process
    /// whose exec fails past the point of no return): nothing was loaded.
    KilledInExec(i32),
    /// The kernel loaded the program; it then ended with `status`, printing `stdout`.
    Loaded {
        /// How it ended.
        status: std::process::ExitStatus,
        /// What it wrote to its standard output.
        stdout: Vec<u8>,
    },
}

/// ptrace's unused address and data arguments (pointer-sized: the call is variadic).
const NONE: *mut libc::c_void = std::ptr::null_mut();

/// The exit code of a child whose set-up before `execve` failed (no errno is 255).
const SETUP_FAILED: i32 = 255;

/// Runs `path` with `args` (empty environment, stderr to /dev/null) under `ptrace` to tell
/// whether the kernel loaded it. With `faults`, fault injection is armed for the child alone:
/// it marks itself (`/proc/self/make-it-fail`) just before `execve`, so the fault-injection
/// points configured with `task-filter` fail only in its exec and what follows. Unlike std's
/// `Command`, nothing is judged from how the child died: a child that cannot report a failed
/// exec through a pipe (std aborts then) is still told apart from a program that ran.
/// Safe to call from several threads: each child is traced by the thread that forked it.
pub fn run_traced(path: &str, args: &[&str], faults: bool) -> io::Result<Traced> {
    let program = cstring(path)?;
    let args = args.iter().map(|a| cstring(a)).collect::<io::Result<Vec<_>>>()?;
    let argv: Vec<*const libc::c_char> = std::iter::once(program.as_ptr())
        .chain(args.iter().map(|a| a.as_ptr()))
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let devnull = File::options().write(true).open("/dev/null")?;
    let mut fds = [0; 2];
    // SAFETY: a valid array for the two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }.into())?;
    // SAFETY: the descriptors were just created and are owned here alone.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
    };
    // SAFETY: between fork and execve the child makes only async-signal-safe calls (ptrace,
    // dup2, open, write, close, execve, _exit) on data prepared before the fork, so it
    // cannot meet a lock another thread held; it always leaves through execve or _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe {
            let ok = libc::ptrace(libc::PTRACE_TRACEME, 0, NONE, NONE) == 0
                && libc::dup2(writer.as_raw_fd(), 1) == 1
                && libc::dup2(devnull.as_raw_fd(), 2) == 2
                && (!faults || {
                    let fd = libc::open(c"/proc/self/make-it-fail".as_ptr(), libc::O_WRONLY);
                    let written = fd >= 0 && libc::write(fd, b"1".as_ptr().cast(), 1) == 1;
                    written && libc::close(fd) == 0
                });
            if ok {
                libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
                libc::_exit(*libc::__errno_location());
            }
            libc::_exit(SETUP_FAILED)
        }
    }
    check(pid.into())?;
    drop(writer);
    // Until the exec stop: a stop for any other signal is passed on.
    let status = loop {
        let status = wait(pid)?;
        if !libc::WIFSTOPPED(status) {
            break status;
        }
        let signal = libc::WSTOPSIG(status);
        if signal == libc::SIGTRAP {
            // Loaded: let it go without the SIGTRAP that marked the exec.
            // SAFETY: the child is in a ptrace stop; a failure (it was killed meanwhile)
            // shows in the next wait.
            unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, NONE, NONE) };
            let mut stdout = Vec::new();
            let read = std::io::Read::read_to_end(&mut &reader, &mut stdout);
            let status = wait(pid)?;
            read?;
            use std::os::unix::process::ExitStatusExt;
            return Ok(Traced::Loaded { status: std::process::ExitStatus::from_raw(status), stdout });
        }
        // SAFETY: the child is in a ptrace stop; restart it with its signal.
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, NONE, signal as usize as *mut libc::c_void) };
    };
    if libc::WIFSIGNALED(status) {
        return Ok(Traced::KilledInExec(libc::WTERMSIG(status)));
    }
    match libc::WEXITSTATUS(status) {
        SETUP_FAILED => Err(io::Error::other("the child could not set itself up for exec")),
        errno => Ok(Traced::NotLoaded(errno)),
    }
}

/// Ends the VM. The test kernel has no ACPI, so powering off only halts; QEMU runs with
/// `-no-reboot`, so rebooting makes it exit.
pub fn power_off() -> ! {
    // SAFETY: flushes filesystems; no arguments.
    unsafe { libc::sync() };
    // SAFETY: reboot with a valid command; only returns on failure.
    unsafe { libc::reboot(libc::RB_AUTOBOOT) };
    std::process::exit(1)
}

/// AUDIT_INTEGRITY_DATA, the type of IMA's appraisal records and of the module's.
pub const INTEGRITY_DATA: u16 = 1800;

/// A record's fields, quotes removed: `audit(…): op=elfsig_exec cause=unsigned … res=0`.
pub fn audit_fields(record: &str) -> std::collections::BTreeMap<String, String> {
    let body = record.split_once("): ").map_or(record, |(_, body)| body);
    body.split(' ')
        .filter_map(|field| field.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
        .collect()
}

/// The kernel's audit netlink socket, registered as the audit daemon: the kernel sends this
/// process every audit record until it is dropped.
#[derive(Debug)]
pub struct AuditDaemon {
    fd: std::os::fd::OwnedFd,
}

const AUDIT_SET: u16 = 1001;
const AUDIT_STATUS_ENABLED: u32 = 1;
const AUDIT_STATUS_PID: u32 = 4;
const AUDIT_STATUS_BACKLOG_LIMIT: u32 = 0x10;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLMSG_HDRLEN: usize = 16;

impl AuditDaemon {
    /// Opens the socket and registers this process as the audit daemon, with audit enabled.
    pub fn register() -> io::Result<Self> {
        // SAFETY: plain socket(2); the descriptor is owned from here on.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_AUDIT) };
        check(fd.into())?;
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let daemon = AuditDaemon { fd: unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) } };
        let timeout = libc::timeval { tv_sec: 0, tv_usec: 200_000 };
        // SAFETY: a timeval of the size given.
        check(
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVTIMEO,
                    (&raw const timeout).cast(),
                    std::mem::size_of::<libc::timeval>() as libc::socklen_t,
                )
            }
            .into(),
        )?;
        // A backlog deep enough that records wait for this reader instead of being lost.
        daemon.set(AUDIT_STATUS_BACKLOG_LIMIT, 1, std::process::id(), 8192)?;
        Ok(daemon)
    }

    /// Sends AUDIT_SET: audit `enabled`, records to `pid` (0: none), and with `extra` =
    /// AUDIT_STATUS_BACKLOG_LIMIT that many records queued at most; waits for the answer.
    fn set(&self, extra: u32, enabled: u32, pid: u32, backlog: u32) -> io::Result<()> {
        let mut message = Vec::with_capacity(NLMSG_HDRLEN + 24);
        message.extend_from_slice(&((NLMSG_HDRLEN + 24) as u32).to_ne_bytes());
        message.extend_from_slice(&AUDIT_SET.to_ne_bytes());
        message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        message.extend_from_slice(&1u32.to_ne_bytes()); // sequence
        message.extend_from_slice(&0u32.to_ne_bytes()); // to the kernel
        // struct audit_status: mask, enabled, failure, pid, rate_limit, backlog_limit (the
        // kernel reads what is given).
        for word in [AUDIT_STATUS_ENABLED | AUDIT_STATUS_PID | extra, enabled, 0, pid, 0, backlog] {
            message.extend_from_slice(&word.to_ne_bytes());
        }
        // SAFETY: sockaddr_nl is plain integers, for which all zeroes is valid.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `message` and `kernel` are valid for the lengths given.
        check(unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                message.as_ptr().cast(),
                message.len(),
                0,
                (&raw const kernel).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        } as libc::c_long)?;
        // The acknowledgement: NLMSG_ERROR with error 0, or the error.
        loop {
            let Some((kind, payload)) = self.receive()? else {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer to AUDIT_SET"));
            };
            if kind == libc::NLMSG_ERROR as u16 {
                let errno = payload.get(..4).map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                return if errno == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-errno)) };
            }
        }
    }

    /// The next message (its type and payload), or `None` when none came within 200 ms.
    fn receive(&self) -> io::Result<Option<(u16, Vec<u8>)>> {
        let mut buf = vec![0u8; 9000];
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Ok(None),
                _ => Err(error),
            };
        }
        let message = buf.get(..n as usize).unwrap_or_default();
        let kind = message.get(4..6).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]));
        // One message per datagram. Not `nlmsg_len`: audit records set it without the header
        // (a quirk audit keeps for its user space), so it would cut their last 16 bytes.
        let payload = message.get(NLMSG_HDRLEN..).unwrap_or_default();
        Ok(Some((kind, payload.to_vec())))
    }

    /// Reads and drops every record, as an audit daemon that writes nothing, until the process
    /// ends: a daemon for runs that cause refusals by the thousand, so that the kernel does not
    /// print each record in its log (which would push out what the checks read there).
    pub fn drain_forever(self) {
        // No allocation in the loop: other threads fork, and a child must not inherit a held
        // allocator lock.
        std::thread::spawn(move || {
            let mut buf = [0u8; 9000];
            loop {
                // SAFETY: `buf` is valid for writes of its length.
                let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
                if n < 0
                    && !matches!(io::Error::last_os_error().kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
                {
                    return;
                }
            }
        });
    }

    /// The text of every record of type `kind` received until none came for 200 ms.
    pub fn records(&self, kind: u16) -> io::Result<Vec<String>> {
        let mut records = Vec::new();
        while let Some((got, payload)) = self.receive()? {
            if got == kind {
                records.push(String::from_utf8_lossy(&payload).trim_end_matches('\0').to_owned());
            }
        }
        Ok(records)
    }
}

impl Drop for AuditDaemon {
    /// Unregisters, and disables audit again.
    fn drop(&mut self) {
        let _ = self.set(0, 0, 0, 0);
    }
}
