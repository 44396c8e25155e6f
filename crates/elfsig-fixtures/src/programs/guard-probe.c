/*
 * Maps files the ways software does, for the mapping guard's tests; prints what happened and
 * exits 0 when it was allowed, 1 when refused, 2 on a usage or setup error.
 *   guard-probe dlopen PATH...  dlopen(PATH, RTLD_NOW) of each, in order (the libs benchmark
 *                               opens 50)
 *   guard-probe mmap PATH       mmap(PROT_READ|PROT_EXEC) of PATH
 *   guard-probe mprotect PATH   mmap(PROT_READ) of PATH, then mprotect(PROT_READ|PROT_EXEC)
 *   guard-probe anon            anonymous memory mapped writable, then made executable
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
	fputs("usage: guard-probe dlopen PATH..., guard-probe mmap|mprotect PATH, or guard-probe anon\n", stderr);
	return 2;
}
