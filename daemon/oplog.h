/* The operator's log: what quald says about itself goes to stderr, which is
 * the journal under systemd, one line a message, "quald: " first. The one
 * way the daemon's modules write there (jobs and store alike). */
#ifndef QUAL_DAEMON_OPLOG_H
#define QUAL_DAEMON_OPLOG_H

/* Writes "quald: MESSAGE\n" to stderr. */
void oplog_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
