// Package proctest builds trees of real processes for tests of process inspection: the
// test binary, re-run as the nodes of a tree of a given shape, with cmd.exe (on Windows) or
// sh (elsewhere) between some levels, so that a test knows every pid, parent and name
// without reading the process table it checks.
//
// A test binary calls [Main] first thing in TestMain (or in a test that the nodes are told
// to run, through Start's args); a test calls [Start], which returns once every process of
// the tree runs, and [Tree.Stop] (also registered as a cleanup), which ends the tree by
// closing the root's standard input: each node then closes its children's, waits for them
// and exits, so every process is waited for by its parent and none is orphaned. Nothing
// sleeps: each step waits on a pipe.
package proctest
