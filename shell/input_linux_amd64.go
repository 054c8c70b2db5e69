package shell

import "golang.org/x/sys/unix"

// legacyKind classifies the calls amd64 has besides the generic ones.
func legacyKind(nr int64) callKind {
	switch nr {
	case unix.SYS_SELECT:
		return callSelect
	case unix.SYS_POLL:
		return callPoll
	case unix.SYS_EPOLL_WAIT:
		return callEpoll
	}
	return callOther
}
