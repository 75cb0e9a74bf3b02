// libsystemd's daemon API (Debian libsystemd-dev, linked as -lsystemd) for logcast under
// systemd: sd_notify (READY=1, STATUS=, STOPPING=1, WATCHDOG=1), sd_watchdog_enabled, and
// socket activation (sd_listen_fds_with_names, sd_is_socket_inet, sd_is_socket_unix). The
// library the field uses, rather than a NOTIFY_SOCKET client of our own: it knows abstract
// sockets, WATCHDOG_PID and LISTEN_PID, and unsets the environment as systemd documents.
//
// Why the prototypes are copied here instead of `#include <systemd/sd-daemon.h>`: that
// header includes <sys/socket.h>, which this module would then own as text, so Glibc's
// SOCK_STREAM, AF_UNIX, ... became CSystemd's and vanished from every logcast file that does
// not import CSystemd ("cannot find 'SOCK_STREAM' in scope"). These five are copied from
// systemd 252's sd-daemon.h with compiler-builtin types, so nothing else is included;
// LogcastSystemdTests.testTheCopiedPrototypesAreLibsystemdsOwn compiles this header together
// with the real one, which fails if a prototype drifts.
#ifndef LOGCAST_CSYSTEMD_H
#define LOGCAST_CSYSTEMD_H

#define SD_LISTEN_FDS_START 3

int sd_listen_fds_with_names(int unset_environment, char ***names);
int sd_is_socket_inet(int fd, int family, int type, int listening, __UINT16_TYPE__ port);
int sd_is_socket_unix(int fd, int type, int listening, const char *path, __SIZE_TYPE__ length);
int sd_notify(int unset_environment, const char *state);
int sd_watchdog_enabled(int unset_environment, __UINT64_TYPE__ *usec);

// The journal as a source (Daemon/Input/Journal*.swift), copied from systemd 252's
// sd-journal.h on the same terms (that header includes <inttypes.h>, <sys/types.h> and
// <sys/uio.h>). LogcastJournalTests.testTheCopiedJournalPrototypesAreLibsystemdsOwn
// compiles them together with the real header.
typedef struct sd_journal sd_journal;

// sd-journal.h's flag and sd_journal_process() values under our own names (enumerators
// cannot be declared twice, and the check below includes both headers); the check
// static-asserts that they equal libsystemd's.
#define LOGCAST_SD_JOURNAL_LOCAL_ONLY 1
#define LOGCAST_SD_JOURNAL_NOP 0
#define LOGCAST_SD_JOURNAL_APPEND 1
#define LOGCAST_SD_JOURNAL_INVALIDATE 2

int sd_journal_open(sd_journal **ret, int flags);
int sd_journal_open_directory(sd_journal **ret, const char *path, int flags);
void sd_journal_close(sd_journal *j);
int sd_journal_next(sd_journal *j);
int sd_journal_previous(sd_journal *j);
int sd_journal_set_data_threshold(sd_journal *j, __SIZE_TYPE__ sz);
int sd_journal_get_data(sd_journal *j, const char *field, const void **data, __SIZE_TYPE__ *l);
int sd_journal_add_match(sd_journal *j, const void *data, __SIZE_TYPE__ size);
int sd_journal_add_disjunction(sd_journal *j);
int sd_journal_add_conjunction(sd_journal *j);
int sd_journal_seek_head(sd_journal *j);
int sd_journal_seek_tail(sd_journal *j);
int sd_journal_seek_cursor(sd_journal *j, const char *cursor);
int sd_journal_get_cursor(sd_journal *j, char **cursor);
int sd_journal_test_cursor(sd_journal *j, const char *cursor);
int sd_journal_get_fd(sd_journal *j);
int sd_journal_get_events(sd_journal *j);
int sd_journal_get_timeout(sd_journal *j, __UINT64_TYPE__ *timeout_usec);
int sd_journal_process(sd_journal *j);

#endif
