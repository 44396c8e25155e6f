/* A shared library for the mapping guard's tests: says when it is loaded and when called. */
#include <stdio.h>

/* Something in .data, which the tamper tests change. */
int elfsig_guard_counter = 42;

__attribute__((constructor)) static void loaded(void)
{
	fputs("libelfsig-guard loaded\n", stdout);
	fflush(stdout);
}

void elfsig_guard_hello(void)
{
	printf("hello from libelfsig-guard: counter=%d\n", elfsig_guard_counter);
}
