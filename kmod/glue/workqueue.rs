// SPDX-License-Identifier: GPL-2.0

//! Work done on another CPU while the task that started it goes on (`shim/workqueue.c`): a job
//! moves to a worker whole, and comes back only once the worker is done with it. The worker
//! calls [`run`], which C is handed a pointer to with each job: the one function C calls that is
//! not in `callbacks`, since it calls nothing up, only the job's own `run`.

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::prelude::*;

/// What a worker does. A job owns what it works on (`'static`): it may outlive whatever
/// borrowed data its owner has, were a [`Running`] ever leaked.
pub(crate) trait Job: Send + 'static {
    /// Runs on the worker, the job's owner waiting or busy with something else.
    fn run(&mut self);
}

/// `struct elfsig_job`, opaque.
#[repr(C)]
struct RawJob {
    _opaque: [u8; 0],
}

extern "C" {
    fn elfsig_shim_job_possible() -> bool;
    fn elfsig_shim_job_start(
        run: unsafe extern "C" fn(data: *mut c_void),
        data: *mut c_void,
    ) -> *mut RawJob;
    fn elfsig_shim_job_wait(job: *mut RawJob);
}

/// Whether a job can run beside the current task: more than one CPU is online, and the task is
/// not a worker running a job itself (whose verification does its parts in turn).
pub(crate) fn possible() -> bool {
    // SAFETY: reads the number of online CPUs.
    unsafe { elfsig_shim_job_possible() }
}

/// A job a worker has, handed back by [`Running::wait`]; dropping it waits for it too. Waiting
/// for a job no worker has taken yet runs it in the waiting task.
///
/// # Invariants
///
/// `raw` is a job the shim started, not waited for yet, running `T::run` on `data`; `data`
/// came from `KBox::into_raw` and nothing else touches it until the job is waited for.
pub(crate) struct Running<T: Job> {
    raw: NonNull<RawJob>,
    data: NonNull<T>,
}

/// Runs a job on the worker the shim hands it to.
///
/// # Safety
///
/// `data` must be the `T` that [`start`] gave the shim, which nothing else touches until the job
/// is waited for.
unsafe extern "C" fn run<T: Job>(data: *mut c_void) {
    // SAFETY: the caller guarantees `data` is a `T` that is the worker's alone meanwhile.
    if let Some(job) = unsafe { data.cast::<T>().as_mut() } {
        job.run();
    }
}

/// Starts `job` on a worker; gives it back, not run, when the shim has no memory to start it.
pub(crate) fn start<T: Job>(job: KBox<T>) -> Result<Running<T>, KBox<T>> {
    let data = KBox::into_raw(job);
    // SAFETY: `data` is valid and, until the job is waited for, the worker's alone; `run::<T>`
    // takes it as a `T`.
    let raw = unsafe { elfsig_shim_job_start(run::<T>, data.cast()) };
    match (NonNull::new(raw), NonNull::new(data)) {
        // INVARIANT: started, on `data`, which only the worker touches from now on.
        (Some(raw), Some(data)) => Ok(Running { raw, data }),
        // SAFETY: not started: `data` is still the one `into_raw` gave, taken back once.
        _ => Err(unsafe { KBox::from_raw(data) }),
    }
}

impl<T: Job> Running<T> {
    /// Waits until the worker is done, and gives the job back.
    pub(crate) fn wait(self) -> KBox<T> {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: by the type invariant the job was started and not waited for; it is waited
        // for once, here, as `drop` will not run.
        unsafe { elfsig_shim_job_wait(this.raw.as_ptr()) };
        // SAFETY: the worker is done with `data`, which came from `KBox::into_raw`; taken
        // back once.
        unsafe { KBox::from_raw(this.data.as_ptr()) }
    }
}

impl<T: Job> Drop for Running<T> {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the job was started and not waited for; waited for once.
        unsafe { elfsig_shim_job_wait(self.raw.as_ptr()) };
        // SAFETY: the worker is done with `data`, which came from `KBox::into_raw`; freed once.
        drop(unsafe { KBox::from_raw(self.data.as_ptr()) });
    }
}
