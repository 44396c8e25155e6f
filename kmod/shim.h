/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface between elfsig's C shim and its Rust code.
 *
 * The shim does only what Rust on Linux 6.12 cannot: fill a struct linux_binfmt, reach into
 * struct linux_binprm and struct inode, call static inline helpers, create securityfs files,
 * declare module parameters. Every decision is made in Rust; ffi.rs mirrors these declarations.
 */
#ifndef ELFSIG_SHIM_H
#define ELFSIG_SHIM_H

#include <linux/types.h>

struct file;
struct elfsig_sha256;

/* Which file was executed, and whether it changed since: what the verdict cache keys on. */
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

/* Control files, in /sys/kernel/security/elfsig/. */
enum elfsig_control {
	ELFSIG_CONTROL_MODE = 0,
	ELFSIG_CONTROL_LOCK = 1,
	ELFSIG_CONTROL_STATS = 2,
	ELFSIG_CONTROL_FLUSH = 3,
};

/* Implemented in Rust. */
int elfsig_check_exec(struct file *file, const u8 *head, size_t head_len);
ssize_t elfsig_control_read(unsigned int which, char *buf, size_t len);
ssize_t elfsig_control_write(unsigned int which, const char *buf, size_t len);

/* Implemented in shim.c. */
int elfsig_shim_init(void);
int elfsig_shim_register(void);
void elfsig_shim_unregister(void);
void elfsig_shim_exit(void);
const char *elfsig_shim_mode_param(size_t *len);
bool elfsig_shim_lock_param(void);
bool elfsig_shim_deny_loader_param(void);
const u8 *elfsig_shim_embedded_certs(size_t *len);
int elfsig_shim_add_cert(const u8 *der, size_t len);

u64 elfsig_shim_file_size(struct file *file);
ssize_t elfsig_shim_file_read(struct file *file, u8 *buf, size_t len, u64 pos);
void elfsig_shim_file_id(struct file *file, struct elfsig_file_id *id);
int elfsig_shim_path_id(const char *path, struct elfsig_file_id *id);
struct file *elfsig_shim_open_exec(const char *path, int *err);
void elfsig_shim_close_exec(struct file *file);

struct elfsig_sha256 *elfsig_shim_sha256_new(void);
int elfsig_shim_sha256_update(struct elfsig_sha256 *hash, const u8 *data, size_t len);
int elfsig_shim_sha256_final(struct elfsig_sha256 *hash, u8 *digest);
void elfsig_shim_sha256_free(struct elfsig_sha256 *hash);

int elfsig_shim_verify_pkcs7(const u8 *data, size_t len, const u8 *sig, size_t sig_len);
int elfsig_shim_revocation(const u8 *digest, size_t len);

void elfsig_shim_log_refusal(struct file *file, const char *message, bool enforced);
u64 elfsig_shim_now_ns(void);
bool elfsig_shim_pin_module(void);

#endif /* ELFSIG_SHIM_H */
