/*
 * Maps files the ways software does, for the mapping guard's tests; prints what happened and
 * exits 0 when it was allowed, 1 when refused, 2 on a usage or setup error.
 *   guard-probe dlopen PATH...  dlopen(PATH, RTLD_NOW) of each, in order (the libs benchmark
 *                               opens 50)
 *   guard-probe mmap PATH       mmap(PROT_READ|PROT_EXEC) of PATH
 *   guard-probe mprotect PATH   mmap(PROT_READ) of PATH, then mprotect(PROT_READ|PROT_EXEC)
 *   guard-probe anon            anonymous memory mapped writable, then made executable
 *   guard-probe code WAY [LIB]  machine code written at run time and run, in one of the ways
 *                               of code(): prints "WAY: ran" when it ran (exit 0), "WAY:
 *                               refused: ERROR" when the kernel refused it (exit 1)
 *   guard-probe inject WAY      another process's memory (a child's), or its own through /proc,
 *                               reached one of the ways of inject(): "WAY: ran" when the
 *                               kernel allowed it (exit 0), "WAY: refused: ERROR" (exit 1)
 *   guard-probe hello           prints "hello" (a program to run)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/personality.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* x86-64: mov eax, 42; ret */
static const unsigned char CODE[] = { 0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3 };
#define PAGE 4096UL

static void *page_of(const void *p)
{
	return (void *)((uintptr_t)p & ~(PAGE - 1));
}

/* Runs CODE at `at`: 0 when it returned what it should, 3 otherwise. */
static int run_code(const char *way, void *at)
{
	int (*f)(void) = (int (*)(void))at;

	if (f() != 42) {
		printf("%s: ran, and returned something else\n", way);
		return 3;
	}
	printf("%s: ran\n", way);
	return 0;
}

static int refused(const char *way, const char *what)
{
	printf("%s: refused: %s: %s\n", way, what, strerror(errno));
	return 1;
}

/*
 * A way of code() refused: exits at once, since what it changed (a library's text left
 * writable, not executable) may not survive the library's own code running at exit.
 */
static int code_refused(const char *way, const char *what)
{
	refused(way, what);
	fflush(stdout);
	_exit(1);
}

/*
 * Writes CODE into memory and runs it, one way, as a JIT, an exploit or an interpreter's
 * foreign-function library would.
 */
static int code(const char *way, const char *lib)
{
	int anon = MAP_PRIVATE | MAP_ANONYMOUS, shared = MAP_SHARED | MAP_ANONYMOUS;
	unsigned char *p;

	if (!strcmp(way, "anon-wx") || !strcmp(way, "shared-wx")) {
		p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC, way[0] == 'a' ? anon : shared,
			 -1, 0);
		if (p == MAP_FAILED)
			return code_refused(way, "mmap");
		memcpy(p, CODE, sizeof(CODE));
		return run_code(way, p);
	}
	if (!strcmp(way, "anon-w-then-x") || !strcmp(way, "shared-w-then-x")) {
		p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, way[0] == 'a' ? anon : shared, -1, 0);
		if (p == MAP_FAILED)
			return 2;
		memcpy(p, CODE, sizeof(CODE));
		if (mprotect(p, PAGE, PROT_READ | PROT_EXEC))
			return code_refused(way, "mprotect");
		return run_code(way, p);
	}
	if (!strcmp(way, "implied")) {
		/* READ_IMPLIES_EXEC: what is mapped readable is executable too. */
		if (personality(READ_IMPLIES_EXEC) == -1)
			return 2;
		p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, anon, -1, 0);
		if (p == MAP_FAILED)
			return code_refused(way, "mmap");
		memcpy(p, CODE, sizeof(CODE));
		return run_code(way, p);
	}
	if (!strcmp(way, "implied-brk")) {
		/* The heap grown under READ_IMPLIES_EXEC is executable. */
		if (personality(READ_IMPLIES_EXEC) == -1)
			return 2;
		p = sbrk(2 * PAGE);
		if (p == (void *)-1)
			return code_refused(way, "sbrk");
		p = page_of(p + PAGE - 1);
		memcpy(p, CODE, sizeof(CODE));
		return run_code(way, p);
	}
	if (!strcmp(way, "stack")) {
		unsigned char buf[64];

		if (mprotect(page_of(buf), PAGE, PROT_READ | PROT_WRITE | PROT_EXEC))
			return code_refused(way, "mprotect");
		memcpy(buf, CODE, sizeof(CODE));
		return run_code(way, buf);
	}
	if (!strcmp(way, "uffd")) {
		/* Pages filled by a userfaultfd, executable ones too, without anyone writing them. */
		int uffd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
		static unsigned char src[PAGE] __attribute__((aligned(PAGE)));
		struct uffdio_copy copy = { .src = (uintptr_t)src, .len = PAGE };

		if (uffd < 0)
			return code_refused(way, "userfaultfd");
		p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC, anon, -1, 0);
		if (p == MAP_FAILED)
			return code_refused(way, "mmap");
		reg.range.start = (uintptr_t)p;
		reg.range.len = PAGE;
		copy.dst = (uintptr_t)p;
		memcpy(src, CODE, sizeof(CODE));
		if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
		    ioctl(uffd, UFFDIO_COPY, &copy))
			return code_refused(way, "ioctl");
		return run_code(way, p);
	}
	if (lib && (!strcmp(way, "text-wx") || !strcmp(way, "text-w-then-x"))) {
		/* A signed library's own text, made writable and patched. */
		void *handle = dlopen(lib, RTLD_NOW), *hello;

		if (!handle || !(hello = dlsym(handle, "elfsig_guard_hello"))) {
			printf("%s: dlopen: %s\n", way, dlerror());
			return 2;
		}
		p = hello;
		if (!strcmp(way, "text-wx")) {
			if (mprotect(page_of(p), PAGE, PROT_READ | PROT_WRITE | PROT_EXEC))
				return code_refused(way, "mprotect");
			memcpy(p, CODE, sizeof(CODE));
		} else {
			if (mprotect(page_of(p), PAGE, PROT_READ | PROT_WRITE))
				return 2;
			memcpy(p, CODE, sizeof(CODE));
			if (mprotect(page_of(p), PAGE, PROT_READ | PROT_EXEC))
				return code_refused(way, "mprotect");
		}
		return run_code(way, p);
	}
	fprintf(stderr, "guard-probe code: unknown way %s\n", way);
	return 2;
}

static volatile int target = 7;

/* A child that waits to be killed, or (traceme) asks to be traced and says whether it may. */
static pid_t child(int traceme)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (traceme)
			_exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) ? errno : 0);
		for (;;)
			pause();
	}
	return pid;
}

static int reaped(pid_t pid, int result)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return result;
}

/* Reaches a process's memory one way, as a debugger or an injector would. */
static int inject(const char *way)
{
	char path[64];
	pid_t pid;
	int fd, status;

	if (!strcmp(way, "proc-self-mem")) {
		fd = open("/proc/self/mem", O_RDWR);
		if (fd < 0)
			return refused(way, "open");
		close(fd);
		printf("%s: ran\n", way);
		return 0;
	}
	if (!strcmp(way, "traceme")) {
		pid = child(1);
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return 2;
		errno = WEXITSTATUS(status);
		if (errno)
			return refused(way, "ptrace(PTRACE_TRACEME)");
		printf("%s: ran\n", way);
		return 0;
	}
	pid = child(0);
	if (pid < 0)
		return 2;
	if (!strcmp(way, "ptrace")) {
		if (ptrace(PTRACE_ATTACH, pid, NULL, NULL))
			return reaped(pid, refused(way, "ptrace(PTRACE_ATTACH)"));
		waitpid(pid, NULL, 0);
		/* Its code: what an injector writes over. */
		errno = 0;
		ptrace(PTRACE_PEEKTEXT, pid, (void *)inject, NULL);
		if (errno || ptrace(PTRACE_POKEDATA, pid, (void *)&target, (void *)42))
			return reaped(pid, refused(way, "ptrace(PTRACE_POKEDATA)"));
	} else if (!strcmp(way, "vm-writev")) {
		int value = 42;
		struct iovec local = { &value, sizeof(value) }, remote = { (void *)&target, sizeof(value) };

		if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != sizeof(value))
			return reaped(pid, refused(way, "process_vm_writev"));
	} else if (!strcmp(way, "proc-mem")) {
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		fd = open(path, O_RDWR);
		if (fd < 0)
			return reaped(pid, refused(way, "open"));
		close(fd);
	} else {
		fprintf(stderr, "guard-probe inject: unknown way %s\n", way);
		return reaped(pid, 2);
	}
	printf("%s: ran\n", way);
	return reaped(pid, 0);
}

static int map_file(const char *path, int prot, void **addr)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		printf("open: %s\n", strerror(errno));
		return -1;
	}
	*addr = mmap(NULL, 4096, prot, MAP_PRIVATE, fd, 0);
	close(fd);
	return *addr == MAP_FAILED ? errno : 0;
}

int main(int argc, char **argv)
{
	void *addr;
	int err;

	if (argc >= 3 && !strcmp(argv[1], "dlopen")) {
		for (int i = 2; i < argc; i++) {
			if (!dlopen(argv[i], RTLD_NOW)) {
				printf("dlopen: refused: %s\n", dlerror());
				return 1;
			}
		}
		puts("dlopen: ok");
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "mmap")) {
		err = map_file(argv[2], PROT_READ | PROT_EXEC, &addr);
		if (err < 0)
			return 2;
		printf("mmap: %s\n", err ? strerror(err) : "ok");
		return err ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "mprotect")) {
		err = map_file(argv[2], PROT_READ, &addr);
		if (err) {
			printf("mmap: %s\n", err < 0 ? "failed" : strerror(err));
			return 2;
		}
		err = mprotect(addr, 4096, PROT_READ | PROT_EXEC) ? errno : 0;
		printf("mprotect: %s\n", err ? strerror(err) : "ok");
		return err ? 1 : 0;
	}
	if (argc == 2 && !strcmp(argv[1], "anon")) {
		addr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (addr == MAP_FAILED)
			return 2;
		err = mprotect(addr, 4096, PROT_READ | PROT_EXEC) ? errno : 0;
		printf("anon: %s\n", err ? strerror(err) : "ok");
		return err ? 1 : 0;
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "code"))
		return code(argv[2], argc == 4 ? argv[3] : NULL);
	if (argc == 3 && !strcmp(argv[1], "inject"))
		return inject(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "hello")) {
		puts("hello");
		return 0;
	}
	fputs("usage: guard-probe dlopen PATH..., guard-probe mmap|mprotect PATH, guard-probe anon,\n"
	      "guard-probe code WAY [LIB], guard-probe inject WAY, or guard-probe hello\n", stderr);
	return 2;
}
