/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface between elfsig's C shim and its Rust code (kmod/glue/ mirrors it).
 *
 * The shim does only what Rust on Linux 6.12 cannot: fill struct linux_binfmt, reach into
 * struct linux_binprm, struct inode and struct mm_struct, call static inline helpers, create
 * securityfs files, attach to a tracepoint, declare module parameters, keep a kernel hash
 * table of allocated entries. One file per kernel
 * abstraction; every decision is made in Rust.
 */
#ifndef ELFSIG_SHIM_H
#define ELFSIG_SHIM_H

#include <linux/types.h>

struct file;
struct elfsig_sha256;

/*
 * Which file, whether it changed since, and what the verdict may trust about it: what the
 * verdict cache keys on and what the end of an exec compares. Everything is read from the
 * inode that holds the data (under overlayfs, the real file in a lower or upper layer, not
 * the overlay's); the decisions are Rust's (elfsig-core's filesystem.rs). Shared with Rust
 * (glue/file.rs); both sides check this layout at compile time.
 */
struct elfsig_file_id {
	u64 dev;		/* the real inode's superblock */
	u64 ino;
	u64 generation;
	u32 handle[6];		/* its file handle (exportfs), zero when there is none */
	s64 ctime_ns;
	s64 mtime_ns;
	u64 size;
	u64 version;		/* i_version, 0 when the filesystem keeps none */
	u64 inode;		/* the real inode's address: which object (compared, never followed) */
	u32 facts;		/* ELFSIG_FACT_* */
	u32 seals;		/* F_SEAL_* of a shmem or hugetlbfs file (ELFSIG_FACT_SEALABLE) */
	char fs[16];		/* the real inode's filesystem type, truncated, NUL-padded */
};

#define ELFSIG_FILE_ID_SIZE 112
#define ELFSIG_FILE_ID_FACTS_OFFSET 88

#define ELFSIG_FACT_IVERSION		(1u << 1)	/* the filesystem keeps i_version */
#define ELFSIG_FACT_SETTLED		(1u << 2)	/* changed before the current clock tick */
#define ELFSIG_FACT_HANDLE		(1u << 3)	/* handle[] holds the file handle */
#define ELFSIG_FACT_STACKED		(1u << 4)	/* the data is another inode's (overlayfs) */
#define ELFSIG_FACT_USERNS		(1u << 5)	/* a superblock a user namespace owns */
#define ELFSIG_FACT_UNVERIFIABLE	(1u << 6)	/* FUSE: the kernel cannot see changes */
#define ELFSIG_FACT_INTERNAL		(1u << 7)	/* a kernel-internal mount: memfd, SysV shm */
#define ELFSIG_FACT_SEALABLE		(1u << 8)	/* seals holds the file's seals */
#define ELFSIG_FACT_WRITABLY_MAPPED	(1u << 9)	/* a shared mapping may write it */
#define ELFSIG_FACT_WRITERS		(1u << 10)	/* open for writing (i_writecount > 0) */
#define ELFSIG_FACT_NO_WRITEBACK	(1u << 11)	/* no dirty tracking: long-term DMA pins allowed */
#define ELFSIG_FACT_STALE_OPEN		(1u << 12)	/* overlayfs maps another real file than it reads */
#define ELFSIG_FACT_INITRAMFS		(1u << 13)	/* the initramfs's, unchanged since it loaded the module */

/* ---- Implemented in Rust ------------------------------------------------------------------ */

/* All of these are in glue/callbacks.rs. */
/* binfmt.c: every exec reaches this first. -ENOEXEC passes it on; -EACCES refuses it. */
int elfsig_check_exec(struct file *file, const u8 *head, size_t head_len);
/* exec_end.c: every exec that loaded, before its first instruction; every task that exits. */
void elfsig_exec_loaded(struct file *program);
void elfsig_task_exit(void);
/*
 * guard.c: the mapping guard's kfuncs, about the current task. 0 allows the mapping, -EACCES
 * refuses it. `file` is NULL for anonymous memory.
 */
int elfsig_check_mapping(struct file *file, bool writable);
void elfsig_revocation_added(void);
int elfsig_check_mprotect(struct file *file, bool executable, bool writable);
/* guard.c: the run-time rules (kmod/runtime.rs): 0, or -EACCES (-EPERM for ptrace). */
int elfsig_check_implied_exec(void);
int elfsig_check_userfaultfd(void);
int elfsig_check_ptrace(void);
int elfsig_check_traced_by(uintptr_t parent);
int elfsig_check_proc_mem(void);
/* guard.c: an exec begins (0 or -ENOMEM), can no longer fail; a task forks (0 or -ENOMEM). */
int elfsig_exec_begins(void);
void elfsig_exec_committed(void);
int elfsig_task_alloc(uintptr_t child);
/* guard.c: execveat(AT_EXECVE_CHECK) of `file`: 0 when execve would run it, else an errno. */
int elfsig_check_exec_query(struct file *file);
/* guard.c: `file` is being opened for writing while mapped executable: 0 or -ETXTBSY. */
int elfsig_check_write(struct file *file);
/* guard.c: what the kfuncs of kfuncs.c do. */
struct vm_area_struct;
struct key;
struct qstr;
struct task_struct;
int elfsig_shim_guard_mmap_file(struct file *file, unsigned long prot);
int elfsig_shim_guard_mmap_anonymous(unsigned long prot);
int elfsig_shim_guard_mprotect_exec(struct vm_area_struct *vma, unsigned long prot);
void elfsig_shim_guard_key_added(struct key *key);
struct linux_binprm;
int elfsig_shim_guard_exec_starts(struct linux_binprm *bprm);
void elfsig_shim_guard_exec_committed(void);
int elfsig_shim_guard_task_alloc(struct task_struct *task);
int elfsig_shim_guard_file_open(struct file *file);
void elfsig_shim_guard_file_release(struct file *file);
int elfsig_shim_guard_memory_placed(void);
int elfsig_shim_guard_ptrace(void);
int elfsig_shim_guard_ptrace_traceme(struct task_struct *parent);
int elfsig_shim_guard_anon_inode(const struct qstr *name);
struct bpf_prog;
int elfsig_shim_guard_bpf_prog(const struct bpf_prog *prog);
/* securityfs.c: a control file's contents, and what was written to it. */
ssize_t elfsig_control_read(unsigned int which, char *buf, size_t len);
ssize_t elfsig_control_write(unsigned int which, const char *buf, size_t len);
size_t elfsig_control_write_max(unsigned int which);

/* ---- module.c: parameters, embedded certificates, the module's own lifetime ---------------- */

const char *elfsig_shim_mode_param(size_t *len);
const char *elfsig_shim_untrusted_param(size_t *len);
const char *elfsig_shim_runtime_param(size_t *len);
bool elfsig_shim_lock_param(void);
bool elfsig_shim_deny_loader_param(void);
bool elfsig_shim_require_mmap_guard_param(void);
bool elfsig_shim_trust_initramfs_param(void);
const u8 *elfsig_shim_embedded_certs(size_t *len);
const u8 *elfsig_shim_embedded_policy_certs(size_t *len);
void elfsig_shim_pin_module(void);
u64 elfsig_shim_now_ns(void);

/* ---- file.c: reading files, their identity, logging about them ---------------------------- */

u64 elfsig_shim_file_size(struct file *file);
ssize_t elfsig_shim_file_read(struct file *file, u8 *buf, size_t len, u64 pos);
/* Bytes of a file's page cache, mapped until elfsig_shim_file_unlend() (glue/file.rs: Lent). */
struct folio;
struct elfsig_lent {
	const u8 *data;
	size_t len;
	struct folio *folio;
};
bool elfsig_shim_file_lendable(struct file *file);
int elfsig_shim_file_lend(struct file *file, u64 pos, u64 end, struct elfsig_lent *lent);
void elfsig_shim_file_unlend(struct elfsig_lent *lent);
bool elfsig_shim_file_resident(struct file *file);
bool elfsig_shim_killed(void);
struct inode;
/* Without the file handle, and safe in atomic context (the end of an exec). */
void elfsig_shim_inode_id(const struct inode *inode, struct elfsig_file_id *id);
/* The file's real inode, with its handle. May sleep. */
void elfsig_shim_file_id(struct file *file, struct elfsig_file_id *id);
/* The file a mapping of the file holds (through stacked overlays), the file itself elsewhere. */
struct file *elfsig_shim_mapped_real_file(struct file *file);
bool elfsig_shim_trust_initramfs(void);
bool elfsig_shim_root_is_initial(void);
int elfsig_shim_path_id(const char *path, struct elfsig_file_id *id);
/* Refuses writers to the file's real inode (-ETXTBSY when it has some) until allowed again. */
int elfsig_shim_deny_writes(struct file *file, struct inode **real);
bool elfsig_shim_file_pinned(struct file *file);
void elfsig_shim_allow_writes(struct inode *real);
struct file *elfsig_shim_open_exec(const char *path, int *err);
void elfsig_shim_close_exec(struct file *file);
bool elfsig_shim_file_is_regular(struct file *file);
void elfsig_shim_log_refusal(struct file *file, const char *what, const char *message,
			     bool enforced);
void elfsig_shim_fault_create(void);
/* audit.c: the audit record of a refusal; `digest` is 32 bytes of SHA-256, or NULL. */
void elfsig_shim_audit_refusal(struct file *file, const char *op, const char *cause,
			       const u8 *digest, bool enforced);
/* audit.c: the audit record of a policy loaded, cleared or refused (`cause` says which, or why). */
void elfsig_shim_audit_policy(const char *cause, u64 serial, bool loaded);
/*
 * audit.c: the audit record and the log line of a refusal of what the current process asks.
 * Neither takes a lock: the ptrace hooks hold task_lock or tasklist_lock.
 */
void elfsig_shim_audit_task_refusal(const char *op, const char *cause, bool enforced);
void elfsig_shim_log_task_refusal(const char *what, const char *message, bool enforced);
void elfsig_shim_fault_remove(void);

/* ---- workqueue.c: work done on another CPU while its task waits --------------------------- */

struct elfsig_job;
bool elfsig_shim_job_possible(void);
struct elfsig_job *elfsig_shim_job_start(void (*run)(void *data), void *data);
void elfsig_shim_job_wait(struct elfsig_job *job);
struct task_struct *elfsig_shim_job_client(void);

/* ---- crypto.c: SHA-256 --------------------------------------------------------------------- */

int elfsig_shim_sha256_init(void);
void elfsig_shim_sha256_exit(void);
struct elfsig_sha256 *elfsig_shim_sha256_new(void);
int elfsig_shim_sha256_update(struct elfsig_sha256 *hash, const u8 *data, size_t len);
int elfsig_shim_sha256_final(struct elfsig_sha256 *hash, u8 *digest);
void elfsig_shim_sha256_free(struct elfsig_sha256 *hash);

/* ---- keyring.c: the module's keyrings, made and filled ------------------------------------ */

struct key *elfsig_keyring_new(const char *name);
int elfsig_keyring_add(struct key *keyring, const char *description, const u8 *der, size_t len);

/* ---- keys.c: the module's keyrings of program and policy keys, signatures, revocation ------ */

int elfsig_shim_keyring_init(void);
void elfsig_shim_keyring_exit(void);
int elfsig_shim_add_cert(const u8 *der, size_t len);
int elfsig_shim_policy_keyring_init(void);
int elfsig_shim_policy_add_key(const u8 *der, size_t len);
void elfsig_shim_policy_keyring_exit(void);
/* What a signature check found, besides 0 (verified) and a negative errno (could not check). */
enum elfsig_signature {
	ELFSIG_SIGNATURE_UNKNOWN_KEY = 1,	/* no trusted key matches the signer */
	ELFSIG_SIGNATURE_REJECTED = 2,		/* the signature does not verify, or the key is blacklisted */
	ELFSIG_SIGNATURE_MALFORMED = 3,		/* not a PKCS#7 message, or an algorithm the kernel lacks */
	ELFSIG_SIGNATURE_REVOKED_KEY = 4,	/* verified, by a certificate the policy revokes */
};
struct elfsig_policy;
int elfsig_shim_verify_pkcs7(const u8 *data, size_t len, const u8 *sig, size_t sig_len,
			     const struct elfsig_policy *policy);
int elfsig_shim_policy_verify(const u8 *data, size_t len, const u8 *sig, size_t sig_len);
int elfsig_shim_revocation(const u8 *digest, size_t len);

/* ---- policy.c: the loaded policy ----------------------------------------------------------- */

/* What the `policy` control file shows of a loaded policy. */
struct elfsig_policy_summary {
	u64 serial;
	u8 sha256[32];
	u32 digests;
	u32 revoked_certs;
	u32 trusted_certs;
};
struct elfsig_policy *elfsig_shim_policy_new(const struct elfsig_policy_summary *summary,
					     const u8 *digests, size_t digests_len, int *err);
int elfsig_shim_policy_add_cert(struct elfsig_policy *policy, bool trusted, u32 index,
				const u8 *der, size_t len);
void elfsig_shim_policy_install(struct elfsig_policy *policy);
struct elfsig_policy *elfsig_shim_policy_get(void);
void elfsig_shim_policy_put(struct elfsig_policy *policy);
const struct elfsig_policy_summary *elfsig_shim_policy_summary(const struct elfsig_policy *policy);
const u8 *elfsig_shim_policy_digests(const struct elfsig_policy *policy, size_t *len);
int elfsig_shim_policy_signer_revoked(const struct elfsig_policy *policy, const u8 *data,
				      size_t len, const u8 *sig, size_t sig_len);
int elfsig_shim_policy_verify_trusted(const struct elfsig_policy *policy, const u8 *data,
				      size_t len, const u8 *sig, size_t sig_len);

/* ---- securityfs.c: /sys/kernel/security/elfsig/ ------------------------------------------- */

int elfsig_shim_fs_create_dir(const char *name);
int elfsig_shim_fs_create_file(const char *name, u16 mode, unsigned int which);
void elfsig_shim_fs_remove(void);

/* ---- binfmt.c: the handler at the head of the list ---------------------------------------- */

void elfsig_shim_binfmt_register(void);
void elfsig_shim_binfmt_unregister(void);

/* ---- exec_end.c: after binfmt_elf loaded a program ---------------------------------------- */

int elfsig_shim_exec_end_register(void);
void elfsig_shim_exec_end_unregister(void);
void elfsig_shim_current_exec(uintptr_t *task, u64 *exec_id);
/* What the new image maps: ELFSIG_MAPPED_* bits, -EMLINK or -EAGAIN. */
#define ELFSIG_MAPPED_PROGRAM 1
#define ELFSIG_MAPPED_INTERPRETER 2
int elfsig_shim_mapped_files(struct file *program, struct elfsig_file_id *program_id,
			     struct elfsig_file_id *interpreter_id);
void elfsig_shim_kill_current(void);

/* ---- pending.c: what each exec under way expects to find mapped at its end ---------------- */

struct elfsig_expectation {
	u64 count;		/* the task's exec count once this exec succeeds */
	u32 flags;		/* ELFSIG_EXPECT_* */
	u32 entitlements;	/* what the program is entitled to (elfsig-core's bits) */
	struct elfsig_file_id interpreter;
	struct elfsig_file_id program;
};

#define ELFSIG_EXPECT_INTERPRETER 1	/* `interpreter` is the ELF interpreter checked */
#define ELFSIG_EXPECT_PROGRAM 2		/* `program` is the stacked program's real file checked */
#define ELFSIG_EXPECTATION_SIZE (16 + 2 * ELFSIG_FILE_ID_SIZE)

int elfsig_shim_pending_put(uintptr_t task, const struct elfsig_expectation *expectation);
bool elfsig_shim_pending_take(uintptr_t task, struct elfsig_expectation *expectation);
bool elfsig_shim_pending_peek(uintptr_t task, struct elfsig_expectation *expectation);
void elfsig_shim_pending_forget(uintptr_t task);
void elfsig_shim_pending_clear(void);
u64 elfsig_shim_pending_count(void);

/* ---- records.c: what each process's program is entitled to, one entry per task ---------- */

int elfsig_shim_record_put(uintptr_t task, u32 record);
bool elfsig_shim_record_set(uintptr_t task, u32 record);
bool elfsig_shim_record_get(uintptr_t task, u32 *record);
void elfsig_shim_record_forget(uintptr_t task);
void elfsig_shim_records_clear(void);
u64 elfsig_shim_records_count(void);

/* ---- write_denials.c: writers refused to files mapped executable until their release ------- */

struct inode;
int elfsig_shim_hold_write_denial(const struct file *file, struct inode *real);
void elfsig_shim_file_released(const struct file *file);
void elfsig_shim_write_denials_start(void);
void elfsig_shim_write_denials_stop(void);
u64 elfsig_shim_write_denials_held(void);

/* ---- ftrace_hold.c: ftrace kept on once the module has held the guard --------------------- */

int elfsig_shim_ftrace_hold(void);
void elfsig_shim_ftrace_exit(void);

/* ---- guard.c: the mapping guard's kfuncs and the links of its BPF programs ------------------ */

/* The hooks, where the shim keeps the link of the program on each. */
#define ELFSIG_GUARD_MMAP_FILE 0
#define ELFSIG_GUARD_FILE_MPROTECT 1
#define ELFSIG_GUARD_KEY_POST_CREATE 2
#define ELFSIG_GUARD_BPRM_CREDS_FOR_EXEC 3
#define ELFSIG_GUARD_FILE_OPEN 4
#define ELFSIG_GUARD_FILE_RELEASE 5
#define ELFSIG_GUARD_BPRM_COMMITTED_CREDS 6
#define ELFSIG_GUARD_TASK_ALLOC 7
#define ELFSIG_GUARD_MMAP_ADDR 8
#define ELFSIG_GUARD_PTRACE_ACCESS_CHECK 9
#define ELFSIG_GUARD_PTRACE_TRACEME 10
#define ELFSIG_GUARD_INODE_INIT_SECURITY_ANON 11
#define ELFSIG_GUARD_BPF_PROG 12
#define ELFSIG_GUARD_HOOKS 13

/* Why the kernel cannot run the guard, besides a negative errno. */
enum elfsig_guard_unavailable {
	ELFSIG_GUARD_NO_BPF_LSM = 1,		/* built without CONFIG_BPF_LSM */
	ELFSIG_GUARD_NO_MODULE_BTF = 2,		/* the module has no BTF */
	ELFSIG_GUARD_DISTILLED_BTF = 3,		/* the kernel renumbered it (kfunc_ids.c) */
};
int elfsig_shim_guard_init(void);
int elfsig_shim_guard_attach(const int *fds, unsigned int count);
u64 elfsig_shim_guard_generation(void);
void elfsig_shim_guard_release(void);
void elfsig_shim_guard_exit(void);

/* ---- kfunc_ids.c: whether the kfuncs' BTF IDs are the running kernel's -------------------- */

int elfsig_shim_kfunc_ids_init(void);
bool elfsig_shim_kfunc_ids_match(const struct bpf_prog *prog);

#endif /* ELFSIG_SHIM_H */
