/* The sibling library shim_sibling needs (see shim_sibling.c). */
int shim_sibling_dep_marker(void);

int shim_sibling_dep_marker(void)
{
	return 42;
}
