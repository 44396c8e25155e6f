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
    mount_with(fstype, target, fstype, 0, "")
}

/// Mounts `fstype` from `source` on `target` (which must exist), with mount `flags` and the
/// filesystem's options `data`.
pub fn mount_with(source: &str, target: &str, fstype: &str, flags: libc::c_ulong, data: &str) -> io::Result<()> {
    let (source, target, fstype, data) = (cstring(source)?, cstring(target)?, cstring(fstype)?, cstring(data)?);
    // SAFETY: the strings are NUL-terminated and outlive the call; `data` is a C string, as the
    // filesystems mounted here take their options.
    let ret = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), flags, data.as_ptr().cast()) };
    check(ret.into()).map(|_| ())
}

/// Unmounts `target`.
pub fn unmount(target: &str) -> io::Result<()> {
    let target = cstring(target)?;
    // SAFETY: a NUL-terminated path and a flag.
    check(unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) }.into()).map(|_| ())
}

/// Becomes `uid` and `gid`, with no supplementary groups, for good: what an unprivileged
/// user's process is. For a forked child.
pub fn become_user(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: an empty group list.
    check(unsafe { libc::setgroups(0, std::ptr::null()) }.into())?;
    // SAFETY: plain integer arguments.
    check(unsafe { libc::setresgid(gid, gid, gid) }.into())?;
    // SAFETY: plain integer arguments.
    check(unsafe { libc::setresuid(uid, uid, uid) }.into())?;
    // Changing credentials leaves the process undumpable, which makes its /proc files root's:
    // a user's own process is dumpable (and may write its /proc/self/uid_map).
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) }.into()).map(|_| ())
}

/// Enters a new user namespace, where this unprivileged process is root, and a new mount
/// namespace it owns, whose mounts propagate nowhere: what `unshare -Urm` does, and what
/// rootless containers start from. For a forked child.
pub fn enter_user_namespace() -> io::Result<()> {
    // SAFETY: reads the caller's ids.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: plain flags.
    check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) }.into())?;
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    mount_with("none", "/", "", libc::MS_REC | libc::MS_PRIVATE, "")
}

/// A new memfd (`memfd_create`) named `name`, with `flags` (`MFD_ALLOW_SEALING`, ...).
pub fn memfd(name: &str, flags: libc::c_uint) -> io::Result<File> {
    let name = cstring(name)?;
    // SAFETY: a NUL-terminated name; the descriptor is owned from here on.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    check(fd.into())?;
    // SAFETY: a new descriptor nothing else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

/// Adds `seals` (`F_SEAL_*`) to a memfd.
pub fn add_seals(file: &File, seals: libc::c_int) -> io::Result<()> {
    // SAFETY: fcntl on an open descriptor with an integer argument.
    check(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) }.into()).map(|_| ())
}

/// `execveat(file, "", AT_EMPTY_PATH | AT_EXECVE_CHECK)`: whether the kernel would execute the
/// file, without executing it (EINVAL on kernels without the flag).
pub fn execve_check(file: &File) -> io::Result<()> {
    let argv: [*const libc::c_char; 2] = [c"check".as_ptr(), std::ptr::null()];
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: an open descriptor, an empty NUL-terminated path, NULL-terminated argument and
    // environment arrays; with AT_EXECVE_CHECK the call returns whatever happens.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_execveat,
            file.as_raw_fd(),
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_EXECVE_CHECK,
        )
    };
    check(ret).map(|_| ())
}

/// `command`, which is to be killed by its own `SIGALRM` (default action: the whole process
/// dies, as from `SIGKILL`) `after` it starts: an interval timer, which `execve` keeps, armed
/// in the child just before it execs.
pub fn with_alarm(command: &mut std::process::Command, after: std::time::Duration) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    let timer = libc::itimerval {
        it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 },
        it_value: libc::timeval {
            tv_sec: libc::time_t::try_from(after.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_usec: libc::suseconds_t::from(after.subsec_micros().max(1)),
        },
    };
    // SAFETY: setitimer is async-signal-safe, and the closure touches nothing else.
    unsafe {
        command.pre_exec(move || {
            if libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        })
    }
}

/// A mapping of a file, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

/// Maps `len` bytes of `file` from its start with `prot` and `flags` (`MAP_PRIVATE`,
/// `MAP_SHARED`).
pub fn map(file: &File, len: usize, prot: libc::c_int, flags: libc::c_int) -> io::Result<Mapping> {
    // SAFETY: a new mapping chosen by the kernel, of an open descriptor; it is accessed only
    // through `write_at` (within `len`), and unmapped on drop.
    let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, file.as_raw_fd(), 0) };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Mapping { addr, len })
}

/// Maps `len` bytes of anonymous private memory with `prot`.
pub fn map_anonymous(len: usize, prot: libc::c_int) -> io::Result<Mapping> {
    // SAFETY: a new anonymous mapping chosen by the kernel; accessed only through `Mapping`'s
    // methods (within `len`), and unmapped on drop.
    let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Mapping { addr, len })
}

impl Mapping {
    /// Changes the whole mapping's protection to `prot` (`mprotect`).
    pub fn protect(&self, prot: libc::c_int) -> io::Result<()> {
        // SAFETY: the mapping lives while `self` does, and is `len` bytes long; no Rust
        // reference covers it, so no access made through one is invalidated.
        check(unsafe { libc::mprotect(self.addr, self.len, prot) }.into()).map(|_| ())
    }

    /// Copies the mapping's bytes out, as they are now (through a shared or a private
    /// mapping not written yet: the file's pages).
    pub fn read_all(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; self.len];
        // SAFETY: the mapping lives while `self` does, is `len` bytes long, and no Rust
        // reference covers it; the caller mapped it readable (else the process faults, as a
        // test wants to see).
        unsafe { std::ptr::copy_nonoverlapping(self.addr.cast::<u8>(), bytes.as_mut_ptr(), self.len) };
        bytes
    }

    /// Copies `bytes` into the mapping at `offset` (it must be mapped writable): through a
    /// shared mapping, into the file's pages.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> io::Result<()> {
        let fits = offset.checked_add(bytes.len()).is_some_and(|end| end <= self.len);
        if !fits {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: the range is within the mapping, which lives while `self` does and which no
        // Rust reference covers; the caller mapped it writable (else the process faults, as a
        // test wants to see).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.addr.cast::<u8>().add(offset), bytes.len()) };
        Ok(())
    }

    /// The mapping's start and length, for the kernel (io_uring's registered buffers).
    pub fn iovec(&self) -> libc::iovec {
        libc::iovec { iov_base: self.addr, iov_len: self.len }
    }
}

/// Holds the calling process's `mmap_lock` for reading for a while: faults in every page of an
/// anonymous private mapping of `len` bytes made for the purpose (`MADV_POPULATE_WRITE`, under
/// the lock throughout), then gives them back. A mapping made meanwhile by another thread waits
/// for the lock after its security check.
pub fn hold_mmap_lock(len: usize) -> io::Result<()> {
    // SAFETY: a new anonymous mapping chosen by the kernel, never accessed from Rust, and
    // unmapped below.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: advice on the mapping made above, which nothing else uses.
    let populated = check(unsafe { libc::madvise(addr, len, libc::MADV_POPULATE_WRITE) }.into());
    // SAFETY: unmaps the mapping made above, once.
    unsafe { libc::munmap(addr, len) };
    populated.map(|_| ())
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps a mapping this value made, once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// An io_uring instance, with no submission made: what registering buffers needs.
#[derive(Debug)]
pub struct Ring(std::os::fd::OwnedFd);

impl Ring {
    /// `io_uring_setup` with one entry.
    pub fn new() -> io::Result<Ring> {
        // struct io_uring_params: 120 bytes the kernel fills in, zeroed for no flags.
        let mut params = [0u8; 120];
        // SAFETY: a valid io_uring_params buffer; the descriptor is owned from here on.
        let fd = check(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) })?;
        let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
        // SAFETY: a new descriptor nothing else owns.
        Ok(Ring(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }))
    }

    /// `IORING_REGISTER_BUFFERS`: the kernel pins the pages of `buffer` (FOLL_LONGTERM), and
    /// keeps them until they are unregistered or the ring is closed.
    pub fn register_buffer(&self, buffer: &libc::iovec) -> io::Result<()> {
        const IORING_REGISTER_BUFFERS: libc::c_uint = 0;
        // SAFETY: one valid iovec, read during the call.
        check(unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.0.as_raw_fd(),
                IORING_REGISTER_BUFFERS,
                std::ptr::from_ref(buffer),
                1u32,
            )
        })
        .map(|_| ())
    }

    /// `IORING_UNREGISTER_BUFFERS`: the pages are released.
    pub fn unregister_buffers(&self) -> io::Result<()> {
        const IORING_UNREGISTER_BUFFERS: libc::c_uint = 1;
        // SAFETY: no argument.
        check(unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.0.as_raw_fd(),
                IORING_UNREGISTER_BUFFERS,
                std::ptr::null::<libc::c_void>(),
                0u32,
            )
        })
        .map(|_| ())
    }
}

/// Attaches `image` to a free loop device; returns the device's path.
pub fn loop_attach(image: &str) -> io::Result<String> {
    const LOOP_SET_FD: libc::c_ulong = 0x4C00;
    const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
    let control = File::options().read(true).write(true).open("/dev/loop-control")?;
    // SAFETY: an ioctl without an argument on the loop control device.
    let number = check(unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) }.into())?;
    let device = format!("/dev/loop{number}");
    let backing = File::options().read(true).write(true).open(image)?;
    let loop_device = File::options().read(true).write(true).open(&device)?;
    // SAFETY: LOOP_SET_FD takes the backing file's descriptor as its argument.
    check(unsafe { libc::ioctl(loop_device.as_raw_fd(), LOOP_SET_FD, backing.as_raw_fd()) }.into())?;
    Ok(device)
}

/// Detaches the loop device `device` from its image.
pub fn loop_detach(device: &str) -> io::Result<()> {
    const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
    let loop_device = File::options().read(true).open(device)?;
    // SAFETY: LOOP_CLR_FD takes no argument.
    check(unsafe { libc::ioctl(loop_device.as_raw_fd(), LOOP_CLR_FD) }.into()).map(|_| ())
}

/// Runs `child` in a forked child process and returns what it returned; its error message
/// comes back through a pipe. Only for single-threaded callers (see [`fork`]).
pub fn in_child(child: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let mut fds = [0; 2];
    // SAFETY: a valid array for the two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }.into()).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the descriptors were just created and are owned here alone.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
    };
    let pid = fork(|| match child() {
        Ok(()) => 0,
        Err(message) => {
            let _ = std::io::Write::write_all(&mut &writer, message.as_bytes());
            1
        }
    })
    .map_err(|e| format!("fork: {e}"))?;
    drop(writer);
    // The child's own children may live on with the pipe (a failed exec keeps it open): read
    // what the child wrote once it has ended, without waiting for an end of file. (A message
    // fits in the pipe's buffer.)
    let status = wait(pid).map_err(|e| format!("wait: {e}"))?;
    // SAFETY: fcntl on an open descriptor with an integer argument.
    check(unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) }.into())
        .map_err(|e| format!("fcntl: {e}"))?;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match std::io::Read::read(&mut &reader, &mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(format!("read the child's message: {e}")),
        }
    }
    let message = String::from_utf8_lossy(&bytes).into_owned();
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, _) if !message.is_empty() => Err(message),
        _ => Err(format!("the child ended with status {status:#x}")),
    }
}

/// Forks a child that executes `path` (which is expected to fail) and then waits until it is
/// killed: a process that lingers after a failed exec. Returns its pid.
pub fn linger_after_exec(path: &str) -> io::Result<libc::pid_t> {
    let path = cstring(path)?;
    let argv: [*const libc::c_char; 2] = [path.as_ptr(), std::ptr::null()];
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: the child only calls execve and pause, which are async-signal-safe, on data made
    // before the fork, and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe {
            libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            loop {
                libc::pause();
            }
        }
    }
    check(pid.into()).map(|_| pid)
}

/// Makes the calling process the leader of a new process group.
pub fn new_process_group() -> io::Result<()> {
    // SAFETY: plain integer arguments.
    check(unsafe { libc::setpgid(0, 0) }.into()).map(|_| ())
}

/// Reaps every child that has ended or ends within a few seconds (as PID 1 must, for orphans).
pub fn reap_children() {
    for _ in 0..500 {
        let mut status = 0;
        // SAFETY: a valid out-parameter; WNOHANG never blocks.
        match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
            -1 => return,
            0 => std::thread::sleep(std::time::Duration::from_millis(10)),
            _ => {}
        }
    }
}

/// Creates the btrfs subvolume `name` in directory `parent` (`BTRFS_IOC_SUBVOL_CREATE`), as
/// `btrfs subvolume create` does; any user may, in a directory they can write.
pub fn btrfs_subvolume(parent: &str, name: &str) -> io::Result<()> {
    /// `struct btrfs_ioctl_vol_args`.
    #[repr(C)]
    struct VolArgs {
        fd: i64,
        name: [u8; 4088],
    }
    /// `_IOW(0x94, 14, struct btrfs_ioctl_vol_args)`.
    const BTRFS_IOC_SUBVOL_CREATE: libc::c_ulong = 0x5000_940e;
    let dir = File::open(parent)?;
    let mut args = VolArgs { fd: 0, name: [0; 4088] };
    let bytes = name.as_bytes();
    args.name
        .get_mut(..bytes.len())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENAMETOOLONG))?
        .copy_from_slice(bytes);
    // SAFETY: the ioctl reads a `struct btrfs_ioctl_vol_args` of the size its number encodes.
    check(unsafe { libc::ioctl(dir.as_raw_fd(), BTRFS_IOC_SUBVOL_CREATE, &args) }.into()).map(|_| ())
}

/// Sends `signal` to process `pid`.
pub fn kill(pid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: plain integer arguments.
    check(unsafe { libc::kill(pid, signal) }.into()).map(|_| ())
}

/// Loads a kernel module from `path` with `params` (`finit_module`).
pub fn load_module(path: &Path, params: &str) -> io::Result<()> {
    let file = File::open(path)?;
    let params = cstring(params)?;
    // SAFETY: a valid open fd and a NUL-terminated parameter string; flags 0.
    let ret = unsafe { libc::syscall(libc::SYS_finit_module, file.as_raw_fd(), params.as_ptr(), 0) };
    check(ret).map(|_| ())
}

/// Steps the wall clock (`CLOCK_REALTIME`) by `seconds`, forward or back.
pub fn step_clock(seconds: i64) -> io::Result<()> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the time into a timespec owned here.
    check(i64::from(unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) }))?;
    now.tv_sec = now.tv_sec.saturating_add(seconds);
    // SAFETY: reads a valid timespec.
    check(i64::from(unsafe { libc::clock_settime(libc::CLOCK_REALTIME, &now) })).map(|_| ())
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
/// `forking` is held (shared) from before the fork until the child's exec has ended or failed,
/// when its close-on-exec descriptors are closed: a thread that holds it exclusively knows no
/// child will inherit what it opens meanwhile.
pub fn run_traced(path: &str, args: &[&str], faults: bool, forking: &std::sync::RwLock<()>) -> io::Result<Traced> {
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
    let forked = forking.read().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    let mut forked = Some(forked);
    let status = loop {
        let status = wait(pid)?;
        // Stopped at its exec, or gone: it holds none of this process's descriptors any more.
        if !libc::WIFSTOPPED(status) || libc::WSTOPSIG(status) == libc::SIGTRAP {
            drop(forked.take());
        }
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
        let n = loop {
            // SAFETY: `buf` is valid for writes of its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 {
                break n;
            }
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => return Ok(None),
                // The socket's buffer overflowed while the kernel flushed its backlog (seen
                // when the boot that reads it shares the host with another VM): kauditd keeps
                // what it could not send and sends it again, so read on.
                _ if error.raw_os_error() == Some(libc::ENOBUFS) => continue,
                _ => return Err(error),
            }
        };
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
