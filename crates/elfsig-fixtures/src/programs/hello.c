/* elfsig test program. The greeting is in .rodata, the counter in .data and the buffer in .bss,
 * so the output proves that all three were loaded correctly. */
#include <stdio.h>

static const char greeting[] = "hello from an elfsig C fixture";
int counter = 41;
static char line[128];

int main(void)
{
	counter++;
	snprintf(line, sizeof line, "%s: counter=%d\n", greeting, counter);
	fputs(line, stdout);
	return 0;
}
