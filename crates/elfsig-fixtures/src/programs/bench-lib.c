/* One of the libs benchmark's libraries: tiny, and made distinct from the others by its soname. */
int elfsig_bench_value(void)
{
	return 7;
}
