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

#endif
