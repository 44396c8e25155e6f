/* Needs libelfsig-guard.so (DT_NEEDED), found through LD_LIBRARY_PATH or its DT_RUNPATH. */
void elfsig_guard_hello(void);

int main(void)
{
	elfsig_guard_hello();
	return 0;
}
