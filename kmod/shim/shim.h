/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface between elfsig's C shim and its Rust code (kmod/glue/ mirrors it).
 *
 * The shim does only what Rust on Linux 6.12 cannot: fill struct linux_binfmt, reach into
 * struct linux_binprm, struct inode and struct mm_struct, call static inline helpers, create
 * securityfs files, attach to a tracepoint, declare module parameters. One file per kernel
 * abstraction; every decision is made in Rust.
 */
#ifndef ELFSIG_SHIM_H
#define ELFSIG_SHIM_H

#include <linux/types.h>

struct file;
struct elfsig_sha256;

/*
 * Which file, and whether it changed since: what the verdict cache keys on and what the exec
 * check compares. Shared with Rust (glue/file.rs); both sides check this layout at compile time.
 */
struct elfsig_file_id {
	u64 dev;
	u64 ino;
	u64 generation;
	s64 ctime_ns;
	s64 mtime_ns;
	u64 size;
	u64 version;
	/*
	 * Whether a later change is sure to alter this identity: the filesystem keeps i_version,
	 * or the change time is older than the current (coarse) clock tick.
	 */
	bool cacheable;
};

#define ELFSIG_FILE_ID_SIZE 64
#define ELFSIG_FILE_ID_CACHEABLE_OFFSET 56

/* ---- Implemented in Rust ------------------------------------------------------------------ */

/* binfmt.c: every exec reaches this first. -ENOEXEC passes it on; -EACCES refuses it. */
int elfsig_check_exec(struct file *file, const u8 *head, size_t head_len);
/* exec_end.c: every exec that loaded, before its first instruction; every task that exits. */
void elfsig_exec_loaded(struct file *program);
void elfsig_task_exit(void);
/* guard.c: the mapping guard's kfuncs. 0 allows the mapping, -EACCES refuses it. */
int elfsig_check_mapping(struct file *file);
void elfsig_revocation_added(void);
int elfsig_check_mprotect(struct file *file);
/* guard.c: what the kfuncs of kfuncs.c do. */
struct vm_area_struct;
struct key;
int elfsig_shim_guard_mmap_file(struct file *file);
int elfsig_shim_guard_file_mprotect(struct vm_area_struct *vma);
void elfsig_shim_guard_key_added(struct key *key);
/* securityfs.c: a control file's contents, and what was written to it. */
ssize_t elfsig_control_read(unsigned int which, char *buf, size_t len);
ssize_t elfsig_control_write(unsigned int which, const char *buf, size_t len);

/* ---- module.c: parameters, embedded certificates, the module's own lifetime ---------------- */

const char *elfsig_shim_mode_param(size_t *len);
bool elfsig_shim_lock_param(void);
bool elfsig_shim_deny_loader_param(void);
bool elfsig_shim_require_mmap_guard_param(void);
const u8 *elfsig_shim_embedded_certs(size_t *len);
void elfsig_shim_pin_module(void);
u64 elfsig_shim_now_ns(void);

/* ---- file.c: reading files, their identity, logging about them ---------------------------- */

u64 elfsig_shim_file_size(struct file *file);
ssize_t elfsig_shim_file_read(struct file *file, u8 *buf, size_t len, u64 pos);
struct inode;
void elfsig_shim_inode_id(const struct inode *inode, struct elfsig_file_id *id);
void elfsig_shim_file_id(struct file *file, struct elfsig_file_id *id);
int elfsig_shim_path_id(const char *path, struct elfsig_file_id *id);
struct file *elfsig_shim_open_exec(const char *path, int *err);
void elfsig_shim_close_exec(struct file *file);
bool elfsig_shim_file_is_regular(struct file *file);
void elfsig_shim_log_refusal(struct file *file, const char *what, const char *message,
			     bool enforced);
void elfsig_shim_fault_create(void);
/* audit.c: the audit record of a refusal; `digest` is 32 bytes of SHA-256, or NULL. */
void elfsig_shim_audit_refusal(struct file *file, const char *op, const char *cause,
			       const u8 *digest, bool enforced);
void elfsig_shim_fault_remove(void);

/* ---- crypto.c: SHA-256 --------------------------------------------------------------------- */

int elfsig_shim_sha256_init(void);
void elfsig_shim_sha256_exit(void);
struct elfsig_sha256 *elfsig_shim_sha256_new(void);
int elfsig_shim_sha256_update(struct elfsig_sha256 *hash, const u8 *data, size_t len);
int elfsig_shim_sha256_final(struct elfsig_sha256 *hash, u8 *digest);
void elfsig_shim_sha256_free(struct elfsig_sha256 *hash);

/* ---- keys.c: the trusted keyrings, the module's own, revocation ---------------------------- */

int elfsig_shim_keyring_init(void);
void elfsig_shim_keyring_exit(void);
int elfsig_shim_add_cert(const u8 *der, size_t len);
/* What a signature check found, besides 0 (verified) and a negative errno (could not check). */
enum elfsig_signature {
	ELFSIG_SIGNATURE_UNKNOWN_KEY = 1,	/* no trusted key matches the signer */
	ELFSIG_SIGNATURE_REJECTED = 2,		/* the signature does not verify, or the key is blacklisted */
	ELFSIG_SIGNATURE_MALFORMED = 3,		/* not a PKCS#7 message, or an algorithm the kernel lacks */
};
int elfsig_shim_verify_pkcs7(const u8 *data, size_t len, const u8 *sig, size_t sig_len);
int elfsig_shim_revocation(const u8 *digest, size_t len);

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
int elfsig_shim_mapped_interpreter(struct file *program, struct elfsig_file_id *id);
void elfsig_shim_kill_current(void);

/* ---- guard.c: the mapping guard's kfuncs and the links of its BPF programs ------------------ */

/* The hooks, where the shim keeps the link of the program on each. */
#define ELFSIG_GUARD_MMAP_FILE 0
#define ELFSIG_GUARD_FILE_MPROTECT 1
#define ELFSIG_GUARD_KEY_POST_CREATE 2
#define ELFSIG_GUARD_HOOKS 3

/* Why the kernel cannot run the guard, besides a negative errno. */
enum elfsig_guard_unavailable {
	ELFSIG_GUARD_NO_BPF_LSM = 1,		/* built without CONFIG_BPF_LSM */
	ELFSIG_GUARD_NO_MODULE_BTF = 2,		/* the module has no BTF */
};
int elfsig_shim_guard_init(void);
int elfsig_shim_guard_attach(const int *fds, unsigned int count);
u64 elfsig_shim_guard_generation(void);
void elfsig_shim_guard_release(void);

#endif /* ELFSIG_SHIM_H */
