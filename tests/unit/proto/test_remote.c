/* proto/remote.c: a status line read back as written, null for Slurm's
 * "None" and no node; free text told apart from a status line; a status
 * line that is not one refused with what is wrong; Slurm's states in their
 * phases; the spool's paths checked; the node's exit file both ways; a
 * node's GPU's key (calibration per node and GPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/remote.h"
#include "tests/unit/test_main.h"

static void test_status_round_trip(void **state)
{
	struct remote_status st, back;
	struct qual_msg m;
	char line[1024];
	int n;

	(void)state;
	remote_status_set(&st, "slurm", "123", "PENDING", "Resources", "(null)");
	n = remote_status_format(&st, line, sizeof line);
	assert_true(n > 0);
	assert_string_equal(line, "qual-remote: {\"backend\":\"slurm\",\"id\":\"123\","
			    "\"state\":\"PENDING\",\"reason\":\"Resources\",\"node\":null}\n");
	assert_int_equal(remote_status_parse(line, (size_t)n, &back, &m), 1);
	assert_true(remote_status_equal(&st, &back));
	assert_string_equal(back.node, "");
	/* "None" is null; quotes and backslashes survive; no newline needed. */
	remote_status_set(&st, "slurm", "7", "RUNNING", "None", "node\"1\\");
	n = remote_status_format(&st, line, sizeof line);
	assert_non_null(strstr(line, "\"reason\":null"));
	assert_int_equal(remote_status_parse(line, (size_t)n - 1, &back, &m), 1);
	assert_string_equal(back.node, "node\"1\\");
	assert_string_equal(back.reason, "");
	assert_false(remote_status_equal(&st, &(struct remote_status){ 0 }));
	/* Too small a buffer. */
	assert_int_equal(remote_status_format(&st, line, 20), QUAL_ELIMIT);
	/* Long values are cut, not overrun. */
	{
		char big[1000];

		memset(big, 'r', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		remote_status_set(&st, "slurm", "1", "PENDING", big, NULL);
		assert_int_equal(strlen(st.reason), REMOTE_FIELD_MAX - 1);
	}
	/* Slurm's bytes that are not printable ASCII cannot break the JSON. */
	remote_status_set(&st, "slurm", "1", "PENDING", "a\xff\tb", "n\xc3\xa9");
	assert_string_equal(st.reason, "a??b");
	assert_string_equal(st.node, "n??");
	assert_true(remote_status_format(&st, line, sizeof line) > 0);
	/* A value read back is cut on a UTF-8 boundary, so it can be written
	 * again whole. */
	{
		char text[REMOTE_FIELD_MAX * 2 + 200], *p;
		size_t i;

		p = text + sprintf(text, "qual-remote: {\"backend\":\"slurm\",\"id\":\"1\","
				   "\"state\":\"RUNNING\",\"reason\":null,\"node\":\"xy");
		for (i = 0; i < REMOTE_FIELD_MAX / 2; i++)
			p += sprintf(p, "\xc3\xa9");
		strcpy(p, "\"}");
		assert_int_equal(remote_status_parse(text, strlen(text), &back, &m), 1);
		assert_int_equal(strlen(back.node), REMOTE_FIELD_MAX - 2);
		assert_true(remote_status_format(&back, line, sizeof line) > 0);
		assert_non_null(strstr(line, "\"node\":\"xy"));
	}
}

static void test_status_refused(void **state)
{
	static const char *const bad[] = {
		"qual-remote: not json\n",
		"qual-remote: [1]\n",
		"qual-remote: {\"backend\":\"slurm\",\"id\":\"1\",\"reason\":null,\"node\":null}\n",
		"qual-remote: {\"backend\":\"slurm\",\"id\":1,\"state\":\"RUNNING\",\"reason\":null,"
		"\"node\":null}\n",
		"qual-remote: {\"backend\":\"slurm\",\"id\":\"1\",\"state\":\"\",\"reason\":null,"
		"\"node\":null}\n",
		"qual-remote: {\"backend\":\"slurm\",\"id\":\"1\",\"state\":\"RUNNING\",\"reason\":3,"
		"\"node\":null}\n",
	};
	static const char *const why[] = {
		"not a JSON object", "not a JSON object", "'state' is missing",
		"'id' is not a string", "'state' is empty", "'reason' is not a string",
	};
	struct remote_status st;
	struct qual_msg m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(remote_status_parse(bad[i], strlen(bad[i]), &st, &m), QUAL_EINVAL);
		assert_non_null(strstr(m.text, why[i]));
	}
	/* Free text, and the prefix not at the start, are not status lines. */
	assert_int_equal(remote_status_parse("sbatch: error\n", 14, &st, &m), 0);
	assert_int_equal(remote_status_parse(" qual-remote: {}", 16, &st, &m), 0);
	assert_int_equal(remote_status_parse("qual-remote", 11, &st, &m), 0);
}

static void test_phase(void **state)
{
	(void)state;
	assert_int_equal(remote_state_phase("PENDING"), REMOTE_PHASE_QUEUED);
	assert_int_equal(remote_state_phase("REQUEUED"), REMOTE_PHASE_QUEUED);
	assert_int_equal(remote_state_phase("RUNNING"), REMOTE_PHASE_RUNNING);
	assert_int_equal(remote_state_phase("COMPLETING"), REMOTE_PHASE_RUNNING);
	assert_int_equal(remote_state_phase("SOMETHING_NEW"), REMOTE_PHASE_RUNNING);
	assert_int_equal(remote_state_phase("NODE_FAIL"), REMOTE_PHASE_ENDED);
	assert_int_equal(remote_state_phase("CANCELLED"), REMOTE_PHASE_ENDED);
	assert_int_equal(remote_state_phase("COMPLETED"), REMOTE_PHASE_ENDED);
	assert_true(remote_state_fault("NODE_FAIL"));
	assert_true(remote_state_fault("CANCELLED"));
	assert_true(remote_state_fault("TIMEOUT"));
	assert_false(remote_state_fault("COMPLETED"));
	assert_false(remote_state_fault("FAILED"));
	assert_false(remote_state_fault("RUNNING"));
}

static void test_paths(void **state)
{
	char p[256], dir[] = "/tmp/test_remote_XXXXXX", path[512];
	struct qual_msg m;
	long id;
	FILE *f;

	(void)state;
	assert_int_equal(remote_job_path(p, sizeof p, "/s", "j000001", NULL, &m), 0);
	assert_string_equal(p, "/s/jobs/j000001");
	assert_int_equal(remote_job_path(p, sizeof p, "/s", "j000001", REMOTE_FILE_SLURM_ID, &m),
			 0);
	assert_string_equal(p, "/s/jobs/j000001/slurm_id");
	assert_int_equal(remote_job_path(p, sizeof p, "s", "j000001", NULL, &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "absolute"));
	assert_int_equal(remote_job_path(p, sizeof p, "/s", "../x", NULL, &m), QUAL_EINVAL);
	assert_non_null(strstr(m.text, "'../x' is not a job id"));
	assert_int_equal(remote_job_path(p, 10, "/s", "j000001", NULL, &m), QUAL_EINVAL);
	assert_int_equal(remote_blob_path(p, sizeof p, "/s", "0123456789abcdef0123456789abcdef"
					  "0123456789abcdef0123456789abcdef", &m), 0);
	assert_string_equal(p, "/s/blobs/0123456789abcdef0123456789abcdef0123456789abcdef"
			    "0123456789abcdef");
	assert_int_equal(remote_blob_path(p, sizeof p, "/s", "../../etc/passwd", &m), QUAL_EINVAL);
	assert_int_equal(remote_blob_path(p, sizeof p, "/s", "0123456789ABCDEF0123456789abcdef"
					  "0123456789abcdef0123456789abcdef", &m), QUAL_EINVAL);
	/* The Slurm id quald's recovery reads. */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(remote_slurm_id_read(dir, "j000002", &id, &m), QUAL_ENOENT);
	snprintf(path, sizeof path, "mkdir -p %s/jobs/j000002", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof path, "%s/jobs/j000002/slurm_id", dir);
	f = fopen(path, "w");
	fputs("4711\n", f);
	fclose(f);
	assert_int_equal(remote_slurm_id_read(dir, "j000002", &id, &m), 0);
	assert_int_equal(id, 4711);
	f = fopen(path, "w");
	fputs("x\n", f);
	fclose(f);
	assert_int_equal(remote_slurm_id_read(dir, "j000002", &id, &m), QUAL_EINVAL);
	snprintf(path, sizeof path, "rm -r %s", dir);
	assert_int_equal(system(path), 0);
}

static void test_exit_file(void **state)
{
	struct remote_exit e = { .end = REMOTE_END_STATUS, .value = 2 }, back;
	struct qual_msg m;
	char buf[600];
	int n;

	(void)state;
	n = remote_exit_format(&e, buf, sizeof buf);
	assert_string_equal(buf, "2\n");
	assert_int_equal(remote_exit_parse(buf, (size_t)n, &back, &m), 0);
	assert_int_equal(remote_exit_status(&back), 2);
	e = (struct remote_exit){ .end = REMOTE_END_SIGNAL, .value = 9 };
	n = remote_exit_format(&e, buf, sizeof buf);
	assert_string_equal(buf, "signal 9\n");
	assert_int_equal(remote_exit_parse(buf, (size_t)n, &back, &m), 0);
	assert_int_equal(remote_exit_status(&back), 137);
	e = (struct remote_exit){ .end = REMOTE_END_REFUSED };
	strcpy(e.message, "pin check failed: 'x'");
	n = remote_exit_format(&e, buf, sizeof buf);
	assert_int_equal(remote_exit_parse(buf, (size_t)n, &back, &m), 0);
	assert_int_equal(back.end, REMOTE_END_REFUSED);
	assert_string_equal(back.message, "pin check failed: 'x'");
	assert_int_equal(remote_exit_status(&back), REMOTE_EXIT_REFUSED);
	assert_int_equal(remote_exit_parse("256\n", 4, &back, &m), QUAL_EINVAL);
	assert_int_equal(remote_exit_parse("signal 0", 8, &back, &m), QUAL_EINVAL);
	assert_int_equal(remote_exit_parse("", 0, &back, &m), QUAL_EINVAL);
	assert_int_equal(remote_exit_parse("1\n2\n", 4, &back, &m), QUAL_EINVAL);
}

/* A node's GPU's key: node-gpuN from the first of SLURM_JOB_GPUS, -nogpu
 * without one, the node's name made safe for a file name; a key is one of
 * a node's only in that form: another node's, a path or a bare name is
 * not (quald stores a record under its key's name). */
static void test_device_key(void **state)
{
	struct qual_msg m;
	char key[64];

	(void)state;
	assert_int_equal(remote_device_key("gpu7", "3,5", key, sizeof key, &m), 0);
	assert_string_equal(key, "gpu7-gpu3");
	assert_int_equal(remote_device_key("gpu7", "", key, sizeof key, &m), 0);
	assert_string_equal(key, "gpu7-nogpu");
	assert_int_equal(remote_device_key("gpu7", NULL, key, sizeof key, &m), 0);
	assert_string_equal(key, "gpu7-nogpu");
	assert_int_equal(remote_device_key("../a/b c", "0", key, sizeof key, &m), 0);
	assert_string_equal(key, ".._a_b_c-gpu0");
	assert_int_equal(remote_device_key("", "0", key, sizeof key, &m), QUAL_EINVAL);
	assert_int_equal(remote_device_key("n", "0", key, 4, &m), QUAL_EINVAL);

	assert_true(remote_device_key_of("gpu7-gpu3", "gpu7"));
	assert_true(remote_device_key_of("gpu7-nogpu", "gpu7"));
	assert_true(remote_device_key_of(".._a_b_c-gpu0", "../a/b c"));
	assert_false(remote_device_key_of("gpu7-gpu3", "gpu8"));
	assert_false(remote_device_key_of("gpu7-gpu", "gpu7"));
	assert_false(remote_device_key_of("gpu7-gpu3/../../x", "gpu7"));
	assert_false(remote_device_key_of("gpu7-gpux", "gpu7"));
	assert_false(remote_device_key_of("gpu7", "gpu7"));
	assert_false(remote_device_key_of("gpu77-gpu1", "gpu7"));
	assert_false(remote_device_key_of(NULL, "gpu7"));
	assert_false(remote_device_key_of("gpu7-gpu1", NULL));
}

QUAL_TESTS(
	cmocka_unit_test(test_device_key),
	cmocka_unit_test(test_status_round_trip),
	cmocka_unit_test(test_status_refused),
	cmocka_unit_test(test_phase),
	cmocka_unit_test(test_paths),
	cmocka_unit_test(test_exit_file),
)
