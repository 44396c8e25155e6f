# elfsig test program for 32-bit PowerPC (big-endian): write(1, msg, len); exit(written - len).
# The message is in .rodata and its length in .data.
	.section .rodata
msg:
	.ascii "hello from an elfsig powerpc fixture\n"
	.set msglen, . - msg

	.data
	.align 2
len:
	.long msglen

	.text
	.globl _start
_start:
	lis 4, msg@ha
	addi 4, 4, msg@l
	lis 5, len@ha
	lwz 5, len@l(5)
	li 3, 1
	li 0, 4
	sc
	subf 3, 5, 3
	li 0, 1
	sc
