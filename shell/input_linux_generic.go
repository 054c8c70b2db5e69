//go:build linux && !amd64

package shell

// legacyKind: the other Linux architectures have only the generic calls (pselect6, ppoll,
// epoll_pwait), which syscallKind knows. (386 and arm have old select and poll calls too; a
// program blocked in one of them is not recognised, and its Step waits for the yield.)
func legacyKind(int64) callKind { return callOther }
