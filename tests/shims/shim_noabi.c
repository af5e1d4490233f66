/* shim_noabi: a shared object with no compiler entry points at all. */
int shim_noabi_answer(void);

int shim_noabi_answer(void)
{
	return 42;
}
