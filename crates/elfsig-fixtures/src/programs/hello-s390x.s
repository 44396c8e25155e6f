# elfsig test program for s390x (64-bit big-endian): write(1, msg, len); exit(written - len).
# The message is in .rodata and its length in .data.
	.section .rodata
msg:
	.ascii "hello from an elfsig s390x fixture\n"
	.set msglen, . - msg

	.data
	.align 8
len:
	.quad msglen

	.text
	.globl _start
_start:
	lghi %r2, 1
	larl %r3, msg
	larl %r4, len
	lg %r4, 0(%r4)
	svc 4
	sgr %r2, %r4
	svc 1
