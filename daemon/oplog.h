/* The operator's log: what quald says about itself goes to stderr, which is
 * the journal under systemd, one line a message, "quald: " first. The one
 * way the daemon's modules write there (jobs and store alike).
 *
 * Where stderr is the journal (systemd's $JOURNAL_STREAM names its device
 * and inode), each line starts with its syslog priority as sd-daemon(3)
 * says, "<4>" and so on, so that `journalctl -p warning` filters; on a
 * terminal or a file the lines are as before. */
#ifndef QUAL_DAEMON_OPLOG_H
#define QUAL_DAEMON_OPLOG_H

#include <syslog.h>

/* Writes "quald: MESSAGE\n" to stderr at priority prio (LOG_ERR,
 * LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG of syslog.h). */
void oplog(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* oplog() at LOG_WARNING: something went wrong that the daemon survives. */
void oplog_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
