//! The system calls std does not offer: mounting, loading and unloading modules, adding keys,
//! powering off. The only module with `unsafe`.
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
    // SAFETY: a valid out-parameter for the status.
    let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
    check(ret.into()).map(|_| status)
}

/// Runs `path` with fault injection armed for it alone: the child marks itself
/// (`/proc/self/make-it-fail`) just before `execve`, so the fault-injection points configured with
/// `task-filter` fail only in its exec and what follows.
pub fn run_with_faults(path: &str) -> io::Result<std::process::Output> {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(path);
    // SAFETY: the closure makes only async-signal-safe calls (open, write, close) on a
    // NUL-terminated literal, as pre_exec requires.
    unsafe {
        command.pre_exec(|| {
            let fd = libc::open(c"/proc/self/make-it-fail".as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let written = libc::write(fd, b"1".as_ptr().cast(), 1);
            libc::close(fd);
            if written == 1 { Ok(()) } else { Err(io::Error::last_os_error()) }
        })
    };
    command.output()
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
